"""ReturnnCommonSerializer: the serialized net (:mod:`.serialization`) with its Sisyphus hash (:mod:`.hashing`). Here,
not in either, so that hashing reads what serialization holds and serialization knows nothing of hashing."""

from __future__ import annotations

from .hashing.walks import dims_in
from .hashing.sis_hash import serializer_sis_hash
from .serialization.errors import SerializationError
from .serialization.serialized_net import SerializedNet


class ReturnnCommonSerializer(SerializedNet):
    """What a config holds: the net and extern_data with dims as code references (see :class:`SerializedNet` for
    construction, editing and sharing), hashed by content as docs/guide/hash-schemes.md says."""

    def _sis_hash(self) -> bytes:
        if self.hash_value is not None:
            return serializer_sis_hash(self)
        return self._once(("sis_hash", frozenset(self.unhashed), self.hash_scheme), lambda: serializer_sis_hash(self))

    def __repr__(self) -> str:
        """One line (Sisyphus's DelayedBase would print the whole code, hundreds of KB in ``sis console``): the parts
        with their entry counts, the dims, and the hash."""
        sections = self.sections()
        parts = [f"{name} ({len(value)} entries)" for name, value in sections]
        dims = sum(1 for dim in dims_in(value for _, value in sections) if dim.global_name is None)
        try:
            digest = self._sis_hash().decode().rstrip(")").rpartition(" ")[2][:12]
        except SerializationError as e:  # e.g. in the message of that very error
            digest = f"not hashable: {e.problem[:60]}"
        return f"<{type(self).__name__} {', '.join(parts) or 'empty'}; {dims} dims; hash {digest}>"

    __str__ = __repr__

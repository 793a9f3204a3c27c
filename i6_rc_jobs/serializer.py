"""ReturnnCommonSerializer: the serialized net (:mod:`.serialization`) with its Sisyphus hash (:mod:`.hashing`). Here,
not in either, so that hashing reads what serialization holds and serialization knows nothing of hashing."""

from __future__ import annotations

from .hashing.sis_hash import serializer_sis_hash
from .serialization.serialized_net import SerializedNet


class ReturnnCommonSerializer(SerializedNet):
    """What a config holds: the net and extern_data with dims as code references (see :class:`SerializedNet` for
    construction, editing and sharing), hashed by content as the README's "Hashes" says."""

    def _sis_hash(self) -> bytes:
        if self.hash_value is not None:
            return serializer_sis_hash(self)
        return self._once(("sis_hash", frozenset(self.unhashed)), lambda: serializer_sis_hash(self))

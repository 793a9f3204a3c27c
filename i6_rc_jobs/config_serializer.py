"""ReturnnConfigSerializer: any RETURNN config's values (:mod:`.serialization.config_values`) with their Sisyphus hash
(:mod:`.hashing`), the counterpart of :class:`.serializer.ReturnnCommonSerializer` for PyTorch and RETURNN-frontend
configs."""

from __future__ import annotations

from typing import Any

from .hashing.sis_hash import serializer_sis_hash
from .serialization.config_values import SerializedConfig
from .serialization.i6_core_objects import config_values_of

#: What its hash says it is (a subclass hashes alike).
LABEL = "ReturnnConfigSerializer"


class ReturnnConfigSerializer(SerializedConfig):
    """What a config holds in its ``python_prolog``: config values with dims as code references (see
    :class:`SerializedConfig`), hashed by content: dims by index of first occurrence, kind, size and identity
    (``same_as``, derivation), never by description or variable name; functions and classes by module and qualified
    name; a value with a ``_sis_hash`` method by it."""

    def _sis_hash(self) -> bytes:
        if self.hash_value is not None:
            return serializer_sis_hash(self, LABEL)
        return self._once(("sis_hash", frozenset(self.unhashed)), lambda: serializer_sis_hash(self, LABEL))

    @classmethod
    def from_i6_core(cls, returnn_config: Any, **options: Any) -> Any:
        """An i6_core ``ReturnnConfig`` (a ``ReturnnConfigV2`` among them) made anew with its config values in a
        serializer: returns a :class:`CheckedReturnnConfig` whose ``python_prolog`` holds the serializer (after the
        rest of the prolog; the values that its i6_core ``Import`` and ``PartialImport`` objects bind go into the
        serializer), whose config keeps the values of plain types (``backend``, which i6_core's jobs read, numbers,
        strings) and whose ``post_config`` stays as it was. ``options``: as for the constructor (``sys_path``)."""
        from .serialization.config_file import CheckedReturnnConfig

        plain, values, prolog, epilog = config_values_of(returnn_config)
        return CheckedReturnnConfig(
            plain,
            post_config=dict(returnn_config.post_config),
            python_prolog=[*prolog, cls(values, **options)],
            python_epilog=epilog,
            hash_full_python_code=False,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {', '.join(key for key, _ in self.sections()) or 'empty'}>"

    __str__ = __repr__

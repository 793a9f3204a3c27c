"""The public serializers: what a config holds (:mod:`i6_rc_jobs._serialization`) joined with its Sisyphus hash
(:mod:`i6_rc_jobs._hashing`). Here, above both, so that hashing reads what serialization holds and serialization
knows nothing of hashing. :class:`ReturnnCommonSerializer` holds a returnn_common net dict,
:class:`ReturnnConfigSerializer` any RETURNN config's values (PyTorch and RETURNN-frontend configs)."""

from __future__ import annotations

from typing import Any

from i6_rc_jobs._hashing.sis_hash import serializer_sis_hash
from i6_rc_jobs._hashing.walks import dims_in
from i6_rc_jobs._serialization.config_values import SerializedConfig
from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._serialization.job_config import JOB_CONFIG, job_config, options_text
from i6_rc_jobs._serialization.pycode import CodeWriter
from i6_rc_jobs._serialization.i6_core_objects import CodeReference, config_values_of
from i6_rc_jobs._serialization.serialized_net import SerializedNet
from i6_rc_jobs.jobs.config_file import CheckedReturnnConfig

#: What a ReturnnConfigSerializer's hash says it is (a subclass hashes alike).
LABEL = "ReturnnConfigSerializer"


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


class ReturnnConfigSerializer(SerializedConfig):
    """What a config holds in its ``python_prolog``: config values with dims as code references (see
    :class:`SerializedConfig`), hashed by content: dims by index of first occurrence, kind, size and identity
    (``same_as``, derivation), never by description or variable name; functions and classes by module and qualified
    name; a value with a ``_sis_hash`` method by it."""

    def _sis_hash(self) -> bytes:
        """Its values' hash; ``by_content`` values among them hash by their code as built with the config's options
        (those of the config around it too), which their construction may read."""
        around = JOB_CONFIG.get()
        with job_config(self.sections()):
            if self.hash_value is not None:
                return serializer_sis_hash(self, LABEL)
            key = ("sis_hash", frozenset(self.unhashed), None if around is None else options_text(*around))
            return self._once(key, lambda: serializer_sis_hash(self, LABEL))

    def _render(self, resolve_delayed: bool = True) -> tuple[CodeWriter, list[str], list[str]]:
        with job_config(self.sections()):  # (the pinned code of its by_content values is that of this config)
            return super()._render(resolve_delayed)

    @classmethod
    def from_i6_core(cls, returnn_config: Any, *, code: CodeReference = None, **options: Any) -> Any:
        """An i6_core ``ReturnnConfig`` (a ``ReturnnConfigV2`` among them) made anew with its config values in a
        serializer: returns a :class:`CheckedReturnnConfig` whose ``python_prolog`` holds the serializer (after the
        rest of the prolog), whose config keeps the values of plain types (``backend``, which i6_core's jobs read,
        numbers, strings) and whose ``post_config`` stays as it was. The serialization objects of its prolog and
        epilog (i6_core's and i6_experiments': ``Collection``, ``Import``, ``PartialImport``, ``CodeFromFunction``,
        ``ExternalImport``, ``ExplicitHash``, ``NonhashedCode``) are converted: the references they bind go into the
        serializer, by name, or by what ``code`` makes of ``("module:qualname", **arguments)`` (``code=by_content``:
        by the code they run); ``ExternalImport`` paths and a torch ``Collection``'s recipe root into ``sys_path``;
        ``ExplicitHash`` stays a hash input, ``NonhashedCode`` unhashed code. Anything else of theirs is refused,
        naming where it sits. ``options``: as for the constructor (``sys_path`` comes first, ``unhashed`` is joined).
        """
        converted = config_values_of(returnn_config, code)
        sys_path = [*options.pop("sys_path", ()), *converted.sys_path]
        unhashed = [*options.pop("unhashed", ()), *converted.unhashed]
        serializer = cls(converted.values, sys_path=list(dict.fromkeys(sys_path)), unhashed=unhashed, **options)
        return CheckedReturnnConfig(
            converted.plain,
            post_config=dict(returnn_config.post_config),
            python_prolog=[*converted.prolog, serializer],
            python_prolog_hash=[*converted.prolog_hash, serializer],
            python_epilog=converted.epilog,
            python_epilog_hash=converted.epilog_hash,
            hash_full_python_code=False,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {', '.join(key for key, _ in self.sections()) or 'empty'}>"

    __str__ = __repr__

"""The data of a ReturnnConfigSerializer: any RETURNN config's values (a PyTorch or RETURNN-frontend config's
``extern_data``, ``model_outputs``, ``get_model``, ``train_step``, ...) with dims as code references, written as
``key = value`` lines after the dim prolog. Its hash is :mod:`i6_rc_jobs._hashing`'s, joined in
:class:`i6_rc_jobs.serializers.ReturnnConfigSerializer`."""

from __future__ import annotations

import keyword
import sys
from typing import Any, Iterable, Optional, Sequence

from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.pycode import NOT_FOR_CLASSES, CodeWriter
from i6_rc_jobs._serialization.refs import DIM_SUFFIX, dim_lines
from i6_rc_jobs._serialization.serialized_code import SerializedCode
from i6_rc_jobs._serialization.values import check_tree


def _check_keys(values: Any, root: str) -> None:
    """Config keys are the names the written lines bind: identifiers that no dim, import or called builtin takes."""
    if not isinstance(values, dict):
        raise SerializationError(f"{describe(values)} is not a dict of config keys to values").at(root)
    for key in values:
        if type(key) is not str or not key.isidentifier() or keyword.iskeyword(key):
            raise SerializationError(f"config key {describe(key)} is no identifier: the config cannot bind it").at(root)
        if key.endswith(DIM_SUFFIX) or key in NOT_FOR_CLASSES - {"extern_data", "network", "get_network"}:
            raise SerializationError(
                f"config key {key!r} would take a name the written code needs (dim names end in {DIM_SUFFIX!r}; "
                f"builtins, Dim): rename it"
            ).at(root)


class SerializedConfig(SerializedCode):
    """Config values for an i6_core ``ReturnnConfig``'s ``python_prolog``: every RETURNN ``Dim`` in them (in dicts,
    lists, tuples, sets, and the args and keywords of ``functools.partial``) is replaced, in copies, by a
    :class:`.refs.DimRef` that keeps its identity (``same_as`` copies, derived dims, ``batch_dim``); functions,
    classes and modules are imported by name; Sisyphus paths are written as their value. The values are then plain
    data: they pickle and write without RETURNN or torch. ``.values`` is an ordinary dict you may still edit (which
    opens the serializer, see :class:`.serialized_code.SerializedCode`)."""

    def __init__(
        self,
        values: dict[str, Any],
        *,
        hash_value: Any = None,
        unhashed: Iterable[str] = (),
        sys_path: Sequence[str] = (),
    ):
        """
        :param values: config key -> value, e.g. ``{"extern_data": {...}, "get_model": partial(Model, ...)}``
        :param hash_value: if given, the Sisyphus hash is that of this object instead of that of the values
        :param unhashed: keys left out of the hash (e.g. ``["torch_log_memory_usage"]``); their dims still count
        :param sys_path: directories the written config puts first on ``sys.path`` (if not there yet) before it
            imports, so that RETURNN finds the modules of the functions and classes (a setup's ``recipe/``); where
            the code is, not what it is: not hashed
        """
        from i6_rc_jobs._serialization.convert import capture_for_values, convert

        _check_keys(values, "values")
        unknown = set(unhashed) - set(values)
        if unknown:
            raise SerializationError(f"keys {sorted(unknown)} are not among the values' keys").at("unhashed")
        self.hash_value = hash_value
        self.unhashed = frozenset(unhashed)
        self.hash_scheme = "dict"
        self.min_behavior_version: Optional[int] = None
        if isinstance(values.get("extern_data"), dict) and "returnn.tensor" in sys.modules:  # (else it has no dims)
            from i6_rc_jobs._serialization.data_sizes import check_data_sizes

            check_data_sizes(values["extern_data"])
        capture = capture_for_values()
        if isinstance(sys_path, str) or not all(type(path) is str for path in sys_path):
            raise SerializationError(f"{describe(sys_path)} is not a list of directories (str)").at("sys_path")
        self._data = {
            "values": {key: convert(values[key], capture, key) for key in sorted(values)},
            "sys_path": list(sys_path),
        }
        self._reset_sharing()

    @property
    def values(self) -> dict[str, Any]:
        """The config values (DimRefs in place of dims); reading them opens the serializer."""
        return self._opened()["values"]

    @values.setter
    def values(self, values: dict[str, Any]) -> None:
        _check_keys(values, "values")
        check_tree(values, "values")
        self._opened()["values"] = values

    def sections(self) -> list[tuple[str, Any]]:
        """The values by key, sorted: how they are hashed (dims numbered in that order)."""
        return sorted(self._data["values"].items())

    def _defined_names(self) -> Iterable[str]:
        return [*self._data["values"], *(["sys"] if self._data["sys_path"] else [])]

    def _preamble(self) -> list[str]:
        paths = self._data["sys_path"]
        if not paths:
            return []
        return ["import sys", "", f"sys.path[:0] = [path for path in {paths!r} if path not in sys.path]", ""]

    def _render(self, resolve_delayed: bool = True) -> tuple[CodeWriter, list[str], list[str]]:
        values = self._data["values"]
        _check_keys(values, "values")
        writer = CodeWriter(resolve_delayed, reserved=frozenset(self._defined_names()))
        parts = [f"{key} = {writer.write(value, key)}" for key, value in sorted(values.items())]
        return writer, dim_lines(writer.dims, list(writer.dims.values())), parts

    def __repr__(self) -> str:
        return f"<{type(self).__name__} with {', '.join(sorted(self._data['values'])) or 'nothing'}>"

"""Writes the values of a serializer's dicts as Python code: deterministic (sorted keys and set elements, in any
process and whatever PYTHONHASHSEED), black-like layout without running black, and exact (reads back equal)."""

from __future__ import annotations

import math
from typing import Any

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase

from .errors import SerializationError, describe
from .refs import DimRef, MarkedRef
from .strings import str_code
from .values import PLAIN_LEAVES, check_leaf, is_namedtuple, key_step, walk_guarded

INDENT = "    "
#: A container is written on one line if it fits in this many characters after its indentation.
INLINE_WIDTH = 100


class CodeWriter:
    """Writes values and remembers what the code needs besides itself: the dims it names (in first-written order,
    which is deterministic because keys are sorted) and the imports of markers and namedtuple classes."""

    def __init__(self):
        self.dims: dict[str, DimRef] = {}
        self.markers: set[str] = set()
        self.classes: dict[tuple[str, str], str] = {}  # (module, top-level name) -> local name

    def write(self, value: Any, root: str, indent: str = "") -> str:
        """Code for ``value``; errors name ``root`` and the path inside it."""
        return walk_guarded(self._value, value, root, indent)

    def use_dim(self, ref: DimRef) -> None:
        """Records a dim the code names, refusing two different dims under one name."""
        known = self.dims.setdefault(ref.name, ref)
        if known is not ref:
            raise SerializationError(
                f"two different dims are named {ref.name!r} (DimRefs of two serializers mixed?): "
                f"{known.definition()} and {ref.definition()}"
            )

    def _value(self, value: Any, indent: str) -> str:
        cls = type(value)
        if cls is str:
            return str_code(value)
        if cls in PLAIN_LEAVES:
            return repr(value)
        if cls is float:
            return repr(value) if math.isfinite(value) else f'float("{value!r}")'
        if cls is dict:
            return self._dict(value, indent)
        if cls is list:
            return self._items(value, indent, "[", "]")
        if cls is tuple:
            return self._items(value, indent, "(", ",)" if len(value) == 1 else ")")
        if cls is DimRef:
            self.use_dim(value)
            return value.code
        if cls is MarkedRef:
            self.use_dim(value.dim)
            self.markers.add(value.marker)
            return value.code
        if cls is set or cls is frozenset:
            return self._set(value, indent)
        if is_namedtuple(value):
            return self._namedtuple(value, indent)
        if isinstance(value, CodeWrapper):
            return repr(value)
        if isinstance(value, DelayedBase):
            return self._value(value.get(), indent)
        check_leaf(value)
        return repr(value)

    def _dict(self, value: dict, indent: str) -> str:
        inner = indent + INDENT
        items = []
        for key in value:
            key_code = self._value(key, inner)
            try:
                items.append((key_code, f"{key_code}: {self._value(value[key], inner)}"))
            except SerializationError as e:
                raise e.at(key_step(key))
        items.sort()
        return _layout([item for _, item in items], indent, "{", "}")

    def _items(self, value: list | tuple, indent: str, open_: str, close: str) -> str:
        inner = indent + INDENT
        codes = []
        for i, item in enumerate(value):
            try:
                codes.append(self._value(item, inner))
            except SerializationError as e:
                raise e.at(f"[{i}]")
        return _layout(codes, indent, open_, close)

    def _set(self, value: set | frozenset, indent: str) -> str:
        inner = indent + INDENT
        codes = []
        for item in value:
            try:
                codes.append(self._value(item, inner))
            except SerializationError as e:
                raise e.at(f"{{{describe(item)}}}")
        code = _layout(sorted(codes), indent, "{", "}") if codes else "set()"
        return code if type(value) is set else f"frozenset({code})"

    def _namedtuple(self, value: tuple, indent: str) -> str:
        cls = type(value)
        if cls.__module__ == "__main__":
            raise SerializationError(f"{describe(value)}: a namedtuple class from __main__ cannot be imported")
        top, _, rest = cls.__qualname__.partition(".")
        local = self.classes.get((cls.__module__, top))
        if local is None:
            taken = set(self.classes.values())
            local = top
            while local in taken:
                local += "_"
            self.classes[(cls.__module__, top)] = local
        inner = indent + INDENT
        codes = []
        for field, item in zip(cls._fields, value):
            try:
                codes.append(f"{field}={self._value(item, inner)}")
            except SerializationError as e:
                raise e.at(f".{field}")
        return _layout(codes, indent, f"{local}{'.' if rest else ''}{rest}(", ")")

    def import_lines(self) -> list[str]:
        """The import lines for everything written so far: dims from returnn.tensor only, then namedtuple classes."""
        names = ["Dim"] + [name for name in ("batch_dim", "single_step_dim") if name in self.dims]
        lines = [f"from returnn.tensor import {', '.join(names)}"]
        if self.markers:
            lines.append(f"from returnn.tensor.marked_dim import {', '.join(sorted(self.markers))}")
        for (module, top), local in sorted(self.classes.items()):
            lines.append(f"from {module} import {top}" + (f" as {local}" if local != top else ""))
        return lines


def _layout(codes: list[str], indent: str, open_: str, close: str) -> str:
    """One line if it fits and nothing inside spans lines; else one item per line with a trailing comma."""
    if not codes:
        return open_ + close.lstrip(",")
    inline = ", ".join(codes)
    if len(inline) + len(indent) <= INLINE_WIDTH and "\n" not in inline:
        return f"{open_}{inline}{close}"
    inner = indent + INDENT
    return f"{open_}\n{inner}" + f",\n{inner}".join(codes) + f",\n{indent}{close.lstrip(',')}"

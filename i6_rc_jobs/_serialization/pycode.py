"""Writes the values of a serializer's dicts as Python code: deterministic (sorted keys and set elements, in any
process and whatever PYTHONHASHSEED), black-like layout without running black, and exact (reads back equal)."""

from __future__ import annotations

import base64
import builtins
import math
from types import ModuleType
from typing import Any, Callable, Iterable, NamedTuple, Optional, assert_never

from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._serialization.callables import PartialRef
from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.kinds import kind_of
from i6_rc_jobs._serialization.pinned_code import Pins
from i6_rc_jobs._serialization.numpy_values import check_numpy, little_endian, loaded_numpy, readable, stored_bytes
from i6_rc_jobs._serialization.refs import DIM_SUFFIX, MARKERS, DimRef, use_dim
from i6_rc_jobs._serialization.strings import str_code
from i6_rc_jobs._serialization.values import (
    check_namedtuple,
    imported_source,
    key_step,
    partial_steps,
    refuse,
    sisyphus_values,
    walk_guarded,
    wrapper_code,
)

INDENT = "    "
#: A container is written on one line if it fits in this many characters after its indentation (black's line
#: length of i6 setups, less room for the key in front of it).
INLINE_WIDTH = 110
#: The builtins the written code calls (looked up when it runs: get_network's body when RETURNN calls it, after the
#: config's keys are set): neither a config key nor an imported name may take their names.
BUILTINS_CALLED = frozenset({"float", "complex", "set", "frozenset", "ValueError"})
#: Names nothing is imported as (namedtuple classes, functions, classes, numpy's; dim names, which all end in
#: ``_dim``, neither): what the code imports for dims, defines, and calls (builtins), get_network's parameters, which
#: its body would see instead, and every builtin (``from numpy import bool`` would change ``bool`` for the code after
#: the serializer's, e.g. a python_epilog).
NOT_FOR_CLASSES = frozenset(
    {
        "Dim",
        "Tensor",
        *MARKERS,
        "extern_data",
        "network",
        "get_network",
        *BUILTINS_CALLED,
        "epoch",
        "kwargs",
        *dir(builtins),
    }
)


class CodeWriter:
    """Writes values and remembers what the code needs besides itself: the dims it names and the imports of
    markers, namedtuple classes, functions and classes, and numpy's. With ``resolve_delayed=False`` it asks no
    Sisyphus value for its value (they may not be computed yet in the manager) and writes ``...`` for it instead:
    for the names the code binds, which the checks of a job being made need, not for the code."""

    def __init__(self, resolve_delayed: bool = True, reserved: frozenset[str] = frozenset()):
        """:param reserved: names the code binds itself (config keys), which no import may take"""
        self.resolve_delayed = resolve_delayed
        self.reserved = reserved
        self.dims: dict[str, DimRef] = {}
        self.markers: set[str] = set()
        self.imported: dict[tuple[str, str], str] = {}  # (module, top-level name) -> local name
        #: Model code pinned by content.
        self.pins = Pins()
        self._strings: dict[str, str] = {}  # str -> its literal; net dicts repeat their keys thousands of times

    def write(self, value: Any, root: str, indent: str = "") -> str:
        """Code for ``value``; errors name ``root`` and the path inside it."""
        return walk_guarded(self._value, value, root, indent)

    def use_dim(self, ref: DimRef) -> None:
        """Records a dim the code names, refusing two different dims under one name."""
        use_dim(self.dims, ref)

    def _value(self, value: Any, indent: str) -> str:
        kind = kind_of(value)
        match kind:
            case "dict":
                return self._dict(value, indent)
            case "str":
                return self._str(value)
            case "dim_ref":
                self.use_dim(value)
                return value.code
            case "list":
                return _layout(self._codes(enumerate(value), indent + INDENT, False, _index_step), indent, "[", "]")
            case "float":
                return repr(value) if math.isfinite(value) else f'float("{value!r}")'
            case "int" | "plain":
                return repr(value)
            case "tuple":
                return _layout(
                    self._codes(enumerate(value), indent + INDENT, False, _index_step),
                    indent,
                    "(",
                    ",)" if len(value) == 1 else ")",
                )
            case "marked_ref":
                self.use_dim(value.dim)
                self.markers.add(value.marker)
                return value.code
            case "set" | "frozenset":
                return self._set(value, indent)
            case "complex":  # exact, also for nan, inf and -0.0 parts, which the repr of a complex is not
                return f"complex({self._value(value.real, indent)}, {self._value(value.imag, indent)})"
            case "namedtuple":
                return self._namedtuple(value, indent)
            case "partial_ref":
                return self._partial(value, indent)
            case "named_ref":
                return self._imported(*value)
            case "content_ref":
                pins = getattr(value.owner, "pins", lambda: None)() if self.resolve_delayed else None
                if pins is not None:
                    self.pins.add(value.owner, pins)
                return self._value(value.reference, indent)
            case "wrapper":
                if not self.resolve_delayed and isinstance(value.code, DelayedBase):
                    return "..."
                return wrapper_code(value)
            case "delayed" | "i6_core_object":  # (i6_core's objects are Sisyphus values)
                return self._value(value.get(), indent) if self.resolve_delayed else "..."
            case "numpy":
                return self._numpy(value, loaded_numpy(), indent)
            case "imported":
                return self._imported(*imported_source(value))
            case "raw_dim" | "raw_marked_dim" | "dict_subclass" | "partial" | "module" | "content_owner" | "other":
                refuse(value)
            case _:
                assert_never(kind)

    def _str(self, value: str) -> str:
        code = self._strings.get(value)
        if code is None:
            code = self._strings[value] = str_code(value)
        return code

    def _codes(
        self,
        pairs: Iterable[tuple[Any, Any]],
        indent: str,
        keyed: bool,
        step: Callable[[Any], str],
        other_keys: Optional[list[Any]] = None,
    ) -> list[str]:
        """The code of each item of ``pairs``: a dict's items as ``key: value`` if ``keyed`` (keys that are not str
        are added to ``other_keys``), else (index, item) pairs as the item alone. The hot loop of writing: strings
        (from a cache), ints and dims without a call; ``step(key)`` names the path step of an item that fails."""
        strings, dims, walk = self._strings, self.dims, self._value
        out = []
        for key, item in pairs:
            try:
                if keyed:
                    if type(key) is str:
                        key_code = strings.get(key) or self._str(key)
                    else:
                        key_code = walk(key, indent)
                        assert other_keys is not None  # given with keyed
                        other_keys.append(key)
                cls = type(item)
                if cls is str:
                    code = strings.get(item) or self._str(item)
                elif cls is int or cls is bool or item is None:
                    code = repr(item)
                elif cls is DimRef:
                    code = item.code
                    if dims.get(code) is not item:
                        self.use_dim(item)
                else:
                    code = walk(item, indent)
            except SerializationError as e:
                e.at(step(key))
                raise
            out.append(f"{key_code}: {code}" if keyed else code)
        return out

    def _dict(self, value: dict, indent: str) -> str:
        """Items sorted by the code of their key: as lines of text where all keys are str (a string literal is never
        the start of another, so that is key order), else by key code first (``1`` before ``10``, which ``1: ``
        would not be)."""
        inner = indent + INDENT
        other_keys: list[Any] = []
        lines = self._codes(value.items(), inner, True, key_step, other_keys)
        if other_keys:
            key_codes = [self._str(key) if type(key) is str else self._value(key, inner) for key in value]
            # A Sisyphus value's value is known only now, e.g. "k" beside a key "k" (keys alike otherwise cannot hash,
            # or are nan, which loads as distinct keys again).
            delayed = [code for key, code in zip(value, key_codes) if sisyphus_values([key])]
            twice = next((code for code in delayed if key_codes.count(code) > 1), None)
            if twice is not None:
                raise SerializationError(
                    f"two keys are written as {twice}, which the written config would load as one key: make them "
                    f"distinct"
                )
            lines = [line for _, line in sorted(zip(key_codes, lines))]
        else:
            lines.sort()
        return _layout(lines, indent, "{", "}")

    def _set(self, value: set | frozenset, indent: str) -> str:
        items = list(value)
        codes = self._codes(enumerate(items), indent + INDENT, False, lambda i: f"{{{describe(items[i])}}}")
        code = _layout(sorted(codes), indent, "{", "}") if codes else "set()"
        return code if type(value) is set else f"frozenset({code})"

    def _imported(self, module: str, qualname: str) -> str:
        """The code naming what the config imports as ``from module import top`` (``top.rest`` for a nested
        qualified name)."""
        top, _, rest = qualname.partition(".")
        local = self.imported.get((module, top))
        if local is None:  # imported as another name if it would rebind a dim's, an import's or the dicts' name
            taken = set(self.imported.values())
            local = top
            while local in taken or local in NOT_FOR_CLASSES or local in self.reserved or local.endswith(DIM_SUFFIX):
                local += "_"
            self.imported[(module, top)] = local
        return f"{local}{'.' if rest else ''}{rest}"

    def _namedtuple(self, value: NamedTuple, indent: str) -> str:
        cls = type(value)
        name = self._imported(*check_namedtuple(value))
        inner = indent + INDENT
        codes = []
        for field, item in zip(cls._fields, value):
            try:
                codes.append(f"{field}={self._value(item, inner)}")
            except SerializationError as e:
                e.at(f".{field}")
                raise
        return _layout(codes, indent, f"{name}(", ")")

    def _partial(self, value: PartialRef, indent: str) -> str:
        """``partial(func, *args, **keywords)``, keywords sorted (as :func:`partial_steps` lists them)."""
        inner = indent + INDENT
        prefixes = [""] * (1 + len(value.args)) + [f"{key}=" for key in sorted(value.keywords)]
        codes = []
        for prefix, (step, item) in zip(prefixes, partial_steps(value)):
            try:
                codes.append(prefix + self._value(item, inner))
            except SerializationError as e:
                e.at(step)
                raise
        return _layout(codes, indent, f"{self._imported('functools', 'partial')}(", ")")

    def _numpy(self, value: Any, numpy: ModuleType, indent: str) -> str:
        """A numpy array or scalar, read back with its type, dtype (little-endian), shape and content: as
        its items where they read back exactly (``float32(1.5)``, ``array([...], dtype="<f4").reshape((2, 3))``),
        else as its bytes (``frombuffer(b64decode("..."), dtype="<f4")``, then ``[0]`` for a scalar, or
        ``.reshape(...).copy()`` for a writable array)."""
        check_numpy(value, numpy)
        value = little_endian(value)
        scalar = isinstance(value, numpy.generic)
        dtype = self._str(value.dtype.str)
        if readable(value, numpy):
            if scalar:
                item = value[:] if value.dtype.kind in "SU" else value.item()  # item() drops trailing NULs
                return f"{self._imported('numpy', type(value).__name__)}({self._value(item, indent)})"
            items = self._value(value.tolist() if value.ndim <= 1 else value.ravel().tolist(), indent)
            code = f"{self._imported('numpy', 'array')}({items}, dtype={dtype})"
            return code if value.ndim <= 1 else f"{code}.reshape({value.shape!r})"
        data = base64.b64encode(stored_bytes(value, numpy)).decode("ascii")
        frombuffer, b64decode = self._imported("numpy", "frombuffer"), self._imported("base64", "b64decode")
        code = f'{frombuffer}({b64decode}("{data}"), dtype={dtype})'
        if scalar:
            return f"{code}[0]"
        return f"{code}{'' if value.ndim == 1 else f'.reshape({value.shape!r})'}.copy()"

    def imports(self) -> dict[str, str]:
        """The names the import lines bind, each with what it is (``module.name``), in the order they are imported:
        dims from returnn.tensor only (and Tensor for templates of sizes), then the marked dims, then the rest by module and name (namedtuple classes,
        functions and classes, numpy's)."""
        tensor = ["Dim"] if self.dims else []  # (a config of no dims needs no returnn.tensor, which MiniReturnn lacks)
        tensor += ["Tensor"] if any(dim.size_dims is not None for dim in self.dims.values()) else []
        tensor += [name for name in ("batch_dim", "single_step_dim") if name in self.dims]
        bound = {name: f"returnn.tensor.{name}" for name in tensor}
        bound.update((marker, f"returnn.tensor.marked_dim.{marker}") for marker in sorted(self.markers))
        bound.update((local, f"{module}.{top}") for (module, top), local in sorted(self.imported.items()))
        return bound

    def import_lines(self) -> list[str]:
        """The import lines for :meth:`imports`, one per module."""
        by_module: dict[str, list[str]] = {}
        for local, source in self.imports().items():
            module, _, name = source.rpartition(".")
            by_module.setdefault(module, []).append(name if name == local else f"{name} as {local}")
        return [f"from {module} import {', '.join(names)}" for module, names in by_module.items()]


def _index_step(i: int) -> str:
    return f"[{i}]"


def _layout(codes: list[str], indent: str, open_: str, close: str) -> str:
    """One line if it fits and nothing inside spans lines; else one item per line with a trailing comma. The length
    is summed before anything is joined: joining a big container only to find it too long copied it once more per
    level of nesting."""
    if not codes:
        return open_ + close.lstrip(",")
    if sum(map(len, codes)) + 2 * len(codes) + len(indent) <= INLINE_WIDTH:
        inline = ", ".join(codes)
        if "\n" not in inline:
            return f"{open_}{inline}{close}"
    inner = indent + INDENT
    return f"{open_}\n{inner}" + f",\n{inner}".join(codes) + f",\n{indent}{close.lstrip(',')}"

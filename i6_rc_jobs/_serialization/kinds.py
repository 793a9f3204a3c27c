"""The kinds of values a serializer's dicts may hold, and the one function that tells a value's kind: every walk over
values (converting, writing, checking, copying, hashing, finding dims) dispatches on :func:`kind_of` and ends in
``assert_never``, so that mypy refuses a walk that forgets a kind (a new kind is added here, then wherever mypy says).

RETURNN, numpy and i6_core's serialization objects are never imported here: a value of theirs exists only where
their module is loaded."""

from __future__ import annotations

import functools
import sys
import types
from typing import Any, Literal, NamedTuple, TypeGuard, get_args

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._serialization.callables import ContentRef, NamedRef, PartialRef
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef

#: What a value is to the walks, by its type. A Literal of str, not an enum: Python 3.11 reads an enum's members
#: through its metaclass's ``__getattr__`` hook (6 times the cost of a str constant), on the hot path of every walk.
#: The kinds after "imported" are what users put in and :mod:`.convert` turns into the others; every other walk
#: refuses them (the hash takes any of them that has a ``_sis_hash`` of its own, such as a ContentRef's owner, by it:
#: as the value's own hash, whatever its kind).
Kind = Literal[
    "str",
    "int",
    "float",
    "plain",  # None, bool, bytes: written by their repr, hashed as they are
    "complex",
    "dict",
    "list",
    "tuple",
    "namedtuple",
    "set",
    "frozenset",
    "dim_ref",
    "marked_ref",
    "partial_ref",
    "named_ref",
    "content_ref",
    "wrapper",  # an i6_core CodeWrapper (a ModuleRef too): written as its code
    "delayed",  # a Sisyphus value (tk.Path, tk.Variable, ...): written as its value
    "numpy",  # a numpy array or scalar
    "imported",  # a function or class: imported by the config
    "raw_dim",  # a RETURNN Dim
    "raw_marked_dim",  # a RETURNN MarkedDim
    "dict_subclass",  # e.g. returnn_common's nn.LayerState: converted to a plain dict
    "partial",  # a functools.partial: converted to a PartialRef
    "module",  # converted to a ModuleRef
    "content_owner",  # a value with ``config_reference()`` (``by_content(...)``): converted to a ContentRef
    "i6_core_object",  # i6_core's ``Import``, ``PartialImport``, ...: converted to what they stand for
    "other",  # anything else: refused
]
KINDS: tuple[Kind, ...] = get_args(Kind)


#: The kind of each type met so far (the fallbacks of :func:`_kind_of_type` run once per type: walks meet thousands
#: of values of a few types), preset with the types of the hot paths.
_BY_TYPE: dict[type, Kind] = {
    str: "str",
    int: "int",
    float: "float",
    bool: "plain",
    type(None): "plain",
    bytes: "plain",
    complex: "complex",
    dict: "dict",
    list: "list",
    tuple: "tuple",
    set: "set",
    frozenset: "frozenset",
    DimRef: "dim_ref",
    MarkedRef: "marked_ref",
    PartialRef: "partial_ref",
    NamedRef: "named_ref",
    ContentRef: "content_ref",
}
#: Leaves the walks take as they are, checked inline (``type(x) in LEAF_TYPES``) on their hot paths: the types of
#: the kinds STR, INT, FLOAT and PLAIN.
LEAF_TYPES: frozenset[type] = frozenset({str, int, float, bool, type(None), bytes})
#: Values the written config imports by module and qualified name, and hashes by them.
IMPORTED_TYPES = (types.FunctionType, types.BuiltinFunctionType, type)


def kind_of(value: Any) -> Kind:
    """The kind of ``value``, by its type."""
    kind = _BY_TYPE.get(type(value))
    if kind is None:
        kind = _BY_TYPE[type(value)] = _kind_of_type(type(value))
    return kind


def _kind_of_type(cls: type) -> Kind:
    """The kind of the values of a type not in ``_BY_TYPE``: the first of these it is a subclass of. A class of a
    module that is not loaded (RETURNN, numpy, i6_core's serialization objects) has no subclass yet."""
    if issubclass(cls, dict):
        return "dict_subclass"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "namedtuple"
    if issubclass(cls, _loaded("returnn.tensor", "Dim")):
        return "raw_dim"
    if issubclass(cls, _loaded("returnn.tensor.marked_dim", "MarkedDim")):
        return "raw_marked_dim"
    if issubclass(cls, functools.partial):
        return "partial"
    if issubclass(cls, types.ModuleType):
        return "module"
    if getattr(cls, "config_reference", None) is not None:
        return "content_owner"
    if issubclass(cls, _loaded("i6_core.serialization.base", "SerializerObject")):
        return "i6_core_object"
    if issubclass(cls, CodeWrapper):
        return "wrapper"
    if issubclass(cls, DelayedBase):
        return "delayed"
    if issubclass(cls, _loaded("numpy", "ndarray")) or issubclass(cls, _loaded("numpy", "generic")):
        return "numpy"
    if issubclass(cls, IMPORTED_TYPES):
        return "imported"
    return "other"


def _loaded(module: str, name: str) -> Any:
    """The class ``module.name`` if that module is loaded, else ``()`` (no class)."""
    return getattr(sys.modules.get(module), name, ())


def is_namedtuple(value: Any) -> TypeGuard[NamedTuple]:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_raw_dim(value: Any) -> bool:
    """Whether ``value`` is a RETURNN Dim (whose repr, ``Dim{B}``, is no Python code), without importing RETURNN."""
    return type(value).__name__ == "Dim" and type(value).__module__.startswith("returnn.")

"""Copies a user's dict, replacing every RETURNN dim by its DimRef. Inputs are never mutated.

The copy is made in sorted-key order (dicts come out sorted, as they are written), so that dims are met, and named,
in an order that does not depend on how the dicts were filled."""

from __future__ import annotations

import copy
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Union, assert_never

from i6_rc_jobs._serialization.callables import ContentRef, ModuleRef, PartialRef, content_ref, partial_parts
from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._serialization.i6_core_objects import i6_core_object_value
from i6_rc_jobs._serialization.kinds import LEAF_TYPES, kind_of
from i6_rc_jobs._serialization.values import (
    INT_HIGH,
    INT_LOW,
    NEAR_MAX_BRACKETS,
    check_brackets,
    check_int,
    check_leaf,
    check_namedtuple,
    key_step,
    partial_steps,
    plain_order_key,
    refuse,
    step_repr,
    walk_guarded,
)

if TYPE_CHECKING:
    from i6_rc_jobs._serialization.capture import DimCapture


class DimsWhenMet:
    """The :class:`~.capture.DimCapture` of values made where RETURNN's ``returnn.tensor`` is not loaded (so no raw
    dim can be among them), made only when a DimRef is met: a config without dims converts without importing
    RETURNN, whose ``returnn.tensor`` the fork MiniReturnn has not."""

    def __init__(self) -> None:
        self._capture: Optional[DimCapture] = None

    def _real(self) -> DimCapture:
        if self._capture is None:
            from i6_rc_jobs._serialization.capture import DimCapture

            self._capture = DimCapture()
        return self._capture

    def known(self, dims: Iterable[Any]) -> Any:
        return None if self._capture is None else self._capture.known(dims)

    def order_key(self, value: Any) -> tuple:
        return plain_order_key(value) if self._capture is None else self._capture.order_key(value)

    def __getattr__(self, name: str) -> Any:  # ref, adopt, adopt_marked, marked: a DimRef met
        return getattr(self._real(), name)


def capture_for_values() -> Union[DimCapture, DimsWhenMet]:
    """What converts a config's values: a :class:`~.capture.DimCapture` where RETURNN's dims may be among them."""
    if "returnn.tensor" in sys.modules:
        from i6_rc_jobs._serialization.capture import DimCapture

        return DimCapture()
    return DimsWhenMet()


def convert(value: Any, capture: "DimCapture | DimsWhenMet", root: str) -> Any:
    """The copy of ``value`` with dims replaced; ``root`` names it in errors (e.g. ``network``)."""
    return walk_guarded(_convert, value, root, capture, 0)


def _convert(value: Any, capture: "DimCapture | DimsWhenMet", depth: int) -> Any:
    """``depth``: the brackets the written code opens around ``value``. Leaves are taken inline where they cannot
    exceed ``MAX_BRACKETS``, ints only if they have no more digits than Python reads."""
    if depth >= NEAR_MAX_BRACKETS:
        check_brackets(value, depth)
    kind = kind_of(value)
    inner = depth + 1
    inline = inner < NEAR_MAX_BRACKETS
    match kind:
        case "str" | "float" | "plain":
            return value
        case "int":
            return check_int(value)
        case "raw_dim":
            return capture.ref(value)
        case "dim_ref":
            return capture.adopt(value)
        case "marked_ref":
            return capture.adopt_marked(value)
        case "dict" | "dict_subclass":  # subclasses (returnn_common's nn.LayerState): plain dicts
            if all(type(k) is str for k in value):
                pairs = sorted(value.items())  # str keys are distinct: values are never compared
            else:  # not sorted(value): RETURNN's Dim.__gt__ recurses forever against a str
                pairs = [(k, value[k]) for k in _ordered(value, capture, key_step)]
            out = {}
            for k, v in pairs:
                try:  # leaves inline: this loop and the next are the hot path of conversion
                    out[k if type(k) is str else _convert(k, capture, inner)] = (
                        v
                        if type(v) in LEAF_TYPES and inline and (type(v) is not int or INT_LOW < v < INT_HIGH)
                        else _convert(v, capture, inner)
                    )
                except SerializationError as e:
                    e.at(key_step(k))
                    raise
            return out
        case "list" | "tuple" | "namedtuple":
            if kind == "namedtuple":
                check_namedtuple(value)  # refused now, not when the config is written
            items = []
            for i, v in enumerate(value):
                try:
                    items.append(
                        v
                        if type(v) in LEAF_TYPES and inline and (type(v) is not int or INT_LOW < v < INT_HIGH)
                        else _convert(v, capture, inner)
                    )
                except SerializationError as e:
                    e.at(f"[{i}]")
                    raise
            return items if kind == "list" else tuple(items) if kind == "tuple" else type(value)(*items)
        case "set" | "frozenset":
            refs = capture.known(value)  # most out_shape sets
            if refs is None:
                refs = []
                for v in _ordered(value, capture, _element_step):  # new dims are named in this order
                    try:
                        refs.append(_convert(v, capture, depth + (2 if kind == "frozenset" else 1)))
                    except SerializationError as e:
                        e.at(_element_step(v))
                        raise
            return type(value)(refs)
        case "raw_marked_dim":
            marked = capture.marked(value)
            if depth >= NEAR_MAX_BRACKETS:  # written as a call: one bracket more than the raw MarkedDim counted
                check_brackets(marked, depth)
            return marked
        case "partial" | "partial_ref":
            parts = value if kind == "partial_ref" else PartialRef(*partial_parts(value))
            converted = []
            for step, item in partial_steps(parts):
                try:
                    converted.append(_convert(item, capture, inner))
                except SerializationError as e:
                    e.at(step)
                    raise
            func, *rest = converted
            return PartialRef(
                func, tuple(rest[: len(parts.args)]), dict(zip(sorted(parts.keywords), rest[len(parts.args) :]))
            )
        case "module":
            return ModuleRef.of(value)
        case "named_ref":
            return value
        case "content_ref" | "content_owner":
            # by_content(...): its reference converted (dims among a partial's args), in the owner
            content = value if kind == "content_ref" else content_ref(value)
            return ContentRef(_convert(content.reference, capture, depth), content.owner)
        case "i6_core_object":
            return _convert(i6_core_object_value(value), capture, depth)
        case "wrapper" | "numpy":
            check_leaf(value)
            return copy.copy(
                value
            )  # its own copy: the caller's could be changed behind the hash (a numpy array in place)
        case "complex" | "delayed" | "imported":
            check_leaf(value)
            return value
        case "other":
            refuse(value)
        case _:
            assert_never(kind)


def _ordered(values: Iterable[Any], capture: "DimCapture | DimsWhenMet", step: Callable[[Any], str]) -> list[Any]:
    """``values`` sorted by ``capture.order_key``, which spells what is no dim by its repr: an int too long for repr
    is refused first, named by ``step``."""
    for v in values:
        if type(v) is int:
            try:
                check_int(v)
            except SerializationError as e:
                e.at(step(v))
                raise
    return sorted(values, key=capture.order_key)


def _element_step(element: Any) -> str:
    return f"{{{step_repr(element)}}}"

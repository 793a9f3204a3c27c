"""Copies a user's dict, replacing every RETURNN dim by its DimRef. Inputs are never mutated.

The copy is made in sorted-key order (dicts come out sorted, as they are written), so that dims are met, and named,
in an order that does not depend on how the dicts were filled."""

from __future__ import annotations

import copy
from typing import Any

from i6_core.returnn.config import CodeWrapper
from returnn.tensor import Dim
from returnn.tensor.marked_dim import MarkedDim

from .capture import DimCapture
from .errors import SerializationError
from .refs import DimRef, MarkedRef
from .values import LEAF_TYPES, check_leaf, check_namedtuple, is_namedtuple, key_step, walk_guarded


def convert(value: Any, capture: DimCapture, root: str) -> Any:
    """The copy of ``value`` with dims replaced; ``root`` names it in errors (e.g. ``network``)."""
    return walk_guarded(_convert, value, root, capture)


def _convert(value: Any, capture: DimCapture) -> Any:
    cls = type(value)
    if cls in LEAF_TYPES:
        return value
    if cls is Dim:
        return capture.ref(value)
    if cls is DimRef:
        return capture.adopt(value)
    if cls is MarkedRef:
        return capture.adopt_marked(value)
    if isinstance(value, dict):  # dict subclasses (e.g. returnn_common's nn.LayerState) are written as plain dicts
        if all(type(k) is str for k in value):
            pairs = sorted(value.items())  # str keys are distinct: values are never compared
        else:  # not sorted(value): RETURNN's Dim.__gt__ recurses forever against a str
            pairs = [(k, value[k]) for k in sorted(value, key=capture.order_key)]
        out = {}
        for k, v in pairs:
            try:  # leaves inline: this loop and the next are the hot path of conversion
                out[k if type(k) is str else _convert(k, capture)] = (
                    v if type(v) in LEAF_TYPES else _convert(v, capture)
                )
            except SerializationError as e:
                raise e.at(key_step(k))
        return out
    if cls is list or cls is tuple or is_namedtuple(value):
        if cls is not list and cls is not tuple:
            check_namedtuple(value)  # refused now, not when the config is written
        out = []
        for i, v in enumerate(value):
            try:
                out.append(v if type(v) in LEAF_TYPES else _convert(v, capture))
            except SerializationError as e:
                raise e.at(f"[{i}]")
        return out if cls is list else tuple(out) if cls is tuple else cls(*out)
    if cls is set or cls is frozenset:
        refs = capture.known(value)  # most out_shape sets
        if refs is None:
            refs = []
            for v in sorted(value, key=capture.order_key):  # new dims are named in this order
                try:
                    refs.append(_convert(v, capture))
                except SerializationError as e:
                    raise e.at(f"{{{v!r}}}")
        return cls(refs)
    if isinstance(value, Dim):
        return capture.ref(value)
    if isinstance(value, MarkedDim):
        return capture.marked(value)
    check_leaf(value)
    if isinstance(value, CodeWrapper):  # its own copy: the caller's could be changed behind the hash
        return copy.copy(value)
    return value

"""The one value vocabulary (i6_rc_jobs._serialization.kinds): every value has the kind its test case says, found
by its type alone (kind_of caches by type), and the walks agree with it: what conversion gives back is of a kind
the other walks take, which check, write and hash alike; what they refuse, all refuse with one message."""

from __future__ import annotations

import collections
import collections.abc
import functools
import os
from typing import Any, Callable

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from i6_core.returnn.config import CodeWrapper
from returnn.tensor import Dim
from returnn.tensor.marked_dim import ImplicitSparseDim
from sisyphus import tk

from i6_rc_jobs import SerializationError
from i6_rc_jobs._hashing.canonical import Canonicalizer
from i6_rc_jobs._serialization.callables import ContentRef, NamedRef, PartialRef
from i6_rc_jobs._serialization.capture import DimCapture
from i6_rc_jobs._serialization.convert import convert
from i6_rc_jobs._serialization.copying import copy_tree
from i6_rc_jobs._serialization.kinds import KINDS, LEAF_TYPES, Kind, kind_of
from i6_rc_jobs._serialization.pycode import CodeWriter
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef
from i6_rc_jobs._serialization.values import check_tree

SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", 150)),
    derandomize="HYPOTHESIS_MAX_EXAMPLES" not in os.environ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

Pair = collections.namedtuple("Pair", ["left", "right"])


class Owner:
    """Hashes itself, as a ContentRef's owner does."""

    def _sis_hash(self) -> bytes:
        return b"owner"


class Marker(Owner):
    """Stands for a function by content, as ``by_content(...)`` does."""

    def config_reference(self) -> Any:
        return NamedRef("os.path", "join")


class LayerState(dict):
    pass


TIME = DimRef("time_dim", kind="spatial")

#: A value of each kind, made anew for each use (conversion and writing may record them).
EXAMPLES: dict[Kind, Callable[[], Any]] = {
    "str": lambda: "a",
    "int": lambda: 3,
    "float": lambda: float("nan"),
    "plain": lambda: b"x",
    "complex": lambda: 1 + 2j,
    "dict": lambda: {"a": 1},
    "list": lambda: [1, "b"],
    "tuple": lambda: (1,),
    "namedtuple": lambda: Pair(1, "b"),
    "set": lambda: {1, 2},
    "frozenset": lambda: frozenset({"a"}),
    "dim_ref": lambda: TIME,
    "marked_ref": lambda: MarkedRef("ImplicitSparseDim", TIME),
    "partial_ref": lambda: PartialRef(NamedRef("os.path", "join"), ("a",), {}),
    "named_ref": lambda: NamedRef("os.path", "join"),
    "content_ref": lambda: ContentRef(NamedRef("os.path", "join"), Owner()),
    "wrapper": lambda: CodeWrapper("1 + 1"),
    "delayed": lambda: tk.Path("/data/corpus.xml"),
    "numpy": lambda: numpy.arange(3, dtype="int32"),
    "imported": lambda: os.path.join,
    "raw_dim": lambda: Dim(5, name="feature"),
    "raw_marked_dim": lambda: ImplicitSparseDim(Dim(7, name="classes")),
    "dict_subclass": lambda: LayerState(a=1),
    "partial": lambda: functools.partial(os.path.join, "a"),
    "module": lambda: os,
    "content_owner": Marker,
    "i6_core_object": lambda: _i6_core_import(),
    "other": object,
}
#: What conversion turns into others; the other walks refuse them.
RAW = {
    "raw_dim",
    "raw_marked_dim",
    "dict_subclass",
    "partial",
    "module",
    "content_owner",
    "i6_core_object",
}
#: Refused by every walk.
REFUSED = {"other"}


def _i6_core_import() -> Any:
    from i6_core.serialization.base import Import

    return Import("os.path.join")


def test_every_kind_has_an_example():
    assert set(EXAMPLES) == set(KINDS)


def test_the_inline_leaf_types_are_those_of_the_plain_kinds():
    plain = {"str", "int", "float", "plain"}
    assert {type(v) for v in ("", 0, 0.0, None, True, b"")} == LEAF_TYPES
    assert all(kind_of(t()) in plain for t in LEAF_TYPES)


@pytest.mark.parametrize("kind", KINDS)
def test_each_example_has_its_kind_by_its_type(kind):
    value = EXAMPLES[kind]()
    assert kind_of(value) == kind
    assert kind_of(EXAMPLES[kind]()) == kind  # (its type's kind cached)


def test_order_subtleties():
    """bool is no int, a namedtuple no tuple, a class with _sis_hash is imported, a str subclass is no str."""
    assert kind_of(True) == "plain"
    assert kind_of(Pair(1, 2)) == "namedtuple"
    assert kind_of(DimRef) == "imported"
    assert kind_of(type("Text", (str,), {})("a")) == "other"


def test_the_hash_takes_a_values_own_hash_whatever_its_kind():
    """A ContentRef's owner, a function with a code hash: the other walks see their kind."""
    assert Canonicalizer().sections([("v", [Owner()])]) == Canonicalizer().sections([("v", [Marker()])])
    with pytest.raises(SerializationError, match="cannot be written as Python code"):
        check_tree([Owner()], "v")


def _refusal(walk: Callable[[Any], Any], value: Any) -> str:
    with pytest.raises(SerializationError) as error:
        walk(value)
    return str(error.value)


def _walks() -> dict[str, Callable[[Any], Any]]:
    return {
        "check": lambda value: check_tree(value, "v"),
        "write": lambda value: CodeWriter().write(value, "v"),
        "hash": lambda value: Canonicalizer().sections([("v", value)]),
    }


@SETTINGS
@given(st.sampled_from(KINDS), st.sampled_from(["item", "value", "key"]))
def test_the_walks_agree_with_the_kinds(kind, where):
    """Conversion gives values of kinds that are no raw ones, which every walk takes (and copying keeps); a refused
    value is refused by every walk with one message, also inside a container."""
    value = EXAMPLES[kind]()
    wrap = {"item": lambda v: [v], "value": lambda v: {"k": v}, "key": lambda v: {v: 1}}[where]
    if where == "key" and (not isinstance(value, collections.abc.Hashable) or kind in ("partial_ref", "partial")):
        return  # (a partial's keywords are a dict)
    if kind in REFUSED:
        messages = {_refusal(walk, wrap(value)) for walk in [*_walks().values(), _convert]}
        assert len(messages) == 1, messages
        return
    converted = _convert(wrap(value))
    inner = converted[0] if where == "item" else next(iter(converted.values() if where == "value" else converted))
    assert kind_of(inner) not in RAW | REFUSED
    if kind not in RAW:
        assert kind_of(inner) == kind
    for walk in _walks().values():
        walk(converted)
    copied = copy_tree(converted, {})
    assert CodeWriter().write(copied, "v") == CodeWriter().write(converted, "v")
    if kind in RAW - {"i6_core_object"}:  # (which are Sisyphus values to the other walks)
        assert {_refusal(walk, wrap(EXAMPLES[kind]())) for walk in (_walks()["check"], _walks()["write"])}


def _convert(value: Any) -> Any:
    return convert(value, DimCapture(), "v")

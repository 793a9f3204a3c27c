"""Properties of the hash over random structures (hypothesis): equal exactly when the written code is equal (no two
values share an encoding), invariant under relabelling look-alike dims and equal exactly for isomorphic structures of
them, and counting descriptions exactly as far as axis strings make RETURNN read them."""

from __future__ import annotations

import itertools
from typing import Any

import numpy
from hypothesis import assume, given
from hypothesis import strategies as st
from i6_core.returnn.config import CodeWrapper
from returnn.tensor import Dim

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._hashing.walks import code_texts
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef
from tests.support import net_functions
from tests.support.dim_graphs import build_structure, dim_specs, structures, build_dims
from tests.support.records import Pair
from tests.test_serializer_properties import SETTINGS, _refs

# Values that spell each other in a careless encoding: code with quotes and angle brackets, strings naming the
# tags of marked dims and namedtuples.
TRICKY_TEXT = [
    "'",
    "<",
    ">",
    "5'",
    "'>, <code 5'",
    "ImplicitSparseDim",
    f"{Pair.__module__}.Pair",
    "x",
    "import tests.support.net_functions:double",
    "numpy-scalar '<f4' 0000c03f",
]
# numpy values alike in all but one of type, dtype, shape and bytes (or byte order, which is neither written nor hashed) (int32 1069547520 has the bytes of
# float32 1.5; two NaNs, -0.0 and 0.0), and functions and classes.
TRICKY_SCALARS = [
    numpy.float32(1.5),
    numpy.float64(1.5),
    numpy.int32(1069547520),
    numpy.bool_(True),
    numpy.uint8(1),
    numpy.frombuffer(bytes.fromhex("0100c0ff"), dtype="<f4")[0],
    numpy.float32("nan"),
    net_functions.double,
    net_functions.halve,
    net_functions.Scale,
    Pair,
]
TRICKY_ARRAYS = [
    numpy.array(1.5, dtype="<f4"),
    numpy.array([1.5], dtype="<f4"),
    numpy.array([1.5], dtype=">f4"),
    numpy.array([[1.5]], dtype="<f4"),
    numpy.array([1069547520], dtype="<i4"),
    numpy.zeros((0, 1), dtype="<f4"),
    numpy.zeros((1, 0), dtype="<f4"),
    numpy.zeros(0, dtype="<f8"),
    numpy.array([-0.0], dtype="<f4"),
    numpy.array([0.0], dtype="<f4"),
    numpy.array([numpy.nan], dtype="<f4"),
    numpy.frombuffer(bytes.fromhex("0100c0ff"), dtype="<f4").copy(),
]


def _tricky() -> st.SearchStrategy:
    """Specs of such values (dims by index), built by :func:`_build` with a serializer's DimRefs."""
    dim = st.integers(0, 2).map(lambda i: ("DIM", i))
    text = st.sampled_from(TRICKY_TEXT)
    hashable = st.one_of(
        text,
        st.sampled_from([1, 5, 1.5]),
        st.sampled_from(TRICKY_SCALARS),
        dim,
        dim.map(lambda d: ("MARKED", d)),
        st.tuples(st.one_of(text, dim), st.one_of(text, dim, st.just(1))).map(lambda xs: ("TUPLE", xs)),
        dim.map(lambda d: ("PAIR", (d, 1))),
    )
    leaves = st.one_of(hashable, text.map(lambda t: ("CODE", t)), st.sampled_from(TRICKY_ARRAYS))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=2).map(lambda xs: ("TUPLE", xs)),
            st.tuples(inner, inner).map(lambda xs: ("PAIR", xs)),
            st.lists(st.tuples(hashable, inner), max_size=3).map(lambda xs: ("DICT", xs)),
            st.lists(hashable, max_size=3).map(lambda xs: ("FROZENSET", xs)),
        ),
        max_leaves=8,
    )


def _build(spec: Any, dims: list[DimRef]) -> Any:
    if isinstance(spec, list):
        return [_build(x, dims) for x in spec]
    if not isinstance(spec, tuple):
        return spec
    what, arg = spec
    if what == "DIM":
        return dims[arg]
    if what == "MARKED":
        return MarkedRef("ImplicitSparseDim", _build(arg, dims))
    if what == "CODE":
        return CodeWrapper(arg)
    if what == "DICT":
        return {_build(k, dims): _build(v, dims) for k, v in arg}
    items = [_build(x, dims) for x in arg]
    return {"TUPLE": tuple, "FROZENSET": frozenset, "PAIR": lambda xs: Pair(*xs)}[what](items)


def _with_dims() -> ReturnnCommonSerializer:
    """Two look-alike feature dims and a spatial one, numbered before any edit."""
    dims = [Dim(5, description="a", kind=Dim.Types.Feature), Dim(5, description="b", kind=Dim.Types.Feature)]
    return ReturnnCommonSerializer(network={"dims": [*dims, Dim(None, description="t", kind=Dim.Types.Spatial)]})


@SETTINGS
@given(_tricky(), _tricky())
def test_hashes_are_equal_exactly_when_the_written_code_is(one, two):
    first, second = _with_dims(), _with_dims()
    for ser, spec in ((first, one), (second, two)):
        ser.network["x"] = _build(spec, ser.network["dims"])
    assert (first.get() == second.get()) == (first._sis_hash() == second._sis_hash())


@st.composite
def _edges(draw) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(2, 5))
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    return n, draw(st.lists(pair, min_size=1, max_size=7, unique=True))


def _edge_hash(n: int, edges: list[tuple[int, int]], label: tuple[int, ...]) -> Any:
    """The hash of ``{(d[label[i]], d[label[j]]) for (i, j) in edges}`` over ``n`` dims alike in everything (made in
    the order of ``label``, so the set's order differs too), or the refusal's text."""
    dims: dict[int, Dim] = {}
    for i in label:
        dims[i] = Dim(5, description=f"d{i}", kind=Dim.Types.Feature)
    try:
        return ReturnnCommonSerializer(network={"k": {(dims[label[i]], dims[label[j]]) for i, j in edges}})._sis_hash()
    except SerializationError as e:
        return str(e)


@SETTINGS
@given(_edges(), st.data())
def test_look_alike_dims_hash_alike_under_any_relabelling(drawn, data):
    n, edges = drawn
    label = tuple(data.draw(st.permutations(range(n))))
    assert _edge_hash(n, edges, label) == _edge_hash(n, edges, tuple(range(n)))


def _isomorphic(n: int, one: list[tuple[int, int]], two: list[tuple[int, int]]) -> bool:
    target = set(two)
    return any({(p[i], p[j]) for i, j in one} == target for p in itertools.permutations(range(n)))


@SETTINGS
@given(_edges(), st.data())
def test_structures_of_look_alike_dims_hash_alike_exactly_when_isomorphic(drawn, data):
    n, one = drawn
    two = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=7, unique=True)
    )
    identity = tuple(range(n))
    assert (_edge_hash(n, one, identity) == _edge_hash(n, two, identity)) == _isomorphic(n, one, two)


WORDS = ["a", "b", "ab", "c", "A", "cab"]


@st.composite
def _described(draw):
    """A config, axis-string names, and two descriptions per dim spec (letters only: the ``#i`` after it never
    matches a name)."""
    specs = draw(dim_specs())
    network = draw(st.dictionaries(st.text(min_size=1, max_size=6), structures(len(specs)), min_size=1, max_size=4))
    names = draw(st.lists(st.sampled_from(["a", "b", "ab"]), min_size=1, max_size=2, unique=True))
    words = st.lists(st.sampled_from(WORDS), min_size=len(specs), max_size=len(specs))
    return specs, network, names, draw(words), draw(words)


@SETTINGS
@given(_described())
def test_descriptions_count_exactly_as_far_as_axis_strings_read_them(drawn):
    """Same hash if every plain dim matches the same names (and dims that derived dims are made of keep their
    descriptions); another hash if any plain dim matches other names, or changes its description beside code whose
    source cannot be had."""
    specs, network_spec, names, first, second = drawn

    def make(words: list[str]) -> ReturnnCommonSerializer:
        dims = build_dims(specs, lambda i: f"{words[i]}#{i}")
        network = build_structure(network_spec, dims)
        network["axes"] = [f"stag:{name}" for name in names]
        return ReturnnCommonSerializer(network=network)

    one, two = make(first), make(second)
    refs = _refs(one.network)
    derived_from = {id(dep) for ref in refs if ref.op is not None for dep in _refs([ref])}
    plain = [r for r in refs if r.op is None and r.copy_of is None and r.global_name is None and not r.auto_generated]
    assume(plain)
    changed_matches = changed_inputs = changed = False
    for ref in plain:
        i = int(ref.description.rpartition("#")[2])
        matches = [{name for name in names if name in words[i].lower()} for words in (first, second)]
        changed_matches |= matches[0] != matches[1]
        changed_inputs |= id(ref) in derived_from and first[i] != second[i]
        changed |= first[i] != second[i]
    unreadable = code_texts([one.network])[1]  # a builtin held as a value: code that may read every description
    if changed_matches or (unreadable and changed):
        assert one._sis_hash() != two._sis_hash()
    elif not changed_inputs:
        assert one._sis_hash() == two._sis_hash()

"""Hypothesis strategies for random dim graphs and the dicts that use them, as plain specs that can be built into
real RETURNN dims more than once (e.g. with other descriptions, or in another order)."""

from __future__ import annotations

from typing import Any, Callable

import numpy
from hypothesis import strategies as st
from hypothesis.extra import numpy as numpy_st
from returnn.tensor import Dim, batch_dim, single_step_dim
from returnn.tensor.marked_dim import ImplicitDynSizeDim, ImplicitSparseDim, OptionalDim

from tests.support import net_functions
from tests.support.records import Pair

KINDS = {"spatial": Dim.Types.Spatial, "feature": Dim.Types.Feature, None: None}
MARKERS = {"ImplicitSparseDim": ImplicitSparseDim, "ImplicitDynSizeDim": ImplicitDynSizeDim, "OptionalDim": OptionalDim}
DERIVATIONS: dict[str, Callable[[Dim, Any], Dim]] = {
    "add": lambda d, x: d + x,
    "radd": lambda d, x: x + d,
    "sub": lambda d, x: d - x,
    "mul": lambda d, x: d * x,
    "rmul": lambda d, x: x * d,
    "floordiv": lambda d, x: d // x,
    "ceildiv": lambda d, x: d.ceildiv_right(x),
    "ceildiv_left": lambda d, x: d.ceildiv_left(x),
    "truediv": lambda d, x: d.div_right(x),
    "truediv_left": lambda d, x: d.div_left(x),
}


@st.composite
def dim_specs(draw, max_dims: int = 8) -> list[tuple]:
    """A list of dim specs; each refers only to earlier ones by index. Auto-generated dims carry their description in
    the spec (RETURNN finds two of them equal by it); the others get theirs when built."""
    specs: list[tuple] = []
    for _ in range(draw(st.integers(1, max_dims))):
        choices = ["plain", "global", "auto"] + (["derived", "copy", "marked"] if specs else [])
        what = draw(st.sampled_from(choices))
        if what == "plain":
            size = draw(st.one_of(st.none(), st.integers(1, 2048)))
            specs.append(("plain", draw(st.sampled_from(list(KINDS))), size))
        elif what == "auto":  # few descriptions, so that equal ones occur; they are not cosmetic for these
            # One size per description: RETURNN finds auto-generated dims of one description equal whatever their
            # sizes, yet hashes them by size, so two of other sizes could sit in one set although equal.
            description, size = draw(st.sampled_from([("x", None), ("y", 5), ("", 5), (None, None)]))
            specs.append(("auto", description, size))
        elif what == "global":
            specs.append(("global", draw(st.sampled_from(["batch", "single_step"]))))
        elif what == "derived":
            base = draw(st.integers(0, len(specs) - 1))
            op = draw(st.sampled_from(sorted(DERIVATIONS)))
            other = draw(st.one_of(st.integers(2, 5), st.integers(0, len(specs) - 1).map(lambda i: ("dim", i))))
            if op in ("add", "radd", "mul", "rmul") and draw(st.booleans()):
                other = draw(st.integers(-3, 7))
            specs.append(("derived", op, base, other))
        elif what == "copy":
            specs.append(("copy", draw(st.integers(0, len(specs) - 1)), draw(st.integers(0, 2))))
        else:
            specs.append(("marked", draw(st.sampled_from(sorted(MARKERS))), draw(st.integers(0, len(specs) - 1))))
    return specs


def build_dims(specs: list[tuple], descriptions: Callable[[int], str]) -> list[Any]:
    """Real RETURNN dims from specs; plain dims are described by ``descriptions(i)``. A derivation RETURNN refuses
    (or that collapses to a constant) leaves None, which dict specs skip."""
    dims: list[Any] = []
    for i, spec in enumerate(specs):
        dims.append(_build(spec, dims, descriptions(i)))
    return dims


def _build(spec: tuple, dims: list[Any], description: str) -> Any:
    what = spec[0]
    if what == "plain":
        return Dim(spec[2], description=description, kind=KINDS[spec[1]])
    if what == "auto":
        return Dim(spec[2], description=spec[1], auto_generated=True)
    if what == "global":
        return batch_dim if spec[1] == "batch" else single_step_dim
    if what == "copy":
        base = dims[spec[1]]
        if not isinstance(base, Dim) or base.special or base.is_batch_dim():
            return None
        return base.copy(match_priority=spec[2])
    if what == "marked":
        base = dims[spec[2]]
        return MARKERS[spec[1]](base) if isinstance(base, Dim) else None
    _, op, base_i, other = spec
    base = dims[base_i]
    if isinstance(other, tuple):
        other = dims[other[1]]
        if not isinstance(other, Dim) or other.special or other.is_batch_dim():
            return None
    if not isinstance(base, Dim) or base.special or base.is_batch_dim():
        return None
    try:
        result = DERIVATIONS[op](base, other)
    except Exception:  # RETURNN refuses some combinations (e.g. dividing by a dynamic dim); not our concern
        return None
    return None if result.is_constant_static_dim() else result


#: Where a part (extern_data, network) of a serializer comes from: the raw dicts, or the dicts of one of two
#: serializers converted from the same raw dims (the second also through a pickle round trip). Parts of one origin
#: mixed must still be one dim each.
PART_SOURCES = ("raw", "first", "second", "second pickled")


def part_sources() -> st.SearchStrategy:
    """(source of extern_data, source of network), see :data:`PART_SOURCES`."""
    return st.tuples(st.sampled_from(PART_SOURCES), st.sampled_from(PART_SOURCES))


def size_edits(old) -> st.SearchStrategy:
    """A new static size (or dynamic) for a plain dim edited after conversion, other than ``old``: the sizes of the dims
    derived from it must follow, in the hash and in the code."""
    return st.sampled_from([size for size in (None, 1, 3, 64) if size != old])


#: numpy dtypes of the drawn arrays and scalars: byte orders, sizes and kinds that are written as items or as bytes.
NUMPY_DTYPES = ["<f4", ">f8", "<f2", "<i8", "|u1", "|b1", "<c8", "<U3", "<M8[s]"]
#: Module-level functions and classes, which the written config imports.
IMPORTED = [net_functions.double, net_functions.halve, net_functions.network, net_functions.Scale, Pair, len]


def numpy_scalars() -> st.SearchStrategy:
    """numpy scalars: the item of a 0-d array."""
    return numpy_st.arrays(st.sampled_from(NUMPY_DTYPES).map(numpy.dtype), ()).map(lambda a: a[()])


def numpy_values() -> st.SearchStrategy:
    """numpy arrays (0-d and empty ones too) and scalars."""
    shapes = numpy_st.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
    return st.one_of(numpy_st.arrays(st.sampled_from(NUMPY_DTYPES).map(numpy.dtype), shapes), numpy_scalars())


def leaves(dim_count: int) -> st.SearchStrategy:
    """Values of every kind a net dict holds besides containers (plain ones, numpy's, functions and classes), and
    references to dims by index."""
    return st.one_of(
        st.text(max_size=12),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.none(),
        st.integers(0, max(dim_count - 1, 0)).map(lambda i: ("DIM", i)),
        numpy_values(),
        st.sampled_from(IMPORTED),
    )


def structures(dim_count: int) -> st.SearchStrategy:
    """Nested dicts, lists, tuples, sets (frozensets and tuples with dims in them) and namedtuples over
    :func:`leaves`; dims, frozensets and tuples also as dict keys."""
    dim = st.integers(0, max(dim_count - 1, 0)).map(lambda i: ("DIM", i))
    frozensets = st.lists(st.one_of(st.text(max_size=4), dim), max_size=3).map(lambda xs: ("FROZENSET", tuple(xs)))
    tuples = st.lists(st.one_of(st.text(max_size=4), dim), min_size=1, max_size=3).map(lambda xs: ("TUPLE", tuple(xs)))
    keys = st.one_of(st.text(max_size=8), dim, frozensets, tuples)
    hashable = st.one_of(  # sets in sets, dims in tuples
        st.text(max_size=8), st.integers(), dim, frozensets, tuples, numpy_scalars(), st.sampled_from(IMPORTED)
    )
    return st.recursive(
        leaves(dim_count),
        lambda inner: st.one_of(
            st.dictionaries(keys, inner, max_size=5),
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=3).map(lambda xs: ("TUPLE", xs)),
            st.lists(hashable, max_size=4).map(lambda xs: ("SET", xs)),
            st.tuples(inner, inner).map(lambda xs: ("PAIR", list(xs))),
        ),
        max_leaves=30,
    )


def build_structure(spec: Any, dims: list[Any], reverse_dicts: bool = False) -> Any:
    """The real value of a structure spec; ``reverse_dicts`` inserts dict keys in reverse order."""
    if isinstance(spec, tuple) and spec and spec[0] == "DIM":
        dim = dims[spec[1]]
        return dim if dim is not None else "no-dim"
    if isinstance(spec, tuple) and spec and spec[0] in ("TUPLE", "SET", "FROZENSET", "PAIR"):
        items = [build_structure(x, dims, reverse_dicts) for x in spec[1]]
        kinds = {"TUPLE": tuple, "SET": set, "FROZENSET": frozenset, "PAIR": lambda xs: Pair(*xs)}
        return kinds[spec[0]](items)
    if isinstance(spec, dict):
        items = []
        for k, v in spec.items():  # keys RETURNN finds equal (a dim and its copy) collapse; keep the first, always
            key = build_structure(k, dims, reverse_dicts)
            if all(key != known for known, _ in items):
                items.append((key, build_structure(v, dims, reverse_dicts)))
        return dict(reversed(items) if reverse_dicts else items)
    if isinstance(spec, list):
        return [build_structure(x, dims, reverse_dicts) for x in spec]
    return spec


#: Descriptions of the dims :func:`related_dim_specs` draws, and the names its axis strings read (some are parts of
#: others: RETURNN matches a name as a lowercased substring).
DESCRIPTIONS = ["time", "Frames", "time frames", "feat", "out"]
TAG_NAMES = ["time", "frames", "feat", "x"]
COPY_KINDS = ["same", None, "spatial", "feature"]


@st.composite
def related_dim_specs(draw, max_dims: int = 10) -> list[tuple]:
    """Dims of every kind and relation as specs that refer to earlier ones by index: plain ones (of any kind, size,
    match_priority and a description from :data:`DESCRIPTIONS`), auto-generated ones, the globals, ``same_as``
    copies of any kind (``"same"``: the base's, by ``Dim.copy``) and match_priority, with or without a description
    of their own, and dims derived (by RETURNN's dim math) of any of these."""
    specs: list[tuple] = []
    descriptions = st.sampled_from(range(len(DESCRIPTIONS)))
    for _ in range(draw(st.integers(1, max_dims))):
        what = draw(st.sampled_from(["plain", "auto", "global"] + (["copy", "copy", "derived"] if specs else [])))
        if what == "plain":
            size = draw(st.one_of(st.none(), st.integers(1, 9)))
            specs.append(
                ("plain", draw(st.sampled_from(list(KINDS))), size, draw(descriptions), draw(st.integers(0, 1)))
            )
        elif what == "auto":
            specs.append(("auto",) + draw(st.sampled_from([("x", None), ("y", 5)])))
        elif what == "global":
            specs.append(("global", draw(st.sampled_from(["batch", "single_step"]))))
        elif what == "copy":
            base, kind = draw(st.integers(0, len(specs) - 1)), draw(st.sampled_from(COPY_KINDS))
            specs.append(("copy", base, kind, draw(st.integers(0, 2)), draw(st.one_of(st.none(), descriptions))))
        else:
            base, op = draw(st.integers(0, len(specs) - 1)), draw(st.sampled_from(sorted(DERIVATIONS)))
            other = draw(st.one_of(st.integers(1, 3), st.integers(0, len(specs) - 1).map(lambda i: ("dim", i))))
            specs.append(("derived", op, base, other))
    return specs


def build_related_dims(specs: list[tuple]) -> list[Any]:
    """Real RETURNN dims of :func:`related_dim_specs`; None where RETURNN refuses the relation."""
    dims: list[Any] = []
    for spec in specs:
        if spec[0] == "plain":
            _, kind, size, description, match_priority = spec
            dims.append(
                Dim(size, description=DESCRIPTIONS[description], kind=KINDS[kind], match_priority=match_priority)
            )
        elif spec[0] == "copy":
            dims.append(_related_copy(dims[spec[1]], *spec[2:]))
        else:
            dims.append(_build(spec, dims, ""))
    return dims


def _related_copy(base: Any, kind: Any, match_priority: int, description: Any) -> Any:
    """A ``same_as`` copy: by ``Dim.copy`` for the base's kind, else made as ``Dim.copy`` makes one (which cannot
    give it no kind)."""
    if not isinstance(base, Dim) or base.special or base.is_batch_dim() or base.auto_generated:
        return None
    description = None if description is None else DESCRIPTIONS[description]
    if kind == "same":
        return base.copy(match_priority=match_priority, description=description)
    copy = Dim(
        base.dimension, description=description or base.description, kind=KINDS[kind], match_priority=match_priority
    )
    copy.same_as = base
    return copy

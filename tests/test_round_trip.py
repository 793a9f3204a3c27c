"""What the written config loads as in RETURNN is what was hashed: no state shared between serializers, no dim name
that the written code binds otherwise, copies and derived dims as RETURNN makes them, dict keys and numpy values
hashed by what they load as, and what has no code form refused with its path."""

from __future__ import annotations

import builtins
import keyword
import math
import os
import subprocess
import sys
import types

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from i6_core.returnn.config import CodeWrapper
from returnn.tensor import Dim, Tensor, batch_dim, single_step_dim
from returnn.tensor._dim_extra import Op
from returnn.tensor.marked_dim import ImplicitSparseDim
from sisyphus.delayed_ops import DelayedFormat

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._hashing.walks import dims_in
from i6_rc_jobs._hashing.sis_hash import canonical_form
from tests.support import net_functions
from tests.support.dim_graphs import TAG_NAMES, build_related_dims, related_dim_specs
from tests.support.dims import DimMap, assert_equal_up_to_dims
from tests.support.records import Pair
from tests.test_serializer import REPO, load


def _time() -> Dim:
    return Dim(None, description="time", kind=Dim.Types.Spatial)


def _feature() -> Dim:
    return Dim(5, description="feature", kind=Dim.Types.Feature)


def _hash(network: dict) -> bytes:
    return ReturnnCommonSerializer(network=network)._sis_hash()


def _code(network: dict) -> str:
    return ReturnnCommonSerializer(network=network).get()


# Shared mutable globals.


def _with_globals() -> ReturnnCommonSerializer:
    time = _time()
    extern_data = {"data": {"dim_tags": [batch_dim, time, _feature()]}}
    network = {"loop": {"class": "rec", "axis": single_step_dim, "from": "data", "t": time + 1}}
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)


def test_the_globals_are_frozen_so_that_a_bulk_rename_of_one_serializer_leaves_every_other_as_it_was():
    renamed, other = _with_globals(), _with_globals()
    code, digest = other.get(), other._sis_hash()
    refs = list(dims_in([renamed.extern_data, renamed.network]))
    for i, ref in enumerate(refs):
        if ref.global_name is not None:
            for field, value in (("code", f"renamed_{i}_dim"), ("description", "renamed"), ("kind", "feature")):
                with pytest.raises(SerializationError, match=rf"^<root>: DimRef '{ref.global_name}' is RETURNN's glo"):
                    setattr(ref, field, value)
        else:
            ref.code = f"renamed_{i}_dim"
    assert other.get() == code and other._sis_hash() == digest
    loaded = load(other.get())
    assert loaded["extern_data"]["data"]["dim_tags"][0] is batch_dim
    assert loaded["network"]["loop"]["axis"] is single_step_dim
    assert "renamed_" in renamed.get() and load(renamed.get())["network"]["loop"]["axis"] is single_step_dim


def _bound_names(code: str) -> set[str]:
    """Every name the written code binds or calls: what it defines and imports, and every name its code objects
    load, store or take as parameters (get_network's epoch and kwargs), with the builtins and keywords."""
    namespace = load(code)
    names = set(namespace) - {"__builtins__"}
    stack = [compile(code, "config.py", "exec")]
    while stack:
        code_object = stack.pop()
        names.update(code_object.co_names, code_object.co_varnames)
        stack.extend(const for const in code_object.co_consts if isinstance(const, types.CodeType))
    return names | set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)


def _everything() -> ReturnnCommonSerializer:
    """Every kind of value the written code imports, calls or defines a name for."""
    time, classes = _time(), Dim(3, description="classes", kind=Dim.Types.Feature)
    values = {
        "marked": ImplicitSparseDim(classes),
        "namedtuple": Pair(1, 2),
        "function": net_functions.double,
        "items": numpy.array([0.5, 1.0], dtype=numpy.float32),
        "bytes": numpy.arange(2000, dtype=numpy.float32),
        "scalar": numpy.float32(1.5),
        "nan": float("nan"),
        "complex": complex(1, 2),
        "sets": [{time}, frozenset({classes})],
        "single_step": single_step_dim,
    }
    extern_data = {"data": {"dim_tags": [batch_dim, time, classes]}}
    return ReturnnCommonSerializer(extern_data=extern_data, staged_networks={1: {"x": values}, 5: {"y": time + 1}})


def test_dim_names_the_written_config_binds_or_calls_are_refused_at_assignment():
    serializer = _everything()
    code = serializer.get()
    dims = set(serializer.dim_names())
    names = _bound_names(code) - dims
    assert {"get_network", "epoch", "kwargs", "Dim", "ImplicitSparseDim", "array", "frombuffer", "b64decode"} <= names
    ref = next(ref for ref in dims_in([serializer.extern_data]) if ref.global_name is None)
    for name in sorted(names):
        with pytest.raises(SerializationError) as error:
            ref.code = name
        message = str(error.value)
        assert message.startswith(f"<root>: DimRef {ref.name!r}: code = {name!r}") and "\n" not in message, message
    for name in ("batch_dim", "single_step_dim"):  # the globals' alone
        with pytest.raises(SerializationError, match="must be an identifier ending in '_dim', not 'batch_dim'"):
            ref.code = name
    ref.code = "renamed_dim"
    assert _bound_names(serializer.get()) - set(serializer.dim_names()) == names
    assert load(serializer.get())["extern_data"]["data"]["dim_tags"][1].description == "time"


# Dims that loaded as other dims.


def _copy(base: Dim, description: str, kind) -> Dim:
    """A ``same_as`` copy as RETURNN makes one that ``Dim.copy`` cannot (another description with kind None)."""
    copy = Dim(base.dimension, description=description, kind=kind)
    copy.same_as = base
    return copy


def test_a_copy_of_unspecified_kind_loads_with_unspecified_kind_and_axis_strings_find_what_they_found():
    time, other = _time(), Dim(None, description="other", kind=Dim.Types.Spatial)
    copy = _copy(time, "time", None)
    ser = ReturnnCommonSerializer(network={"x": {"copy": copy, "other": other}})
    loaded = load(ser.get())["network"]["x"]
    assert loaded["copy"].kind is None and loaded["copy"].get_same_base().kind == Dim.Types.Spatial
    assert loaded["copy"] == loaded["copy"].get_same_base() and loaded["copy"].get_same_base() is not loaded["other"]
    assert _axes([batch_dim, loaded["copy"], loaded["other"]]) == _axes([batch_dim, copy, other])


def _axes(dims: list[Dim]) -> tuple:
    """Which axes of a tensor of ``dims`` RETURNN takes as spatial or as feature axes by their kind (what layers,
    and the axis strings ``"spatial"`` and ``"F"``, go by), and which ``"stag:time"`` finds."""
    tensor = Tensor("x", dims=dims, dtype="float32")
    spatial, feature = [d.is_spatial_dim() for d in dims], [d.is_feature_dim() for d in dims]
    return spatial, feature, tensor.get_axes_by_tag_name("time", spatial_only=True)


def test_a_copys_own_description_is_written_and_found_by_axis_strings_and_hashed_where_they_read_it():
    time, feature = _time(), _feature()
    frames = time.copy(description="frames")
    network = {"x": {"class": "reduce", "axis": "stag:frames", "frames": frames, "t": time, "f": feature}}
    loaded = load(_code(network))["network"]["x"]
    assert loaded["frames"].description == "frames" and loaded["frames"].get_same_base() is loaded["t"]
    tensor = Tensor("x", dims=[batch_dim, loaded["frames"], loaded["f"]], dtype="float32")
    assert tensor.get_axis_by_tag_name("frames", spatial_only=True) == 1
    other = {"x": {**network["x"], "frames": time.copy(description="other frames")}}
    unmatched = {"x": {**network["x"], "frames": time.copy(description="other")}}
    assert _hash(other) == _hash(network) != _hash(unmatched)  # what it matches counts, not the rest
    derived = {"x": {**network["x"], "frames": frames + 1}}  # RETURNN composes "frames+1" of the copy's
    assert load(_code(derived))["network"]["x"]["frames"].description == "frames+1"


COPY_VARIANTS = {
    "kind": lambda base: base.copy(kind=Dim.Types.Spatial),
    "match_priority": lambda base: base.copy(match_priority=1),
    "batch kind": lambda base: base.copy(kind=Dim.Types.Batch),
}


def _reads(dim: Dim) -> tuple:
    """What RETURNN reads of a dim beside its base: its own kind (which axis is the batch, the feature, a spatial
    one), match_priority (which of equal dims an axis is), size."""
    return dim.kind, dim.is_batch_dim(), dim.match_priority, dim.dimension


@pytest.mark.parametrize("variant", sorted(COPY_VARIANTS))
def test_a_copy_that_differs_from_its_base_in_what_returnn_reads_loads_as_it_and_hashes_apart(variant):
    base = _feature()
    copy = COPY_VARIANTS[variant](base)
    assert copy == base and _reads(copy) != _reads(base)
    loaded = load(_code({"x": {"c": copy, "b": base}}))["network"]["x"]
    assert loaded["c"].get_same_base() is loaded["b"] and _reads(loaded["c"]) == _reads(copy)
    assert _hash({"x": {"c": copy, "b": base}}) != _hash({"x": {"c": base, "b": base}})


def test_a_batch_kind_copy_of_another_dim_is_that_dim_s_copy_not_the_batch_dim():
    """RETURNN finds it equal to its base (it compares the bases first), which batch_dim is not."""
    base = _feature()
    copy = base.copy(kind=Dim.Types.Batch)
    loaded = load(_code({"x": {"c": copy, "b": base}}))["network"]["x"]
    assert loaded["c"] is not batch_dim and loaded["c"] == loaded["b"] and not batch_dim.is_equal(loaded["b"])
    assert _hash({"x": {"c": copy, "b": base}}) != _hash({"x": {"c": batch_dim, "b": base}})


def test_a_copy_of_another_size_than_its_base_is_refused():
    """RETURNN takes a tensor's shape from the copy's own size; a written copy has its base's."""
    base = _feature()
    copy = Dim(7, description="feature", kind=Dim.Types.Feature)
    copy.same_as = base
    assert copy == base and Tensor("x", dims=[batch_dim, copy], dtype="float32").batch_shape == (None, 7)
    with pytest.raises(
        SerializationError, match=r"^network\['x'\]\['c'\]: .*a same_as copy of size 7 of a dim of size 5"
    ):
        ReturnnCommonSerializer(network={"x": {"c": copy}})


def _by_hand(op: str, inputs: list) -> Dim:
    """A derived dim made as RETURNN's dim math makes one, but outside it: as after unpickling, or by a tool."""
    return Dim(None, description="made", derived_from_op=Op(op, inputs), kind=Dim.Types.Spatial)


def test_derived_dims_returnn_makes_one_object_are_one_dim_in_the_hash_and_the_code():
    time, one, constant = _time(), Dim(1, description="one"), (_time() + 1).derived_from_op.inputs[1]
    copy = time.copy(match_priority=1)
    by_hand, by_math = [_by_hand("add", [time, one]), _by_hand("add", [time, one])], [
        time + 1,
        _by_hand("add", [copy, constant]),
    ]
    for twins in (by_hand, by_math):
        ser = ReturnnCommonSerializer(network={"x": {"a": twins[0], "b": twins[1], "t": time, "c": copy}})
        loaded = load(ser.get())["network"]["x"]
        assert loaded["a"] is loaded["b"]
        inputs = [x for x in loaded["a"].derived_from_op.inputs if not x.is_constant_static_dim()]
        objects = {id(dim) for dim in (loaded["a"], loaded["t"], loaded["c"], *inputs)}
        canonicalizer, _ = canonical_form(ser)
        assert len(canonicalizer.definitions) == len(objects)
        assert ser._sis_hash() == _hash({"x": {"a": twins[0], "b": twins[0], "t": time, "c": copy}})
    distinct = load(_code({"x": {"a": time + 1, "b": 1 + time, "c": _by_hand("add", [time, one])}}))["network"]["x"]
    assert len({id(distinct["a"]), id(distinct["b"]), id(distinct["c"])}) == 3


# Equal content, other hash; other content, equal hash.


def test_dict_keys_the_written_config_would_load_as_one_are_refused_with_their_path():
    for keys in ([CodeWrapper("k"), CodeWrapper("k")], [DelayedFormat("{}", "k"), DelayedFormat("{}", "k")]):
        network = {"x": {"y": {keys[0]: 1, keys[1]: 2}}}
        with pytest.raises(SerializationError, match=r"^network\['x'\]\['y'\]: keys .* are written alike"):
            _hash(network)
    resolved = ReturnnCommonSerializer(network={"x": {"k": 1, DelayedFormat("{}", "k"): 2}})
    resolved._sis_hash()  # one only the worker can see: the Sisyphus value's value is "k"
    with pytest.raises(SerializationError, match=r"^network\['x'\]: two keys are written as \"k\""):
        resolved.get()
    assert load(_code({"x": {CodeWrapper("1"): 1, CodeWrapper("2"): 2}}))["network"]["x"] == {1: 1, 2: 2}


def test_keys_alike_in_form_are_ordered_by_their_values_whatever_the_insertion_order():
    nan_a, nan_b = float("nan"), float("nan")
    network = {"x": {nan_a: 1, nan_b: [2, nan_a]}}
    assert _hash(network) == _hash({"x": {nan_b: [2, nan_a], nan_a: 1}})
    assert _code(network) == _code({"x": {nan_b: [2, nan_a], nan_a: 1}})
    loaded = load(_code(network))["network"]["x"]
    assert all(math.isnan(key) for key in loaded) and sorted(map(repr, loaded.values())) == ["1", "[2, nan]"]
    assert _hash(network) != _hash({"x": {nan_a: 2, nan_b: [1, nan_a]}})


LONG_DOUBLE = """
import hashlib, sys
import numpy
from i6_rc_jobs import ReturnnCommonSerializer
garbage = [numpy.random.bytes(1 << 16) for _ in range(int(sys.argv[1]))]  # other heap contents in each process
values = {"a": numpy.array([1 / 3, 2.5], dtype=numpy.longdouble), "s": numpy.longdouble(0.1)}
values["c"] = numpy.array([1 / 3 + 1j], dtype=numpy.clongdouble)
values["b"] = values["a"].astype(values["a"].dtype.newbyteorder(">"))
serializer = ReturnnCommonSerializer(network={"x": values})
print(serializer._sis_hash().decode(), hashlib.sha256(serializer.get().encode()).hexdigest())
"""


def test_long_doubles_are_written_and_hashed_without_their_padding_alike_in_every_process():
    runs = {
        subprocess.run(
            [sys.executable, "-c", LONG_DOUBLE, str(garbage)], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
        for garbage in (0, 3, 7)
    }
    assert len(runs) == 1, runs
    values = {"a": numpy.array([1 / 3, 2.5], dtype=numpy.longdouble), "s": numpy.longdouble(0.1)}
    loaded = load(_code({"x": values}))["network"]["x"]
    assert loaded["a"].dtype == values["a"].dtype and (loaded["a"] == values["a"]).all()
    assert type(loaded["s"]) is numpy.longdouble and loaded["s"] == values["s"]


def test_a_numpy_matrix_is_refused_at_construction_with_its_path():
    """It passed as a plain array and loaded as one (its own class has numpy's name for it)."""
    with pytest.raises(SerializationError, match=r"^network\['x'\]: .* is a subclass of a numpy type"):
        ReturnnCommonSerializer(network={"x": numpy.matrix([[1, 2]])})


# Crashes without a path.


def test_sets_mixing_look_alike_dims_and_tuples_of_them_hash_alike_in_any_order_and_load_back():
    a, b = Dim(3, description="a"), Dim(3, description="a")
    elements = [frozenset({a, (b,)}), frozenset({b, (a,)}), frozenset({(a, b)}), "x"]
    networks = [{"x": set(order), "y": [a, b]} for order in (elements, elements[::-1])]
    assert _hash(networks[0]) == _hash(networks[1])
    loaded = load(_code(networks[0]))["network"]
    a, b = loaded["y"]
    assert a is not b and loaded["x"] == {frozenset({a, (b,)}), frozenset({b, (a,)}), frozenset({(a, b)}), "x"}


def test_a_code_wrapper_of_no_str_is_refused_at_construction_and_when_edited_in_with_its_path():
    with pytest.raises(SerializationError, match=r"^network\['x'\]\['y'\]: a CodeWrapper of 5 .* must be a str"):
        ReturnnCommonSerializer(network={"x": {"y": CodeWrapper(5)}})
    ser = ReturnnCommonSerializer(network={"x": {"y": CodeWrapper("z")}})
    ser.network["x"]["y"].code = 5
    with pytest.raises(SerializationError, match=r"^network\['x'\]\['y'\]: a CodeWrapper of 5"):
        ser._sis_hash()
    with pytest.raises(SerializationError, match=r"^network\['x'\]\['y'\]: a CodeWrapper of 5"):
        ser.get()


# The property: random dims of every kind and relation load as themselves.

SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", 200)),
    derandomize="HYPOTHESIS_MAX_EXAMPLES" not in os.environ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _tag_axes(dim: Dim, name: str) -> list[int]:
    """Where RETURNN finds ``stag:<name>`` in a tensor of the batch and ``dim``."""
    return Tensor("x", dims=[batch_dim, dim], dtype="float32").get_axes_by_tag_name(name, spatial_only=True)


@SETTINGS
@given(related_dim_specs(), st.lists(st.sampled_from(TAG_NAMES), max_size=2))
def test_dims_of_every_kind_and_relation_load_with_their_attributes_identities_and_axis_strings(specs, names):
    dims = [dim for dim in build_related_dims(specs) if dim is not None]
    network = {"x": {"dims": dims, "axes": [f"stag:{name}" for name in names]}}
    loaded = load(_code(network))["network"]
    dim_map = DimMap()
    assert_equal_up_to_dims(network, loaded, dim_map)  # kinds, sizes, descriptions, copies, derivations, one-to-one
    for orig, written in zip(dims, loaded["x"]["dims"]):
        if not orig.is_batch_dim() and not orig.special:
            assert [_tag_axes(orig, n) for n in TAG_NAMES] == [_tag_axes(written, n) for n in TAG_NAMES], orig

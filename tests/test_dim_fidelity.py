"""Everything RETURNN acts on in a dim is written and hashed, or refused: dim attributes, derived dims'
size and kind, dims of one origin from several serializers, DimRef fields, and long chains of derived dims."""

from __future__ import annotations

import pathlib
import pickle
import string
import subprocess
import sys

import numpy
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returnn.tensor import Dim, Tensor, batch_dim
from returnn.tensor._dim_extra import Op

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._hashing.sis_hash import canonical_form
from i6_rc_jobs._verify.returnn_check import network_in_new_graph
from i6_rc_jobs._verify.semantics import load_config
from i6_rc_jobs._serialization.refs import DimRef
from tests.support.dims import DimMap, assert_equal_up_to_dims

REPO = pathlib.Path(__file__).resolve().parent.parent


def load(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "config.py", "exec"), namespace)
    return namespace


def _hash(network: dict) -> bytes:
    return ReturnnCommonSerializer(network=network)._sis_hash()


def _time() -> Dim:
    return Dim(None, description="time", kind=Dim.Types.Spatial)


# (2) Dim attributes: each is written and hashed.

ATTRIBUTES = {
    "bounded_by": lambda time: Dim(None, description="x", bounded_by=time),
    "derived_from_tag": lambda time: Dim(None, description="x", derived_from_tag=time),
    "undefined": lambda time: Dim(None, description="x", undefined=True),
    "capacity": lambda time: Dim(5, description="x", capacity=8),
}
WITHOUT = {"capacity": lambda time: Dim(5, description="x")}


@pytest.mark.parametrize("attribute", sorted(ATTRIBUTES))
def test_dim_attribute_is_written_and_hashed(attribute):
    time = _time()
    with_it = ATTRIBUTES[attribute](time)
    without = WITHOUT.get(attribute, lambda t: Dim(None, description="x"))(time)
    network = {"a": {"out_dim": with_it, "time": time}}
    assert _hash(network) != _hash({"a": {"out_dim": without, "time": time}})
    loaded = load(ReturnnCommonSerializer(network=network).get())["network"]["a"]
    dim, loaded_time = loaded["out_dim"], loaded["time"]
    expected = {"bounded_by": loaded_time, "derived_from_tag": loaded_time, "undefined": True, "capacity": 8}
    actual = {
        "bounded_by": dim._extra and dim._extra.bounded_by,
        "derived_from_tag": dim.derived_from_tag,
        "undefined": dim.undefined,
        "capacity": dim.capacity,
    }
    assert actual[attribute] is expected[attribute] or actual[attribute] == expected[attribute]


def test_bounded_by_gives_the_capacity_returnn_derives():
    time = _time()
    loaded = load(ReturnnCommonSerializer(network={"a": {"b": Dim(None, description="b", bounded_by=time)}}).get())
    loaded["time_dim"].capacity = 50  # declared later: RETURNN resolves the bound lazily
    assert loaded["network"]["a"]["b"]._derived_capacity() == 50


@pytest.mark.parametrize("sizes", [None, numpy.array([3, 4], "int32")], ids=["template", "one batch's sizes"])
def test_dyn_size_ext_is_returnn_s_run_time_state_and_neither_written_nor_hashed(sizes):
    """RETURNN makes a template for every dynamic dim used in a Tensor (real returnn_common dims have it) and sets the
    sizes of each batch at run time (returnn_common's own tests serialize dims after a run): it makes both again
    for the written dim, so neither is configuration."""
    time, plain = _time(), _time()
    time.dyn_size_ext = Tensor("sizes", dims=[batch_dim], dtype="int32", raw_tensor=sizes)
    assert _hash({"a": {"t": time}}) == _hash({"a": {"t": plain}})
    assert load(ReturnnCommonSerializer(network={"a": {"t": time}}).get())["time_dim"].dyn_size_ext is None


def _build(config_code: str, extern_data: dict, network: dict):
    """The network RETURNN builds of these dicts, with the config of ``config_code``: a context manager."""
    config = load_config(config_code)
    config.typed_dict["extern_data"] = extern_data
    return network_in_new_graph(config, network, train_flag=False)


def _per_frame(new: Dim, time: Dim) -> tuple[dict, dict]:
    """extern_data and network: range_from_length of a [batch, time] input, whose sizes are over [batch, time]."""
    classes = Dim(5, description="classes", kind=Dim.Types.Feature)
    extern_data = {"lens": {"dim_tags": [batch_dim, time], "sparse_dim": classes, "dtype": "int32"}}
    return extern_data, {"output": {"class": "range_from_length", "from": "data:lens", "out_spatial_dim": new}}


def _template(dim: Dim) -> tuple:
    """Over which dims (the batch, else their descriptions) and of which dtype a dim's sizes are."""
    sizes = dim.get_same_base().dyn_size_ext
    return tuple("B" if d.is_batch_dim() else d.get_same_base().description for d in sizes.dims), sizes.dtype


def test_a_dim_with_sizes_over_batch_and_time_is_written_with_its_template_and_loads_as_it_was():
    """range_from_length of a [batch, time] input makes its dim's sizes over [batch, time] (as SpecAugment and top_k
    loops do): the dim is written with that template (without the sizes), so the written config makes the dim with it,
    over the written dims, as RETURNN built it; building the written config keeps it."""
    time, new = _time(), Dim(None, description="new", kind=Dim.Types.Spatial)
    extern_data, network = _per_frame(new, time)
    with _build(ReturnnCommonSerializer(extern_data=extern_data, network=network).get(), extern_data, network):
        assert _template(new) == (("B", "time"), "int32")
    code = ReturnnCommonSerializer(extern_data=extern_data, network=network).get()
    assert "dyn_size_ext=Tensor(" in code
    loaded = load(code)
    written = loaded["network"]["output"]["out_spatial_dim"]
    sizes = written.get_same_base().dyn_size_ext
    assert sizes.dims == (batch_dim, loaded["time_dim"]) and sizes.raw_tensor is None
    assert _template(written) == _template(new)
    with _build(code, loaded["extern_data"], loaded["network"]):
        assert _template(written) == (("B", "time"), "int32")


def _sized(over: list, new_description: str = "new", time_description: str = "time") -> ReturnnCommonSerializer:
    time = Dim(None, description=time_description, kind=Dim.Types.Spatial)
    new = Dim(None, description=new_description, kind=Dim.Types.Spatial)
    new.dyn_size_ext = Tensor("sizes", dims=[{"B": batch_dim, "T": time}[d] for d in over], dtype="int32")
    extern_data, network = _per_frame(new, time)
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)


def test_a_template_over_batch_and_time_hashes_apart_from_one_over_the_batch():
    assert _sized(["B", "T"])._sis_hash() != _sized(["B"])._sis_hash()
    assert _sized(["B", "T"])._sis_hash() != _sized(["T", "B"])._sis_hash()
    assert _sized(["B"])._sis_hash() == _sized([])._sis_hash()  # RETURNN's defaults: not written


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.text(string.ascii_letters, min_size=1, max_size=8), st.text(string.ascii_letters, min_size=1, max_size=8))
def test_descriptions_of_a_dim_with_a_template_and_of_its_template_s_dims_are_cosmetic(new: str, time: str):
    assume(new.lower() != time.lower())
    assert _sized(["B", "T"], new, time)._sis_hash() == _sized(["B", "T"])._sis_hash()


EXTERN_SIZES = {"[batch, time]": ("batch_time", "int32"), "[]": ("scalar", "int32"), "int64": ("batch", "int64")}


def _extern_data(template: tuple[str, str] | None) -> dict:
    time, frames = _time(), Dim(None, description="frames", kind=Dim.Types.Spatial)
    if template is not None:
        over = {"batch_time": [batch_dim, time], "scalar": [], "batch": [batch_dim]}[template[0]]
        frames.dyn_size_ext = Tensor("frames_sizes", dims=over, dtype=template[1])
    feat = Dim(5, description="feature", kind=Dim.Types.Feature)
    return {"data": {"dim_tags": [batch_dim, time, feat]}, "x": {"dim_tags": [batch_dim, frames, feat]}}


def _size_placeholders(extern_data: dict) -> list[tuple]:
    """The shapes and dtypes of the size placeholders RETURNN makes for ``extern_data``."""
    import tensorflow as tf
    from returnn.tf.network import ExternData

    with tf.Graph().as_default():
        data = ExternData(extern_data)
        data.init_batch_info()
        sizes = [dim.dyn_size_ext.placeholder for key in sorted(data.data) for dim in data.data[key].dims[1:2]]
        return [(tuple(x.shape.as_list()), x.dtype.name) for x in sizes]


@pytest.mark.parametrize("template", sorted(EXTERN_SIZES))
def test_extern_data_dim_with_sizes_that_returnn_would_not_make_for_the_written_dim_is_refused(template):
    """In extern data nothing makes the sizes again: RETURNN feeds sizes shaped (and typed) as the dim's template,
    and for the written dim (no template) per sequence, int32. Such a dim is refused with its path."""
    extern_data = _extern_data(EXTERN_SIZES[template])
    assert _size_placeholders(extern_data) != _size_placeholders(_extern_data(None))
    with pytest.raises(SerializationError, match=r"^extern_data\['x'\]\['dim_tags'\]\[1\]: .*give extern data dims"):
        ReturnnCommonSerializer(extern_data=extern_data)


def test_extern_data_dim_with_sizes_per_sequence_loads_as_it_was_and_hashes_as_a_plain_dim():
    extern_data = _extern_data(("batch", "int32"))
    serializer = ReturnnCommonSerializer(extern_data=extern_data)
    assert serializer._sis_hash() == ReturnnCommonSerializer(extern_data=_extern_data(None))._sis_hash()
    assert _size_placeholders(load(serializer.get())["extern_data"]) == _size_placeholders(extern_data)


# (8) A derived dim's size and kind follow from its op and inputs, as in RETURNN.

OPS = {
    "a + b": lambda a, b, f: a + b,
    "2 * a": lambda a, b, f: 2 * a,
    "a.ceildiv_right(2)": lambda a, b, f: a.ceildiv_right(2),
    "a // 3": lambda a, b, f: a // 3,
    "a.div_left(2)": lambda a, b, f: f.div_left(2),
    "f + a": lambda a, b, f: f + a,
    "a + batch": lambda a, b, f: a + batch_dim,
    "(a + f) * 2": lambda a, b, f: (a + f) * 2,
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_derived_size_and_kind_follow_the_inputs_as_in_returnn(op):
    a, b = Dim(7, description="a", kind=Dim.Types.Spatial), Dim(None, description="b")
    feat = Dim(12, description="f", kind=Dim.Types.Feature)
    derived = OPS[op](a, b, feat)
    ser = ReturnnCommonSerializer(network={"x": {"out_dim": derived, "a": a, "f": feat}})
    ref = ser.network["x"]["out_dim"]
    assert (ref.kind, ref.size) == (derived.kind.name, derived.dimension)
    with pytest.raises(SerializationError, match="size cannot be set on a derived dim"):
        ref.size = 3
    with pytest.raises(SerializationError, match="kind cannot be set on a derived dim"):
        ref.kind = "batch"
    ser.network["x"]["a"].size, ser.network["x"]["f"].size = 10, 20  # the bases, edited
    canonicalizer, _ = canonical_form(ser)
    hashed = canonicalizer.definitions[canonicalizer.index[id(ref)]]
    loaded = load(ser.get())["network"]["x"]["out_dim"]
    size = "?" if loaded.dimension is None else loaded.dimension
    assert hashed.startswith(f"{loaded.kind.name} {size} = "), (hashed, loaded)
    assert (ref.kind, ref.size) == (loaded.kind.name, loaded.dimension)


# (5) DimRefs of one origin (raw, or from several serializers) are one dim.


def _model():
    time, feat = _time(), Dim(5, description="feat", kind=Dim.Types.Feature)
    extern_data = {"data": {"dim_tags": [batch_dim, time, feat]}}
    network = {"out": {"class": "linear", "out_dim": feat.copy(match_priority=1), "from": "data", "t": time // 2}}
    return extern_data, network


def _assert_one_dim(code: str) -> None:
    loaded = load(code)
    _, time, feat = loaded["extern_data"]["data"]["dim_tags"]
    out = loaded["network"]["out"]
    assert out["out_dim"].get_same_base() is feat and out["out_dim"] == feat
    assert out["t"].derived_from_op.inputs[0] is time


def test_dims_of_one_origin_from_two_serializers_are_one_dim():
    extern_data, network = _model()
    one = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    two = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    _assert_one_dim(ReturnnCommonSerializer(extern_data=one.extern_data, network=two.network).get())
    _assert_one_dim(ReturnnCommonSerializer(extern_data=one.extern_data, network=network).get())
    two_again = pickle.loads(pickle.dumps(two))  # the origin survives pickling
    _assert_one_dim(ReturnnCommonSerializer(extern_data=extern_data, network=two_again.network).get())
    mixed = ReturnnCommonSerializer(extern_data=one.extern_data, network=two.network)
    assert mixed._sis_hash() == one._sis_hash()


def test_dims_of_one_origin_that_differ_after_edits_are_refused_with_the_path():
    extern_data, network = _model()
    one = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    one.extern_data["data"]["dim_tags"][2].size = 6
    with pytest.raises(SerializationError, match=r"^network\['out'\]\['out_dim'\]: .*stem from one RETURNN dim"):
        ReturnnCommonSerializer(extern_data=one.extern_data, network=network)


# (11) DimRef fields are checked where data enters.


@pytest.mark.parametrize(
    "field, value",
    [("match_priority", "1"), ("kind", "Dim.Types.Feature"), ("capacity", "8"), ("size", "5"), ("size", True)],
)
def test_dim_ref_fields_are_checked_on_construction_and_assignment(field, value):
    with pytest.raises(SerializationError, match=rf"^<root>: DimRef 'x_dim': {field} = .* must be"):
        DimRef("x_dim", **{field: value})
    ref = DimRef("x_dim")
    with pytest.raises(SerializationError, match=rf"^<root>: DimRef 'x_dim': {field} = .* must be"):
        setattr(ref, field, value)
    with pytest.raises(SerializationError, match="must be an identifier"):
        DimRef("x_dim + 1")


# (13) Long chains of derived dims.


def test_thousands_of_chained_derived_dims_convert_write_and_hash():
    one = Dim(1, description="one")
    dims = [Dim(4, description="d0")]
    for i in range(1, 3000):  # built as RETURNN's dim math does, without its (slow) search for equal dims
        op = Op("add", [dims[-1], one])
        dims.append(Dim(i + 4, description=f"d{i}", derived_from_op=op, kind=Dim.Types.Spatial))
    ser = ReturnnCommonSerializer(network={"a": {"out_dim": dims[-1]}})
    ref = ser.network["a"]["out_dim"]
    assert ref.size == 3003 and ref.kind == "spatial"
    code = ser.get()
    assert "d2999_dim = d2998_dim + one_dim" in code
    assert ser._sis_hash() != ReturnnCommonSerializer(network={"a": {"out_dim": dims[-2]}})._sis_hash()
    again = ReturnnCommonSerializer(network={"b": ser.network["a"]})  # DimRefs of a chain, adopted
    assert again.get().count(" + one") == 2999


def test_dim_refs_edited_into_a_cycle_are_refused():
    ser = ReturnnCommonSerializer(network={"a": {"out_dim": Dim(4, description="a") * 2}})
    derived = ser.network["a"]["out_dim"]
    base = DimRef("b_dim", op="add", inputs=(derived, 1))
    derived.inputs = (base, 2)
    with pytest.raises(SerializationError, match=r"^network\['a'\]\['out_dim'\]: DimRef '.*' is derived from itself"):
        ReturnnCommonSerializer(network=ser.network)
    with pytest.raises(SerializationError, match="is derived from itself"):
        ser._sis_hash()
    with pytest.raises(SerializationError, match="is derived from itself"):
        ser.get()
    with pytest.raises(SerializationError, match="is derived from itself"):
        _ = derived.size


def test_derived_dim_of_another_size_or_kind_than_its_op_gives_is_refused():
    """A dim made with derived_from_op by hand, unlike RETURNN's dim math would make it: the written op would not
    give it back."""
    a = Dim(4, description="a", kind=Dim.Types.Spatial)
    wrong = Dim(9, description="a+1", derived_from_op=Op("add", [a, Dim(1, description="one")]), kind=Dim.Types.Spatial)
    with pytest.raises(SerializationError, match=r"^network\['x'\]: .*kind and size \('spatial', 9\) are not the"):
        ReturnnCommonSerializer(network={"x": wrong})


# A same_as copy of a derived dim keeps its base's derivation (returnn_common's pooled axes).


def test_returnn_searches_the_written_loop_over_a_pooled_axis():
    """returnn_common makes a pooled axis a same_as copy of RETURNN's ceil(time/stride) that carries the derivation;
    the second pooling simplifies to ceil(time/6) on it, the base of the loop's axis. A copy without it makes a dim of
    its own there, and under beam search RETURNN cannot infer the loop's length."""
    from tests import rc_models

    extern_data, network = rc_models.pooled_search()
    config = load_config(ReturnnCommonSerializer(extern_data=extern_data, network=network).get())
    with network_in_new_graph(config, config.typed_dict["network"], train_flag=False, search=True) as net:
        assert net.get_layer("output").output.beam is not None


def test_a_pooled_axis_loads_with_the_derivation_it_had():
    from tests import rc_models

    extern_data, network = rc_models.pooled_search()
    axis = network["loop"]["axis"]
    assert axis.get_same_base() is not axis and axis.derived_from_op is axis.get_same_base().derived_from_op
    loaded = load(ReturnnCommonSerializer(extern_data=extern_data, network=network).get())
    loaded_axis = loaded["network"]["loop"]["axis"]
    assert loaded_axis.derived_from_op is loaded_axis.get_same_base().derived_from_op is not None
    dims = DimMap()  # checks the derivation of every dim, copies among them
    assert_equal_up_to_dims(extern_data, loaded["extern_data"], dims, "extern_data")
    assert_equal_up_to_dims(network, loaded["network"], dims, "network")


def _pooled(keeps_op: bool) -> dict:
    time = _time()
    pooled = time.ceildiv_right(2)
    copy = pooled.copy(description="pooled")
    if keeps_op:  # what RETURNN's declare_same_as gives the copy
        copy = Dim(None, description="pooled", kind=Dim.Types.Spatial, derived_from_op=pooled.derived_from_op)
        copy.same_as = pooled
    return {"a": {"axis": copy, "in": time}}


def test_a_copy_with_its_base_s_derivation_hashes_apart_from_one_without_and_each_loads_as_it_was():
    with_op, without = _pooled(True), _pooled(False)
    assert _hash(with_op) != _hash(without)
    for network, keeps_op in ((with_op, True), (without, False)):
        loaded = load(ReturnnCommonSerializer(network=network).get())["network"]
        assert (loaded["a"]["axis"].derived_from_op is not None) is keeps_op
        assert_equal_up_to_dims(network, loaded, DimMap())


def _window_copy(auto_generated: bool) -> dict:
    window = Dim(3, description="conv:window", kind=Dim.Types.Spatial, auto_generated=True)
    copy = window.copy()  # Dim.copy: not auto-generated
    if auto_generated:  # what RETURNN's declare_same_as gives the copy: its base's auto_generated
        copy = Dim(3, description="conv:window", kind=Dim.Types.Spatial, auto_generated=True)
        copy.same_as = window
    return {"a": {"axis": copy, "in": window}}


def test_an_auto_generated_copy_hashes_apart_from_one_that_is_not_and_each_loads_as_it_was():
    """RETURNN finds two auto-generated dims equal by their descriptions (``Dim.is_equal``), so a copy's own
    auto_generated is written (``Dim.copy`` would drop it) and hashed."""
    auto, plain = _window_copy(True), _window_copy(False)
    assert _hash(auto) != _hash(plain)
    for network, auto_generated in ((auto, True), (plain, False)):
        loaded = load(ReturnnCommonSerializer(network=network).get())["network"]
        assert loaded["a"]["axis"].auto_generated is auto_generated
        assert loaded["a"]["axis"].get_same_base() is loaded["a"]["in"]
        other = Dim(3, description="conv:window", kind=Dim.Types.Spatial, auto_generated=True)
        assert loaded["a"]["axis"].is_equal(other) is auto_generated is network["a"]["axis"].is_equal(other)
        assert_equal_up_to_dims(network, loaded, DimMap())


def _window_sum(own_op: bool) -> dict:
    """A copy of ``time + w // 2`` whose derivation is over another window dim of the same size (returnn_common makes
    a new window dim per call and computes a copy's dim math again), or its base's."""
    time, window, other_window = _time(), Dim(5, description="win"), Dim(5, description="win")
    base = time + window // 2
    op = (time + other_window // 2).derived_from_op if own_op else base.derived_from_op
    copy = Dim(None, description="padded", kind=Dim.Types.Spatial, derived_from_op=op)
    copy.same_as = base
    return {"a": {"axis": copy, "in": time, "windows": [window, other_window]}}


def test_a_copy_with_a_derivation_of_its_own_loads_with_it_and_hashes_apart_from_one_with_its_base_s():
    own, base_s = _window_sum(True), _window_sum(False)
    assert _hash(own) != _hash(base_s)
    for network, own_op in ((own, True), (base_s, False)):
        loaded = load(ReturnnCommonSerializer(network=network).get())["network"]["a"]
        window_of_op = loaded["axis"].derived_from_op.inputs[1].derived_from_op.inputs[0]
        assert window_of_op is loaded["windows"][1 if own_op else 0]
        assert_equal_up_to_dims(network, {"a": loaded}, DimMap())


def test_a_derived_dim_with_a_vocab_loads_with_it_and_hashes_by_it():
    """``declare_same_as`` puts a vocab on a derived dim (returnn_common's ``bpe + 1`` with blank)."""

    def network(labels: list[str]) -> dict:
        bpe = Dim(5, description="bpe", kind=Dim.Types.Feature)
        with_blank = bpe + 1
        with_blank.vocab = Dim(None, vocab={"vocab_file": None, "labels": labels, "unknown_label": None}).vocab
        return {"a": {"out_dim": with_blank, "in": bpe}}

    labels = ["a", "b", "c", "d", "e", "<blank>"]
    original = network(labels)
    loaded = load(ReturnnCommonSerializer(network=original).get())["network"]
    assert loaded["a"]["out_dim"].vocab.labels == labels and loaded["a"]["out_dim"].derived_from_op is not None
    assert_equal_up_to_dims(original, loaded, DimMap())
    assert _hash(original) == _hash(network(labels)) != _hash(network(labels[:5] + ["<b>"]))


def test_a_derived_copy_of_a_dim_that_is_not_derived_is_refused_with_its_path():
    time = _time()
    copy = time.copy(description="pooled")
    copy._extra.derived_from_op = (time // 3).derived_from_op
    with pytest.raises(SerializationError, match=r"^network\['a'\]: .*of a dim that is not derived has no code form"):
        ReturnnCommonSerializer(network={"a": copy})


# A dim's vocab is written as the options RETURNN makes it from.


def _vocab_file(path, labels: list[str]) -> str:
    path.write_text(repr({label: i for i, label in enumerate(labels)}))
    return str(path)


def test_vocabs_of_extern_data_and_network_dims_load_back_equal_and_returnn_constructs_the_written_config(tmp_path):
    from tests import rc_models

    vocab_file = _vocab_file(tmp_path / "vocab.txt", ["<s>", "a", "b", "<unk>"])
    extern_data, network = rc_models.with_vocabs(vocab_file, ["x", "y", "z"])
    code = ReturnnCommonSerializer(extern_data=extern_data, network=network).get()
    loaded = load(code)
    dims = DimMap()  # checks every dim's vocab: class, file, labels, special labels
    assert_equal_up_to_dims(extern_data, loaded["extern_data"], dims, "extern_data")
    assert_equal_up_to_dims(network, loaded["network"], dims, "network")
    target, out = loaded["extern_data"]["classes"]["sparse_dim"].vocab, loaded["out_labels_dim"].vocab
    assert (target.vocab_file, target.labels, target.unknown_label_id) == (vocab_file, ["<s>", "a", "b", "<unk>"], 3)
    assert (out.vocab_file, out.labels, out.unknown_label_id) == (None, ["x", "y", "z"], None)
    assert rc_models.construct(loaded["extern_data"], loaded["network"])[1]


def _vocab_hash(tmp_path, name: str, file_labels: list[str], labels: list[str]) -> bytes:
    from tests import rc_models

    extern_data, network = rc_models.with_vocabs(_vocab_file(tmp_path / name, file_labels), labels)
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)._sis_hash()


def test_another_vocab_moves_the_hash_and_the_same_hashes_alike_in_another_process(tmp_path):
    """Hashed by its options: the file by its path (as Sisyphus hashes an input file), given labels by themselves."""
    digest = _vocab_hash(tmp_path, "vocab.txt", ["a", "<unk>"], ["x", "y"])
    assert _vocab_hash(tmp_path, "vocab.txt", ["a", "<unk>"], ["x", "y"]) == digest
    assert _vocab_hash(tmp_path, "other.txt", ["a", "<unk>"], ["x", "y"]) != digest
    assert _vocab_hash(tmp_path, "vocab.txt", ["a", "<unk>"], ["x", "z"]) != digest
    script = (
        "import sys\n"
        "from i6_rc_jobs import ReturnnCommonSerializer\n"
        "from tests import rc_models\n"
        "extern_data, network = rc_models.with_vocabs(sys.argv[1], ['x', 'y'])\n"
        "sys.stdout.write(ReturnnCommonSerializer(extern_data=extern_data, network=network)._sis_hash().decode())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "vocab.txt")], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == digest.decode()

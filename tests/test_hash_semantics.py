"""A hash changes exactly when behaviour changes: configs RETURNN runs differently hash differently (shown with real
RETURNN where it is RETURNN that tells them apart), and one config hashes alike in every process and set order."""

from __future__ import annotations

import itertools
import os
import pickle
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from i6_core.returnn.config import CodeWrapper, ReturnnConfig
from returnn.tensor import Dim, Tensor, batch_dim
from returnn.tensor.marked_dim import ImplicitSparseDim
from sisyphus import tk
from sisyphus.delayed_ops import DelayedFormat

from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._verify.returnn_check import behavior_version
from i6_rc_jobs._verify.semantics import same_model
from tests.support import net_functions
from tests.support.jobs import MakeCheckpoint
from tests.support.records import Pair

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spatial(description: str) -> Dim:
    return Dim(None, description=description, kind=Dim.Types.Spatial)


def feature(description: str, size: int = 3) -> Dim:
    return Dim(size, description=description, kind=Dim.Types.Feature)


def load(serializer: ReturnnCommonSerializer) -> dict[str, Any]:
    namespace: dict = {}
    exec(compile(serializer.get(), "config.py", "exec"), namespace)
    return namespace


def output_positions(serializer: ReturnnCommonSerializer, layer: str) -> list[int]:
    """Constructs the written config's network with RETURNN and says which of extern_data['data']'s dims (their
    positions) the output of ``layer`` has: what RETURNN computed, by dim identity."""
    import tensorflow as tf
    from returnn.config import Config, global_config_ctx
    from returnn.tf.network import ExternData, TFNetwork

    namespace = load(serializer)
    config = Config({"extern_data": namespace["extern_data"], "behavior_version": 21})
    with behavior_version(21), tf.compat.v1.Graph().as_default(), global_config_ctx(config):
        extern_data = ExternData()
        extern_data.init_from_config(config=config, auto_create_placeholders=True)
        network = TFNetwork(config=config, extern_data=extern_data, train_flag=False)
        network.construct_from_dict(namespace["network"])
        data_dims = namespace["extern_data"]["data"]["dim_tags"]
        return [data_dims.index(dim) for dim in network.get_layer(layer).output.dim_tags]


def reduce_over(axis: Any) -> dict:
    return {"output": {"class": "reduce", "mode": "max", "from": "data", "axis": axis}}


# Finding 1: descriptions that axis strings make RETURNN read.


def _by_description(first: str, second: str, unhashed: tuple[str, ...] = ()) -> ReturnnCommonSerializer:
    dims = [batch_dim, spatial(first), spatial(second), feature("feat")]
    return ReturnnCommonSerializer(
        extern_data={"data": {"dim_tags": dims}}, network=reduce_over("stag:time"), unhashed=unhashed
    )


@pytest.mark.parametrize("unhashed", [(), ("extern_data",)])
def test_which_dim_an_axis_string_finds_by_description_is_hashed(unhashed):
    time_first, time_second = _by_description("time", "frames", unhashed), _by_description("frames", "time", unhashed)
    assert output_positions(time_first, "output") == [0, 2, 3]  # RETURNN reduced the first spatial dim ...
    assert output_positions(time_second, "output") == [0, 1, 3]  # ... and here the second
    assert time_first._sis_hash() != time_second._sis_hash()


def test_renames_that_keep_what_axis_strings_find_keep_the_hash():
    reference = _by_description("time", "frames")
    renamed = _by_description("Time (encoder)", "frames 2")  # RETURNN matches lowercased substrings
    assert output_positions(renamed, "output") == output_positions(reference, "output")
    assert renamed._sis_hash() == reference._sis_hash()
    with pytest.raises(Exception, match="not unique"):  # both match now: RETURNN refuses, so the hash must move
        output_positions(_by_description("time", "time 2"), "output")
    assert _by_description("time", "time 2")._sis_hash() != reference._sis_hash()


def test_descriptions_of_dims_a_derived_dim_is_made_of_are_hashed_when_axis_strings_are_used():
    """RETURNN composes a derived dim's description from its inputs' (``time//2``), so those count in full."""

    def make(description: str) -> ReturnnCommonSerializer:
        time = spatial(description)
        half = time.ceildiv_right(2)
        return ReturnnCommonSerializer(
            extern_data={"data": {"dim_tags": [batch_dim, time, feature("feat")]}},
            network={"a": {"class": "copy", "from": "data", "out_shape": {batch_dim, half}}, **reduce_over("stag:x")},
        )

    assert make("time")._sis_hash() != make("times")._sis_hash()
    without_strings = [ReturnnCommonSerializer(network={"x": spatial(d).ceildiv_right(2)}) for d in ("a", "b")]
    assert without_strings[0]._sis_hash() == without_strings[1]._sis_hash()


# Finding 3: unhashed extern_data keeps which network dims are its dims.


def _reduce_over_data_dim(position: int) -> ReturnnCommonSerializer:
    dims = [batch_dim, spatial("time"), spatial("other"), feature("feat")]
    return ReturnnCommonSerializer(
        extern_data={"data": {"dim_tags": dims}}, network=reduce_over(dims[position]), unhashed=["extern_data"]
    )


def test_unhashed_extern_data_keeps_which_network_dims_are_its_dims():
    over_time, over_other = _reduce_over_data_dim(1), _reduce_over_data_dim(2)
    assert output_positions(over_time, "output") != output_positions(over_other, "output")
    assert over_time._sis_hash() != over_other._sis_hash()


def test_unhashed_extern_data_values_stay_out_of_the_hash():
    def make(size: int) -> ReturnnCommonSerializer:
        time = spatial("time")
        extern_data = {"data": {"dim_tags": [batch_dim, time, feature("feat", size)]}}
        return ReturnnCommonSerializer(extern_data=extern_data, network=reduce_over(time), unhashed=["extern_data"])

    assert make(3)._sis_hash() == make(40)._sis_hash()


# Finding 4: every kind of value has an encoding no other value produces.


def test_code_wrappers_cannot_spell_other_code_wrappers():
    one = ReturnnCommonSerializer(network={"x": [CodeWrapper("'>, <code 5'")]})
    two = ReturnnCommonSerializer(network={"x": [CodeWrapper("'"), CodeWrapper("5'")]})
    assert load(one)["network"]["x"] != load(two)["network"]["x"]  # the code RETURNN runs differs
    assert one._sis_hash() != two._sis_hash()
    plain = ReturnnCommonSerializer(network={"x": [CodeWrapper("lambda x: x")]})
    assert plain._sis_hash() != ReturnnCommonSerializer(network={"x": [CodeWrapper("lambda x: x ")]})._sis_hash()


def test_marked_dims_and_namedtuples_are_never_taken_for_plain_tuples_as_dict_keys():
    classes = feature("classes", 10)

    def marked(first: int, second: int) -> ReturnnCommonSerializer:
        return ReturnnCommonSerializer(
            network={"a": classes, "x": {ImplicitSparseDim(classes): first, ("ImplicitSparseDim", classes): second}}
        )

    def pair(first: int, second: int) -> ReturnnCommonSerializer:
        return ReturnnCommonSerializer(
            network={"a": classes, "x": {Pair(classes, 1): first, (f"{Pair.__module__}.Pair", classes, 1): second}}
        )

    for make in (marked, pair):
        assert len(load(make(1, 2))["network"]["x"]) == 2
        assert make(1, 2)._sis_hash() != make(5, 2)._sis_hash()


# Finding 7: ties of look-alike dims, ordered by content alone.


def _cycle(order: list[int], n: int = 3) -> ReturnnCommonSerializer:
    """``{(d0, d1), (d1, d2), ..., (d(n-1), d0)}`` of dims alike in everything, made and put in in ``order``."""
    dims: dict[int, Dim] = {}
    for i in order:
        dims[i] = feature(f"d{i}", 5)
    edges = [(dims[i], dims[(i + 1) % n]) for i in order]
    return ReturnnCommonSerializer(network={"k": set(edges)})


def test_a_cycle_of_look_alike_dims_hashes_alike_whatever_the_set_order():
    hashes = {_cycle(list(order))._sis_hash() for order in itertools.permutations(range(3))}
    hashes |= {_cycle(list(order), 4)._sis_hash() for order in itertools.permutations(range(4))}
    assert len(hashes) == 2  # one per cycle length


def test_a_cycle_of_look_alike_dims_hashes_alike_in_every_process_and_hash_diff_finds_it_identical(tmp_path):
    script = textwrap.dedent("""
        import pickle, sys
        from tests.test_hash_semantics import _cycle
        serializer = _cycle([2, 4, 0, 3, 1], 5)
        pickle.dump(serializer, open(sys.argv[1], "wb"))
        print(serializer._sis_hash().decode())
        with open(sys.argv[1], "rb") as f:
            print(pickle.load(f)._sis_hash().decode())
        """)
    hashes = set()
    for seed in range(4):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = tmp_path / f"{seed}.pkl"
        done = subprocess.run(
            [sys.executable, "-c", script, str(out)], capture_output=True, text=True, env=env, cwd=REPO
        )
        assert done.returncode == 0, done.stderr[-3000:]
        hashes.update(done.stdout.splitlines())
    assert len(hashes) == 1
    diff = subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "hash-diff", str(tmp_path / "0.pkl"), str(tmp_path / "0.pkl")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert (diff.returncode, diff.stdout.strip()) == (0, "identical"), diff.stdout + diff.stderr


def test_structures_of_look_alike_dims_are_told_apart():
    """Two triangles and a hexagon of look-alike dims: alike to every dim (each in two edges), not alike as wholes;
    and a cycle against a pair of loops."""
    dims = [feature(f"d{i}", 5) for i in range(6)]
    triangles = {(dims[i], dims[j]) for i, j in ((0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3))}
    hexagon = {(dims[i], dims[(i + 1) % 6]) for i in range(6)}
    assert (
        ReturnnCommonSerializer(network={"k": triangles})._sis_hash()
        != ReturnnCommonSerializer(network={"k": hexagon})._sis_hash()
    )
    a, b, c = dims[:3]
    assert (
        ReturnnCommonSerializer(network={"k": {(a, b), (b, c), (c, a)}})._sis_hash()
        != ReturnnCommonSerializer(network={"k": {(a, b), (b, a), (c, c)}})._sis_hash()
    )


def test_structures_too_symmetric_to_order_are_refused_with_their_path():
    dims = [feature(f"d{i}", 5) for i in range(7)]
    complete = {frozenset(pair) for pair in itertools.combinations(dims, 2)}
    serializer = ReturnnCommonSerializer(network={"enc": {"k": complete}})
    with pytest.raises(SerializationError, match=r"^network\['enc'\]\['k'\]: .*too symmetric"):
        serializer._sis_hash()


# Finding 10: Sisyphus values as a CodeWrapper's code.


def test_a_code_wrapper_of_a_job_output_is_an_input_and_hashed_by_its_job(tmp_path):
    def config(name: str) -> ReturnnConfig:
        path = MakeCheckpoint(name).out
        network = {"x": {"class": "copy", "init": CodeWrapper(DelayedFormat("load('{}')", path))}}
        return ReturnnConfig({}, python_prolog=[ReturnnCommonSerializer(network=network)])

    job = CreateConfigJob(config("code wrapper a"))
    assert [p.creator for p in job._sis_inputs] == [MakeCheckpoint("code wrapper a")]
    assert CreateConfigJob(config("code wrapper b")) is not job


def test_a_code_wrapper_of_an_unset_variable_hashes_without_its_value_and_writes_it(tmp_path):
    variable = tk.Variable(str(tmp_path / "n"))
    serializer = ReturnnCommonSerializer(network={"x": {"n": CodeWrapper(DelayedFormat("{} + 1", variable))}})
    hash_before = serializer._sis_hash()  # raised before: the Variable has no value yet
    ReturnnConfig({"n": CodeWrapper(DelayedFormat("{} + 1", variable))})._sis_hash()  # as plain i6_core hashes it
    variable.set(41)
    assert load(serializer)["network"]["x"]["n"] == 42
    assert serializer._sis_hash() == hash_before


def test_pickled_serializer_keeps_its_hash():
    serializer = _by_description("time", "frames")
    assert pickle.loads(pickle.dumps(serializer))._sis_hash() == serializer._sis_hash()


# Descriptions and variable names that code reads.


def _two_spatial(first: str, second: str, network: dict) -> ReturnnCommonSerializer:
    dims = [batch_dim, spatial(first), spatial(second), feature("feat")]
    return ReturnnCommonSerializer(extern_data={"data": {"dim_tags": dims}}, network=network)


def test_a_description_an_eval_string_reads_is_hashed():
    code = "tf.reduce_max(source(0), axis=source(0, as_data=True).get_axis_from_description('stag:time'))"
    network = {"output": {"class": "eval", "from": "data", "eval": code}}
    time_first, time_second = _two_spatial("time", "frames", network), _two_spatial("frames", "time", network)
    found = []
    for serializer in (time_first, time_second):
        data = Tensor("data", dims=load(serializer)["extern_data"]["data"]["dim_tags"], dtype="float32")
        found.append(data.get_axis_from_description("stag:time"))  # what the eval code computes
    assert found == [1, 2]
    assert time_first._sis_hash() != time_second._sis_hash()


def test_a_dim_a_code_wrapper_names_is_hashed_by_its_name():
    network = reduce_over(CodeWrapper("time_dim"))  # the variable named after the description "time"
    time_first, time_second = _two_spatial("time", "frames", network), _two_spatial("frames", "time", network)
    assert output_positions(time_first, "output") == [0, 2, 3]
    assert output_positions(time_second, "output") == [0, 1, 3]
    assert time_first._sis_hash() != time_second._sis_hash()
    unread = [_two_spatial(*names, reduce_over("T")) for names in (("time", "frames"), ("frames", "time"))]
    assert unread[0]._sis_hash() == unread[1]._sis_hash()  # cosmetic where nothing reads them


def _eval_by(function: Any) -> tuple[ReturnnCommonSerializer, ReturnnCommonSerializer]:
    """An eval layer given as a function, over data whose two spatial dims swap their descriptions."""
    network = {"output": {"class": "eval", "from": "data", "eval": function}}
    return _two_spatial("time", "frames", network), _two_spatial("frames", "time", network)


@pytest.mark.parametrize(
    "function",
    [
        net_functions.time_axis,
        net_functions.time_axis_by_default,
        net_functions.time_axis_by_global,
        net_functions.time_axis_by_closure,
    ],
    ids=["in-its-source", "a-default-argument", "a-global-it-reads", "a-closure"],
)
def test_a_description_a_function_reads_is_hashed(function: Any):
    time_first, time_second = _eval_by(function)
    assert same_model(time_first.get(), time_second.get()) != []  # its output is the index of the axis it finds
    assert time_first._sis_hash() != time_second._sis_hash()


def test_a_function_whose_source_cannot_be_had_reads_every_description():
    unread = _eval_by(net_functions.double)  # its source reads no description: they stay cosmetic
    assert unread[0]._sis_hash() == unread[1]._sis_hash()
    unknown = _eval_by(net_functions.without_source)
    assert unknown[0]._sis_hash() != unknown[1]._sis_hash()


def test_a_code_wrapper_of_a_sisyphus_value_reads_every_description(tmp_path):
    """Its code is known only in the worker: it may be an axis string (here it is "stag:time")."""
    variable = tk.Variable(str(tmp_path / "axis"))
    variable.set("stag:time")
    reduced = reduce_over(CodeWrapper(DelayedFormat("{!r}", variable)))
    time_first, time_second = _two_spatial("time", "frames", reduced), _two_spatial("frames", "time", reduced)
    assert output_positions(time_first, "output") != output_positions(time_second, "output")
    assert time_first._sis_hash() != time_second._sis_hash()

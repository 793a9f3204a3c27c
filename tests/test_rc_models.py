"""
The real returnn_common models of tests/rc_models.py build, keep their Dim objects, and RETURNN constructs them;
and i6_rc_jobs._verify.returnn_check loads hand-written config files and names the failing layer.
TF graph construction only, no training.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from i6_rc_jobs._verify import returnn_check
from i6_rc_jobs._verify.returnn_check import NetworkCheckError, construct_networks
from tests import rc_models
from tests.support.pins import REPO
from tests.support.walk import distinct, leaves


def _dims(obj: Any, found: dict[int, Any]) -> dict[int, Any]:
    """All distinct Dim objects in a nested structure (dict keys too), by identity, added to ``found``."""
    from returnn.tensor import Dim

    found.update(distinct(leaves(obj), Dim))
    return found


def _has_layer_state(obj: Any) -> bool:
    from returnn_common import nn

    if isinstance(obj, nn.LayerState):
        return True
    if isinstance(obj, dict):
        return any(_has_layer_state(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_layer_state(v) for v in obj)
    return False


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[dict, dict]]:
    """Every model built once for this module (the Transformer alone takes seconds)."""
    return {name: builder() for name, builder in rc_models.ALL_BUILDERS.items()}


@pytest.mark.parametrize("name", list(rc_models.ALL_BUILDERS))
def test_model_has_real_dims_and_constructs(built, name: str):
    from returnn.tensor import batch_dim

    extern_data, network = built[name]
    data_dims = extern_data["data"]["dims"]
    assert data_dims[0] is batch_dim
    dims = _dims(network, _dims(extern_data, {}))
    assert len(dims) >= 5
    # The net dict itself refers to the extern data dims by identity, not by copies.
    assert any(id(d) in _dims(network, {}) for d in data_dims[1:])

    layers = rc_models.construct(extern_data, network)[1]
    assert "output" in layers
    if name != "conv_downsampling":  # a front-end without targets
        assert "ce" in layers


def test_model_features(built):
    """Each model contains what it is there for: the hard cases of serialization and hashing."""
    from returnn.tensor import single_step_dim

    def dims_of(name: str) -> list[Any]:
        extern_data, network = built[name]
        return list(_dims(network, _dims(extern_data, {})).values())

    def derived_ops(name: str) -> set[str]:
        return {d.derived_from_op.kind for d in dims_of(name) if d.derived_from_op is not None}

    transformer_dims = dims_of("transformer")
    assert any(d.match_priority != 0 for d in transformer_dims)
    assert any(a == b and a is not b for a, b in itertools.combinations(transformer_dims, 2))
    assert any(d is single_step_dim for d in transformer_dims)

    assert _has_layer_state(built["enc_dec_loop"][1])
    assert any(d is single_step_dim for d in dims_of("enc_dec_loop"))
    assert "floordiv" in derived_ops("enc_dec_loop")
    assert {"floordiv", "ceildiv"} <= derived_ops("conv_downsampling")

    extern_data, _ = built["task12ax_lstm"]
    data_time, data_feat = extern_data["data"]["dims"][1:]
    assert data_feat.dimension == 9 and extern_data["classes"]["sparse_dim"].dimension == 2
    assert extern_data["classes"]["dims"][1] is data_time


def test_builders_are_independent(built):
    """A second build makes fresh dims and does not see the first build's layers."""
    from returnn.tensor import batch_dim

    extern_data, network = rc_models.lstm_stack(num_layers=3)
    shared = set(_dims(extern_data, {})) & set(_dims(built["lstm_stack"][0], {}))
    assert shared == {id(batch_dim)}
    assert len(network["lstms"]["subnetwork"]) == len(built["lstm_stack"][1]["lstms"]["subnetwork"]) + 1


_CONFIG = textwrap.dedent("""\
    #!rnn.py
    from returnn.tensor import Dim, batch_dim

    time_dim = Dim(None, name="time")
    in_dim = Dim(9, name="in", kind=Dim.Types.Feature)
    hidden_dim = Dim(16, name="hidden", kind=Dim.Types.Feature)
    classes_dim = Dim(2, name="classes", kind=Dim.Types.Feature)
    other_dim = Dim(5, name="other")
    use_tensorflow = True
    behavior_version = 21
    extern_data = {
        "data": {"dims": (batch_dim, time_dim, in_dim), "feature_dim": in_dim, "dtype": "float32"},
        "classes": {"dims": (batch_dim, time_dim), "sparse_dim": classes_dim, "dtype": "int32"},
    }
    """)

_NETWORK = textwrap.dedent("""\
    network = {
        "hidden": {"class": "linear", "from": "data", "out_dim": hidden_dim, "activation": "relu"},
        "loop": {"class": "rec", "from": "hidden", "axis": time_dim, "unit": {
            "lin": {"class": "linear", "from": ["data:source", "prev:lin"], "out_dim": hidden_dim},
            "output": {"class": "combine", "kind": "add", "from": ["lin", "data:source"]},
        }},
        "output": {"class": "softmax", "from": "loop", "out_dim": classes_dim, "target": "classes", "loss": "ce"},
    }
    """)


def _write(tmp_path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code)
    return str(path)


def test_construct_networks_from_file(tmp_path):
    config_file = _write(tmp_path, "config.py", _CONFIG + _NETWORK)
    result = construct_networks(config_file, epochs=[1, 5])
    assert list(result) == [1]  # a static network is the same for every epoch: constructed once
    assert {"hidden", "loop", "loop/lin", "output", "data:classes"} <= set(result[1])
    # Loaded again (fresh dims, same process): works as well.
    assert construct_networks(config_file) == result


def test_behavior_version_restored(tmp_path):
    """The config's behavior_version is active only meanwhile, with the version-dependent Dim equality."""
    from returnn.tensor import Dim
    from returnn.util.basic import BehaviorVersion

    config = _CONFIG.replace("behavior_version = 21", "behavior_version = 12") + _NETWORK
    config_file = _write(tmp_path, "config.py", config)
    # noinspection PyProtectedMember
    prev_state = BehaviorVersion._get_state()
    try:
        # noinspection PyProtectedMember
        BehaviorVersion._reset()
        BehaviorVersion.set(16)  # as returnn_common leaves it after building a model
        eq_16 = Dim.__eq__
        construct_networks(config_file)
        assert BehaviorVersion.get_if_set() == 16 and Dim.__eq__ is eq_16
    finally:
        # noinspection PyProtectedMember
        BehaviorVersion._reset(prev_state)
        # noinspection PyProtectedMember
        BehaviorVersion._handle_new_min_version()


_GET_NETWORK = textwrap.dedent("""\
    def get_network(epoch, **_kwargs):
        net = {
            "output": {"class": "softmax", "from": "data", "out_dim": classes_dim, "target": "classes", "loss": "ce"},
        }
        if epoch >= 5:
            net["hidden"] = {"class": "linear", "from": "data", "out_dim": hidden_dim, "loss": "as_is"}
        return net
    """)


def test_get_network_per_epoch(tmp_path):
    config_file = _write(tmp_path, "config.py", _CONFIG + _GET_NETWORK)
    result = construct_networks(config_file, epochs=[1, 5])
    assert sorted(result) == [1, 5]
    assert "hidden" not in result[1] and "hidden" in result[5]


@pytest.mark.parametrize(
    "bad_layer, replace",
    [
        # A dim the input does not have; also: the error must name the layer inside the rec loop.
        ("loop/lin", ('"from": ["data:source", "prev:lin"]', '"from": "data:source", "in_dim": other_dim')),
        # Reference to a layer which does not exist: the referring layer is the bad one.
        ("output", ('"from": "loop", "out_dim"', '"from": "lop", "out_dim"')),
    ],
)
def test_failing_layer_is_named(tmp_path, bad_layer: str, replace: tuple[str, str]):
    assert replace[0] in _NETWORK
    config_file = _write(tmp_path, "bad.py", _CONFIG + _NETWORK.replace(*replace))
    with pytest.raises(NetworkCheckError) as exc_info:
        construct_networks(config_file, epochs=[3])
    exc = exc_info.value
    assert (exc.config_file, exc.epoch, exc.layer_name) == (config_file, 3, bad_layer)
    assert str(exc).startswith(f"{config_file}, epoch 3, layer {bad_layer!r}: ")


@pytest.mark.slow
def test_cli(tmp_path):
    """In a process of its own, as CreateConfigJob runs it (it loads the config as rnn.py does, which sets the
    process's behavior version once)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}

    def check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, returnn_check.__file__, *args], capture_output=True, text=True, env=env)

    good = _write(tmp_path, "good.py", _CONFIG + _NETWORK)
    done = check(good, "--epochs", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    # data, data:classes, hidden, loop, loop/data:source, loop/lin, loop/output, output
    returnn_line, layers_line = done.stdout.splitlines()
    assert returnn_line.startswith("RETURNN ") and returnn_line.endswith(
        " from " + str(REPO / ".deps" / "src" / "returnn")
    )
    assert layers_line == "epoch 2: RETURNN constructed 8 layers"
    bad = _write(tmp_path, "bad.py", _CONFIG + _NETWORK.replace('"class": "softmax"', '"class": "no_such_class"'))
    done = check(bad)
    assert done.returncode == 1
    assert f"{bad}, epoch 1, layer 'output':" in done.stderr and "no_such_class" in done.stderr


def test_import_does_not_load_tensorflow():
    code = "import sys, i6_rc_jobs._verify.returnn_check; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    subprocess.run([sys.executable, "-c", code], check=True)

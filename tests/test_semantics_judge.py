"""
The judge of i6_rc_jobs/_verify/semantics.py, with real RETURNN: configs that define the same model have no differences
(also with other names of non-parameter layers and another axis order inside), configs that define another model
(another activation, param shape, initializer) have exactly the differences that say so.
"""

from __future__ import annotations

from typing import Any

import numpy
import pytest
import tensorflow as tf
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs._verify.returnn_check import network_in_new_graph
from tests import rc_models
from i6_rc_jobs._verify.semantics import fingerprint, load_config, same_model

TIME = Dim(None, description="time", kind=Dim.Types.Spatial)
IN = Dim(5, description="in", kind=Dim.Types.Feature)
EXTERN_DATA = {"data": {"dims": (batch_dim, TIME, IN), "dtype": "float32"}}


def code(network: dict[str, Any], extern_data: dict[str, Any] = EXTERN_DATA) -> str:
    return ReturnnCommonSerializer(extern_data=extern_data, network=network).get()


def linear_net(
    *,
    hidden: int = 6,
    activation: str = "relu",
    weight_init: dict[str, Any] | None = None,
    bias_init: float = 0.0,
    init_name: str = "weight_init",
    sum_name: str = "sum",
    transposed: bool = False,
) -> dict[str, Any]:
    """A linear layer and an activation as returnn_common writes them: params are ``variable`` layers, the weight
    initialized by a static ``random`` layer. ``transposed``: the output is [out, time, batch]."""
    out = Dim(hidden, description="out", kind=Dim.Types.Feature)
    weight_init = weight_init or {"distribution": "uniform", "minval": -0.5, "maxval": 0.5}
    return {
        init_name: {"class": "random", "shape": (IN, out), "static": True, "dtype": "float32", **weight_init},
        "weight": {"class": "variable", "shape": [IN, out], "init_by_layer": init_name, "param_name": "param"},
        "bias": {"class": "variable", "shape": [out], "init": bias_init, "param_name": "param"},
        "dot": {"class": "dot", "from": ["data", "weight"], "reduce": IN},
        sum_name: {"class": "combine", "kind": "add", "from": ["dot", "bias"]},
        "activated" if transposed else "output": {"class": "activation", "activation": activation, "from": sum_name},
        **(
            {"output": {"class": "transpose", "from": "activated", "perm": [out, TIME, batch_dim]}}
            if transposed
            else {}
        ),
    }


@pytest.fixture(scope="module")
def reference() -> Any:
    return fingerprint(code(linear_net()))


def test_the_same_config_twice_is_the_same_model(reference):
    again = fingerprint(code(linear_net()))
    assert again.differences(reference) == [] and reference.differences(again) == []
    assert reference.params == {"weight/param": (5, 6), "bias/param": (6,)}
    assert reference.output_dims == ("B", "T[13, 9]", "F6")
    assert reference.output.shape == (2, 13, 6) and (reference.output[1, 9:] == 0).all()  # padding frames zeroed
    assert (reference.output[:, :9] > 0).any()  # relu of something that is not all zero


def test_names_of_non_parameter_layers_do_not_count(reference):
    """The sum and the random layer renamed (all references too): the init text has no names, no seeds."""
    renamed = fingerprint(code(linear_net(sum_name="pre_activation", init_name="Parameter.initial")))
    assert renamed.differences(reference) == []


def test_the_axis_order_of_the_output_does_not_count(reference):
    """The output transposed by RETURNN's transpose layer: the same model, its output in another order."""
    transposed = load_config(code(linear_net(transposed=True)))
    with network_in_new_graph(transposed, transposed.typed_value("network"), train_flag=False) as network:
        dims = network.get_default_output_layer().output.dims
        assert [dim.description for dim in dims] == ["out", "time", "global batch"]
    assert fingerprint(code(linear_net(transposed=True))).differences(reference) == []


def two_projections(order: tuple[str, str]) -> dict[str, Any]:
    """The sum of two linear maps of the data, each weight with its own static random init; RETURNN constructs (and
    draws the seeds of) the summands in ``order``."""
    out = Dim(3, description="out", kind=Dim.Types.Feature)
    net: dict[str, Any] = {"output": {"class": "combine", "kind": "add", "from": list(order)}}
    for name, bound in (("a", 0.1), ("b", 0.2)):
        net[f"{name}_init"] = {
            "class": "random",
            "shape": (IN, out),
            "static": True,
            "distribution": "uniform",
            "bound": bound,
        }
        net[f"{name}_weight"] = {"class": "variable", "shape": [IN, out], "init_by_layer": f"{name}_init"}
        net[name] = {"class": "dot", "from": ["data", f"{name}_weight"], "reduce": IN}
    return net


def test_seeds_do_not_count():
    """The same sum, its summands constructed in the other order: RETURNN draws their static seeds the other way
    round (so the initial values differ), the initializers are the same."""
    ab, ba = code(two_projections(("a", "b"))), code(two_projections(("b", "a")))
    initial_values = []
    for config_code in (ab, ba):
        config = load_config(config_code)
        with network_in_new_graph(config, config.typed_value("network"), train_flag=False) as network:
            with tf.compat.v1.Session() as session:
                initial_values.append(session.run(network.get_layer("a_weight").output.placeholder.initial_value))
    assert not numpy.allclose(*initial_values)
    assert same_model(ab, ba) == []


def test_another_activation_is_another_output(reference):
    (line,) = fingerprint(code(linear_net(activation="tanh"))).differences(reference)
    assert line.startswith("output differs: max abs diff ")


def test_another_param_shape_is_another_model(reference):
    assert fingerprint(code(linear_net(hidden=7))).differences(reference) == [
        "param bias/param: shape (7,) != (6,)",
        "param weight/param: shape (5, 7) != (5, 6)",
        "output dims ('B', 'T[13, 9]', 'F7') != ('B', 'T[13, 9]', 'F6')",
    ]


@pytest.mark.parametrize(
    "weight_init, changed",
    [
        ({"distribution": "uniform", "minval": -0.3, "maxval": 0.3}, "value=float32[] 0.30000001192092896"),
        ({"distribution": "uniform", "minval": -0.5, "maxval": 0.6}, "value=float32[] 0.6000000238418579"),
        ({"distribution": "normal", "stddev": 0.5}, "StatelessRandomNormalV2"),
        ({"distribution": "truncated_normal", "stddev": 0.5}, "StatelessTruncatedNormalV2"),
    ],
)
def test_another_random_init_differs_only_in_the_init(reference, weight_init, changed):
    """The output stays the same: variables are set by name, not by their initializer."""
    (line,) = fingerprint(code(linear_net(weight_init=weight_init))).differences(reference)
    assert line.startswith("param weight/param: init differs: ") and changed in line


def test_another_constant_init_differs_in_the_init_and_the_output(reference):
    """A constant initial value is where the params are set around (the scale of a norm, a running variance)."""
    init_line, output_line = fingerprint(code(linear_net(bias_init=1.0))).differences(reference)
    ones, zeros = (f"'constant float32[6] {[x] * 6}'" for x in (1.0, 0.0))
    assert init_line == f"param bias/param: init differs: {ones} != {zeros}"
    assert output_line.startswith("output differs: max abs diff ")


def test_a_constant_init_is_its_value_however_tf_computes_it(reference):
    """returnn_common once wrote a zero bias as a zeros layer of its shape (TF: Fill), later as ``init: 0.0``
    (Const): the same initial value."""
    net = linear_net()
    net["zeros"] = {"class": "constant", "value": 0.0, "shape": [net["bias"]["shape"][0]], "dtype": "float32"}
    net["bias"] = {**net["bias"], "init_by_layer": "zeros"}
    del net["bias"]["init"]
    assert fingerprint(code(net)).differences(reference) == []
    net["zeros"]["value"] = 0.5
    assert [line.split(":")[0] for line in fingerprint(code(net)).differences(reference)] == [
        "param bias/param",
        "output differs",
    ]


def _renamed(net: dict[str, Any], old: str, new: str, depth: int = 0) -> dict[str, Any]:
    """``net`` with its top-level layer ``old`` named ``new``, and every reference to it, also from subnetworks."""
    refs = {"base:" * depth + old: "base:" * depth + new}
    renamed = {}
    for name, layer in net.items():
        layer = dict(layer)
        for key in ("from", "init_by_layer"):
            value = layer.get(key)
            if isinstance(value, str):
                layer[key] = refs.get(value, value)
            elif isinstance(value, list):
                layer[key] = [refs.get(item, item) for item in value]
        if "subnetwork" in layer:
            layer["subnetwork"] = _renamed(layer["subnetwork"], old, new, depth + 1)
        renamed[new if depth == 0 and name == old else name] = layer
    return renamed


def test_a_returnn_common_model_is_the_same_model_twice_and_with_a_layer_renamed():
    """nn.LSTM x 2 and nn.Linear: variable layers initialized by static random layers, bias 0."""
    extern_data, network = rc_models.lstm_stack()
    model = fingerprint(code(network, extern_data))
    assert fingerprint(code(network, extern_data)).differences(model) == []
    renamed = _renamed(network, "softmax", "probabilities")
    assert "base:probabilities" in str(renamed["cross_entropy"]) and "softmax" not in renamed
    assert same_model(code(renamed, extern_data), code(network, extern_data)) == []
    assert model.params["lstms/0/param_W/param"] == (40, 256) and model.params["out/bias/param"] == (10,)
    assert len(model.params) == 8
    assert "StatelessRandomUniformV2(%0, <seed>, <seed>, %1)" in model.init["lstms/1/param_W_re/param"]
    assert model.init["out/bias/param"] == "constant float32[10] [0.0" + ", 0.0" * 9 + "]"
    assert model.output_dims == ("B", "T[13, 9]", "F10")


def test_the_transformer_fingerprints():
    """returnn_common's Transformer (1 encoder and 1 decoder layer, the decoder an nn.Loop with teacher forcing)."""
    extern_data, network = rc_models.transformer(num_layers=1)
    model = fingerprint(code(network, extern_data))
    assert fingerprint(code(network, extern_data)).differences(model) == []
    assert model.output_dims == ("B", "T[13, 9]", "F32")  # the target time ("classes" sorts before "data")
    assert model.params["output_projection/weight/param"] == (64, 32)
    assert model.init["encoder/norm/scale/param"] == "constant float32[64] all 1.0"


def test_losses_count_by_score_key_and_value_unless_asked_for_the_model_alone():
    """A renamed loss layer is another score key: the same model (parameters, initialization, output), other behaviour; a loss
    scale is another objective."""
    from tests.test_graph_rules import CASES, serializer

    net, scaled_one, scaled_half = CASES["unset-options"]
    ce = fingerprint(serializer(net, "dict").get())
    renamed = {**{k: v for k, v in net.items() if k != "loss"}, "mean_out": net["loss"]}
    assert ce.differences(fingerprint(serializer(scaled_one, "dict").get())) == []
    assert ce.differences(fingerprint(serializer(renamed, "dict").get())) == ["losses ['loss'] != ['mean_out']"]
    assert ce.differences(fingerprint(serializer(renamed, "dict").get()), losses=False) == []
    (line,) = ce.differences(fingerprint(serializer(scaled_half, "dict").get()))
    assert line.startswith("loss loss differs: ")

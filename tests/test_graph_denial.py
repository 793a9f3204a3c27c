"""The graph hash denies by default (rule "layer-names", i6_rc_jobs/_hashing/layer_options.py): pairs of net dicts
that RETURNN runs differently (other outputs, or one refused) hash differently with ``hash_scheme="graph"``, for
each way a value can hold layers or names that a graph reading it as literal would miss, and each option that is no
mere check. Each pair is built with the real RETURNN (i6_rc_jobs/_verify/semantics.py)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from i6_core.returnn.config import CodeWrapper
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs._verify.semantics import same_model

time_dim = Dim(None, name="time", kind=Dim.Types.Spatial)
in_dim = Dim(5, name="in", kind=Dim.Types.Feature)
hidden_dim = Dim(7, name="hidden", kind=Dim.Types.Feature)
masked_dim = Dim(None, name="masked", kind=Dim.Types.Spatial)
EXTERN_DATA = {
    "data": {"dim_tags": [batch_dim, time_dim, in_dim]},
    "classes": {"dim_tags": [batch_dim, time_dim], "sparse_dim": hidden_dim, "dtype": "int32"},
}

Net = dict[str, Any]


def act(source: Any, activation: str) -> dict:
    return {"class": "activation", "activation": activation, "from": source}


def linear(source: Any, **options: Any) -> dict:
    return {"class": "linear", "from": source, "out_dim": hidden_dim, **options}


def out(source: Any, **options: Any) -> dict:
    return {"class": "copy", "from": source, **options}


def _masked_unit() -> tuple[Net, Net]:
    """returnn_common's ``nn.boolean_mask``: the layer its unit copies is read only there."""

    def net(activation: str) -> Net:
        return {
            "x": act("data", activation),
            "top": {"class": "reduce", "mode": "max", "axis": in_dim, "from": "data"},
            "mask": {"class": "compare", "kind": "greater", "from": "top", "value": 0.0},
            "masked": {
                "class": "masked_computation",
                "mask": "mask",
                "in_spatial_dim": time_dim,
                "out_spatial_dim": masked_dim,
                "unit": {"class": "copy", "from": "x"},
            },
            "output": out("masked"),
        }

    return net("relu"), net("tanh")


def _loop_unit_with_a_note() -> tuple[Net, Net]:
    """A loop body with a note entry (RETURNN skips "#..." keys) reads a layer outside it."""

    def net(activation: str) -> Net:
        unit = {
            "#note": {"says": "the mean input, added per frame"},
            "output": {"class": "combine", "kind": "add", "from": ["data:source", "base:mean"]},
        }
        return {
            "avg": {"class": "reduce", "mode": "mean", "axis": time_dim, "from": "data"},
            "mean": act("avg", activation),
            "output": {"class": "rec", "from": "data", "axis": time_dim, "unit": unit},
        }

    return net("relu"), net("tanh")


def _code_wrapper_names() -> tuple[Net, Net]:
    """Eval code given as a CodeWrapper (here of a lambda) reads a layer by its name: swapping the contents of "x"
    and "y" and the order of the sources keeps every input, so only the name read tells the two apart."""
    code = CodeWrapper(
        "lambda source, self, **_: source(0) + source(1) + self.network.get_layer('x').output.placeholder"
    )

    def net(x: str, y: str, sources: list[str]) -> Net:
        return {"x": act("data", x), "y": act("data", y), "output": {"class": "eval", "from": sources, "eval": code}}

    return net("relu", "tanh", ["x", "y"]), net("tanh", "relu", ["y", "x"])


def _loss_default_target() -> tuple[Net, Net]:
    """A loss without target reads the layer named as the default target ("classes")."""

    def net(activation: str) -> Net:
        return {
            "ff": linear("data"),
            "classes": act("ff", activation),
            "output": out("ff", loss="mse"),
        }

    return net("relu"), net("tanh")


def _default_from_in_a_subnetwork() -> tuple[Net, Net]:
    """Without "from", a layer in a subnetwork reads "data", the subnetwork's input (behaviour version 0)."""

    def net(source: str) -> Net:
        block = {
            "class": "subnetwork",
            "from": source,
            "subnetwork": {"act": {"class": "activation", "activation": "relu"}, "output": out("act")},
        }
        return {"ff": act("data", "tanh"), "gg": act("data", "sigmoid"), "block": block, "output": out("block")}

    return net("ff"), net("gg")


def _axis_names_a_layer() -> tuple[Net, Net]:
    """An axis string finds the window dim of the layer it names ("<layer>:window"): swapping the names of two window
    layers swaps the axes."""

    def window(size: int) -> dict:
        return {"class": "window", "from": "data", "window_size": size, "window_left": size - 1, "window_right": 0}

    def net(x: int, y: int, read: str) -> Net:
        summed = {"class": "reduce", "mode": "sum", "axis": "stag:x:window", "from": read}
        return {"x": window(x), "y": window(y), "summed": summed, "output": out("summed")}

    return net(3, 5, "x"), net(5, 3, "y")


def _out_shape_broadcasts() -> tuple[Net, Net]:
    """out_shape lets a combine broadcast its sources both ways, which RETURNN refuses without it."""

    def net(**options: Any) -> Net:
        return {
            "ff": linear("data"),
            "avg": {"class": "reduce", "mode": "mean", "axis": time_dim, "from": "data"},
            "output": {"class": "combine", "kind": "add", "from": ["ff", "avg"], **options},
        }

    return net(out_shape={batch_dim, time_dim, hidden_dim, in_dim}), net()


def _cond_branch_reads() -> tuple[Net, Net]:
    """A cond layer's branches are subnetworks (as returnn_common's ``nn.Cond`` writes them) that read layers of the
    net by ``base:``: what those compute counts, though only the branches name them."""

    def net(scale: str) -> Net:
        def branch(first: str, second: str) -> dict:
            inner = {"extra": out(f"base:{first}", is_output_layer=True), "output": out(f"base:{second}")}
            return {"class": "subnetwork", "from": [], "subnetwork": inner}

        return {
            "length": {"class": "length", "from": "data", "axis": batch_dim},
            "empty": {"class": "compare", "from": "length", "kind": "equal", "value": 0},
            "scaled": {"class": "eval", "from": "data", "eval": scale},
            "shifted": {"class": "eval", "from": "data", "eval": "source(0) - 0.2"},
            "cond": {
                "class": "cond",
                "from": [],
                "condition": "empty",
                "true_layer": branch("shifted", "scaled"),
                "false_layer": branch("scaled", "shifted"),
            },
            "output": {"class": "combine", "kind": "sub", "from": ["cond", "cond/extra"]},
        }

    return net("source(0) * 0.5"), net("source(0) * 0.5 + source(0)")


#: What each pair shows -> (the pair, the behaviour version to build it with)
PAIRS: dict[str, tuple[Callable[[], tuple[Net, Net]], int]] = {
    "masked-computation-unit": (_masked_unit, 16),
    "loop-unit-with-a-note": (_loop_unit_with_a_note, 16),
    "code-wrapper-names": (_code_wrapper_names, 16),
    "loss-default-target": (_loss_default_target, 16),
    "default-from-in-a-subnetwork": (_default_from_in_a_subnetwork, 0),
    "axis-names-a-layer": (_axis_names_a_layer, 16),
    "out-shape-broadcasts": (_out_shape_broadcasts, 16),
    "cond-branch-reads": (_cond_branch_reads, 16),
}


def serializer(net: Net, scheme: str = "dict") -> ReturnnCommonSerializer:
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme=scheme)


def _config(net: Net, behavior_version: int) -> str:
    return serializer(net).get() + f"\nbehavior_version = {behavior_version}\n"


def _runs_differently(a: Net, b: Net, behavior_version: int) -> bool:
    """RETURNN builds other models of the two, or refuses exactly one."""
    built = []
    for net in (a, b):
        try:
            same_model(_config(net, behavior_version), _config(net, behavior_version))
            built.append(True)
        except Exception:  # RETURNN refuses the net: any error of its construction
            built.append(False)
    if built == [True, True]:
        return same_model(_config(a, behavior_version), _config(b, behavior_version)) != []
    return built[0] != built[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_returnn_runs_the_pair_differently_and_the_graph_hash_tells_them_apart(name: str):
    make, behavior_version = PAIRS[name]
    a, b = make()
    assert _runs_differently(a, b, behavior_version)
    assert serializer(a, "graph")._sis_hash() != serializer(b, "graph")._sis_hash()


def test_a_function_or_sisyphus_value_keeps_every_name():
    """What a function reads is unknown to the graph: with one in the net, renaming any layer moves the hash."""

    def net(name: str) -> Net:
        return {name: act("data", "relu"), "output": {"class": "eval", "from": name, "eval": _evaluated}}

    assert serializer(net("x"), "graph")._sis_hash() != serializer(net("y"), "graph")._sis_hash()
    plain = {name: {**layer, "eval": "source(0)"} if name == "output" else layer for name, layer in net("x").items()}
    renamed = {name: {**layer, "eval": "source(0)"} if name == "output" else layer for name, layer in net("y").items()}
    assert serializer(plain, "graph")._sis_hash() == serializer(renamed, "graph")._sis_hash()


def _evaluated(source: Any, **_: Any) -> Any:
    return source(0)


def test_an_option_not_in_the_table_keeps_its_layers_name():
    def net(name: str, **options: Any) -> Net:
        return {name: {**act("data", "relu"), **options}, "output": out(name)}

    assert serializer(net("x"), "graph")._sis_hash() == serializer(net("y"), "graph")._sis_hash()
    unknown = {"not_an_option": 1}
    assert serializer(net("x", **unknown), "graph")._sis_hash() != serializer(net("y", **unknown), "graph")._sis_hash()


def test_an_int_no_double_holds_keeps_its_spelling_in_a_float_constant():
    """2**60 + 2**36 + 1 in float32: a double rounds it to a tie before float32 rounds again, a single rounding would
    round it up. The pinned TF converts through a double too (it makes the same tensor of both), but the graph hash
    does not rely on how a TF converts: an int a double cannot hold is hashed as written, a smaller one as its
    float (rule "value-spellings")."""

    def net(value: Any) -> Net:
        constant = {"class": "constant", "value": value, "dtype": "float32"}
        return {"c": constant, "ff": linear("data"), "output": {"class": "combine", "kind": "add", "from": ["ff", "c"]}}

    big = 2**60 + 2**36 + 1
    assert serializer(net(big), "graph")._sis_hash() != serializer(net(float(big)), "graph")._sis_hash()
    exact = 2**60 + 2**37
    assert serializer(net(exact), "graph")._sis_hash() == serializer(net(float(exact)), "graph")._sis_hash()


@pytest.mark.parametrize(
    "code, read",
    [
        ("source(0) * 0.5", True),
        ("tf.nn.softmax(tf.cast(source(0), tf.float32))", True),
        ("tf.clip_by_value(source(0), source(1), source(2))", True),
        ("tf.einsum('bi,bi->b', source(0), source(1))", True),
        ("-source(0, auto_convert=False)[:, ::2]", True),
        ("source(0) + self.network.get_layer('x').output.placeholder", False),
        ("source(0) + tf.compat.v1.get_variable('w', shape=())", False),
        ("tf.nn.dropout(source(0), rate=0.1)", False),
        ("source(0).placeholder", False),
        ("source(i)", False),
        ("source(0, as_layer=True)", False),
        ("(lambda: source(0))()", False),
        ("source(0) +", False),
    ],
)
def test_eval_code_is_read_completely_only_of_sources_literals_operators_and_pure_tf_calls(code: str, read: bool):
    """What graph_code reads completely: the rest may name layers, make variables or draw random numbers."""
    from i6_rc_jobs._hashing.graph_code import code_read_completely

    assert code_read_completely({"class": "eval", "eval": code}, "eval") is read
    assert code_read_completely({"class": "eval", "eval": "source(0) * k", "eval_locals": {"k": 2.0}}, "eval")
    assert not code_read_completely({"class": "eval", "eval": "source(0)", "eval_locals": {"tf": None}}, "eval")

"""Each normalization of the graph hash (i6_rc_jobs/_hashing/graph_rules.py), against real RETURNN: two net dicts that
differ only by the rule build the same model (same TF parameters, initialization and output, judged by
i6_rc_jobs/_verify/semantics.py) and hash alike, while the dict hash tells them apart (so the rule is what makes them
equal); and a semantic change next to it builds another model and hashes differently."""

from __future__ import annotations

from typing import Any

import pytest
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs._hashing.graph_rules import RULES
from i6_rc_jobs._verify.semantics import same_model

time_dim = Dim(None, name="time", kind=Dim.Types.Spatial)
in_dim = Dim(5, name="in", kind=Dim.Types.Feature)
hidden_dim = Dim(7, name="hidden", kind=Dim.Types.Feature)
other_dim = Dim(6, name="other", kind=Dim.Types.Feature)
EXTERN_DATA = {"data": {"dim_tags": [batch_dim, time_dim, in_dim]}}

checked = {batch_dim, time_dim, hidden_dim}  # the out_shape of a linear layer of data (rule "out-shape")

Net = dict[str, Any]


def relu(source: str) -> dict:
    return {"class": "activation", "activation": "relu", "from": source}


def tanh(source: str) -> dict:
    return {"class": "activation", "activation": "tanh", "from": source}


def seeded_variable() -> Net:
    """A subnetwork body whose one variable (a non-static random layer of an explicit seed) is named by its scope."""
    weight = {"class": "random", "shape": [in_dim], "distribution": "uniform", "minval": 0.0, "maxval": 1.0}
    return {"w": {**weight, "seed": 3, "static": False}, "output": plus("data", "w")}


def linear(source: Any, out_dim: Dim = hidden_dim, **options: Any) -> dict:
    return {"class": "linear", "from": source, "out_dim": out_dim, **options}


def out(source: Any) -> dict:
    return {"class": "copy", "from": source}


def noise(dim: Dim) -> dict:
    return {"class": "random", "shape": [dim], "distribution": "uniform", "minval": 0.0, "maxval": 1.0, "static": True}


def plus(*sources: str) -> dict:
    return {"class": "combine", "kind": "add", "from": list(sources)}


def noisy(ff: dict, noise_layer: dict) -> Net:
    return {"ff": ff, "noise": noise_layer, "output": plus("ff", "noise")}


def initialized(random_name: str, random_layer: dict) -> Net:
    """A parameter initialized by a random layer, as returnn_common's ``Parameter.initial`` makes it."""
    weight = {"class": "variable", "shape": [in_dim, hidden_dim], "init_by_layer": random_name}
    dot = {"class": "dot", "from": ["data", "weight"], "reduce": in_dim}
    return {random_name: random_layer, "weight": weight, "output": dot}


def initial(**options: Any) -> dict:
    return {"class": "random", "shape": [in_dim, hidden_dim], "distribution": "normal", "static": True, **options}


def offset(value: float, **options: Any) -> dict:
    """A constant over the data's time dim, whose sizes come with the data."""
    return {"class": "constant", "value": value, "shape": [batch_dim, time_dim, hidden_dim], **options}


def scaled_loss(**options: Any) -> dict:
    """A loss on the mean of the output (RETURNN's ``as_is`` loss: the value itself)."""
    return {"class": "reduce", "mode": "mean", "axis": hidden_dim, "from": "act", "loss": "as_is", **options}


def recurrent(initial_state: Any, offset: dict) -> Net:
    """An LSTM from an initial state, plus a constant."""
    lstm = {
        "class": "rec",
        "unit": "standardlstm",
        "from": "data",
        "out_dim": hidden_dim,
        "initial_state": initial_state,
    }
    return {"lstm": lstm, "offset": offset, "output": {"class": "combine", "kind": "add", "from": ["lstm", "offset"]}}


def block(inner: str, output_reads: str) -> dict:
    """A subnetwork layer with an option of its own (concat_sources) around an activation named ``inner``."""
    subnetwork = {inner: relu("data"), "output": out(output_reads)}
    return {"class": "subnetwork", "from": "ff", "concat_sources": True, "subnetwork": subnetwork}


def checked_block(activation: str, subnetwork_checks: bool) -> dict:
    """A subnetwork layer with an option of its own whose output layer checks its out_shape; the subnetwork layer
    checks the same if ``subnetwork_checks``."""
    subnetwork = {"act": {**relu("data"), "activation": activation}, "output": {**out("act"), "out_shape": checked}}
    layer = {"class": "subnetwork", "from": "ff", "concat_sources": True, "subnetwork": subnetwork}
    return {**layer, "out_shape": checked} if subnetwork_checks else layer


def block_of(ff: dict, output: Any = None) -> dict:
    """A subnetwork layer of the input around the layer ``ff``, whose "output" is a copy of ``ff`` or is ``output``."""
    return {"class": "subnetwork", "from": "data", "subnetwork": {"ff": ff, "output": output or out("ff")}}


def projected(block: dict, read: str, **more: dict) -> Net:
    """A net whose output is the dot of ``read`` (the subnetwork layer "block", or a path into it) with a variable."""
    weight = {"class": "variable", "shape": [hidden_dim, other_dim], "init": "glorot_uniform"}
    dot = {"class": "dot", "from": [read, "weight"], "reduce": hidden_dim}
    return {"block": block, "weight": weight, "dot": dot, "output": out("dot"), **more}


def scoped(name_scope: Any, subnetwork: Net) -> dict:
    """A subnetwork layer of the input, with a name_scope if it is not None (returnn_common's ``lstms.0`` of
    2022-04, at ``lstms/0``)."""
    layer = {"class": "subnetwork", "from": "data", "subnetwork": subnetwork}
    return layer if name_scope is None else {**layer, "name_scope": name_scope}


def accumulate(step: str, also: str) -> Net:
    """A loop summing its input over time (``step`` its layer name); each frame's output is the sum plus ``also``."""
    return {
        "ff": linear("data"),
        "loop": {
            "class": "rec",
            "from": "ff",
            "axis": time_dim,
            "unit": {
                step: {"class": "combine", "kind": "add", "from": ["data:source", f"prev:{step}"]},
                "output": {"class": "combine", "kind": "add", "from": [step, also]},
            },
        },
        "output": out("loop"),
    }


#: rule -> (net, the net differing only by the rule, a net with a semantic change next to it)
CASES: dict[str, tuple[Net, Net, Net]] = {
    "layer-names": (
        {"ff": linear("data"), "act": relu("ff"), "output": out("act")},
        {"ff": linear("data"), "relu_0": relu("ff"), "output": out("relu_0")},
        {"ff": linear("data"), "act": {**relu("ff"), "activation": "tanh"}, "output": out("act")},
    ),
    "parameter-scope": (  # variables of explicit seeds (a subnetwork with a linear would shift its seed)
        {"enc": {"class": "subnetwork", "from": "data", "subnetwork": seeded_variable()}, "output": out("enc")},
        {"w": {**seeded_variable()["w"], "name_scope": "enc/w"}, "output": plus("data", "w")},
        {"w": {**seeded_variable()["w"], "name_scope": "enc/w2"}, "output": plus("data", "w")},
    ),
    "subnetwork-namespace": (  # no layer draws from a random generator (see test_a_subnetwork_shifts_the_seeds)
        {
            "ff": relu("data"),
            "block": {"class": "subnetwork", "from": "ff", "subnetwork": {"act": tanh("data"), "output": out("act")}},
            "output": out("block"),
        },
        {"ff": relu("data"), "act": tanh("ff"), "output": out("act")},
        {
            "ff": relu("data"),
            "block": {"class": "subnetwork", "from": "ff", "subnetwork": {"act": tanh("data"), "output": out("data")}},
            "output": out("block"),
        },
    ),
    "subnetwork-scope": (  # a variable of an explicit seed: named by its scope, drawing from no generator
        {"lstms.0": scoped("lstms/0", seeded_variable()), "output": out("lstms.0")},
        {
            "lstms": {
                "class": "subnetwork",
                "from": "data",
                "subnetwork": {"0": scoped(None, seeded_variable()), "output": out("0")},
            },
            "output": out("lstms"),
        },
        {"lstms.0": scoped("lstms/1", seeded_variable()), "output": out("lstms.0")},
    ),
    "subnetwork-output": (  # a net that draws (the linear layers): the subnetwork is no namespace
        projected(block_of(linear("data")), "block/ff"),
        projected(block_of(linear("data")), "block"),
        projected(block_of(linear("data"), relu("ff")), "block"),
    ),
    "copy-alias": (
        {"ff": linear("data"), "act": relu("ff"), "output": out("act")},
        {"ff": linear("data"), "act": relu("ff"), "mid": out("act"), "output": out("mid")},
        {"ff": linear("data"), "act": relu("ff"), "mid": out(["act", "ff"]), "output": out("mid")},
    ),
    "from-list": (
        {"ff": linear("data"), "act": relu("ff"), "output": out("act")},
        {"ff": linear(["data"]), "act": relu(("ff",)), "output": out(["act"])},
        {"ff": linear(["data", "data"]), "act": relu(("ff",)), "output": out(["act"])},
    ),
    "unreached": (
        {"ff": linear("data"), "act": relu("ff"), "output": out("act")},
        {"ff": linear("data"), "act": relu("ff"), "unused": {**relu("ff"), "activation": "tanh"}, "output": out("act")},
        {
            "ff": linear("data"),
            "act": relu("ff"),
            "unused": {**relu("ff"), "activation": "tanh"},
            "output": {"class": "combine", "kind": "add", "from": ["act", "unused"]},
        },
    ),
    "inert-options": (
        noisy(linear("data"), noise(hidden_dim)),
        noisy(linear("data", name_scope="ff"), noise(hidden_dim)),
        noisy(linear("data", name_scope="ff2"), noise(hidden_dim)),
    ),
    "out-shape": (
        {"ff": linear("data", out_shape=checked), "act": relu("ff"), "output": out("act")},
        {
            "ff": linear("data", out_shape=checked),
            "mid": {**out("ff"), "out_shape": checked},
            "act": relu("mid"),
            "output": out("act"),
        },
        {
            "ff": linear("data", out_shape=checked),
            "mid": {**out("ff"), "out_shape": checked},
            "act": {**relu("mid"), "activation": "tanh"},
            "output": out("act"),
        },
    ),
    "unset-options": (
        {"ff": linear("data"), "act": relu("ff"), "output": out("act"), "loss": scaled_loss()},
        {"ff": linear("data"), "act": relu("ff"), "output": out("act"), "loss": scaled_loss(loss_scale=1.0)},
        {"ff": linear("data"), "act": relu("ff"), "output": out("act"), "loss": scaled_loss(loss_scale=0.5)},
    ),
    "value-spellings": (
        recurrent(initial_state=0.0, offset={"class": "constant", "value": 1.0}),
        recurrent(initial_state="zeros", offset={"class": "constant", "value": 1, "dtype": "float32"}),
        recurrent(initial_state="ones", offset={"class": "constant", "value": 1.0}),
    ),
    "scalar-operands": (
        {
            "ff": linear("data"),
            "scaled": {"class": "eval", "from": "ff", "eval": "source(0) - 0.25"},
            "output": out("scaled"),
        },
        {
            "ff": linear("data"),
            "quarter": {"class": "constant", "value": 0.25},
            "scaled": {"class": "combine", "kind": "sub", "from": ["ff", "quarter"]},
            "output": out("scaled"),
        },
        {
            "ff": linear("data"),
            "quarter": {"class": "constant", "value": 0.25},
            "scaled": {"class": "combine", "kind": "sub", "from": ["quarter", "ff"]},
            "output": out("scaled"),
        },
    ),
    "empty-shape-deps": (
        noisy(linear("data"), noise(hidden_dim)),
        noisy(linear("data"), {**noise(hidden_dim), "shape_deps": []}),
        noisy(linear("data"), {**noise(hidden_dim), "shape_deps": [], "maxval": 2.0}),
    ),
    "extern-shape-deps": (
        noisy(linear("data"), noise(hidden_dim)),
        noisy(linear("data"), {**noise(hidden_dim), "shape_deps": "data:data"}),
        noisy(linear("data"), {**noise(hidden_dim), "shape_deps": ["data"], "maxval": 2.0}),
    ),
    "static-random": (
        {"ff": linear("data"), "rnd": noise(hidden_dim), "output": plus("ff", "rnd")},
        {"ff": linear("data"), "random_0": noise(hidden_dim), "output": plus("ff", "random_0")},
        {"ff": linear("data"), "rnd": {**noise(hidden_dim), "maxval": 2.0}, "output": plus("ff", "rnd")},
    ),
    "loops": (  # a rename in a loop that keeps which names sort before which (RETURNN constructs by name there)
        accumulate("acc", "prev:acc"),
        accumulate("add", "prev:add"),
        accumulate("acc", "acc"),
    ),
}


#: More cases of a rule: a subnetwork with an option of its own is no namespace but a layer, yet the names inside it
#: are not hashed either.
MORE_CASES: dict[str, tuple[Net, Net, Net]] = {
    "subnetwork-namespace": (
        {"ff": linear("data"), "block": block("act", "act"), "output": out("block")},
        {"ff": linear("data"), "block": block("relu_0", "relu_0"), "output": out("block")},
        {"ff": linear("data"), "block": block("act", "data"), "output": out("block")},
    ),
    "empty-shape-deps": (
        {"ff": linear("data"), "offset": {"class": "constant", "value": 1.0}, "output": plus("ff", "offset")},
        {
            "ff": linear("data"),
            "offset": {"class": "constant", "value": 1.0, "shape_deps": ()},
            "output": plus("ff", "offset"),
        },
        {
            "ff": linear("data"),
            "offset": {"class": "constant", "value": 2.0, "shape_deps": ()},
            "output": plus("ff", "offset"),
        },
    ),
    "extern-shape-deps": (
        {"ff": linear("data"), "offset": offset(1.0), "output": plus("ff", "offset")},
        {"ff": linear("data"), "offset": offset(1.0, shape_deps=("data:data", "data")), "output": plus("ff", "offset")},
        {"ff": linear("data"), "offset": offset(2.0, shape_deps=["data:data"]), "output": plus("ff", "offset")},
    ),
    "out-shape": (  # returnn_common's subnetworks of 2022-11-06: the out_shape moved to a copy of the subnetwork
        {"ff": linear("data"), "block": checked_block("relu", subnetwork_checks=True), "output": out("block")},
        {
            "ff": linear("data"),
            "block": checked_block("relu", subnetwork_checks=False),
            "mid": {**out("block"), "out_shape": checked},
            "output": out("mid"),
        },
        {
            "ff": linear("data"),
            "block": checked_block("tanh", subnetwork_checks=False),
            "mid": {**out("block"), "out_shape": checked},
            "output": out("mid"),
        },
    ),
    "static-random": (
        initialized("random", initial(stddev=0.1)),
        initialized("random_0", initial(stddev=0.1, shape_deps=[])),
        initialized("random", initial(stddev=0.2)),
    ),
}
ALL_CASES = [(rule, case) for rule, case in CASES.items()] + [(rule, case) for rule, case in MORE_CASES.items()]


def serializer(net: Net, scheme: str) -> ReturnnCommonSerializer:
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme=scheme)


def graph_hash(net: Net) -> bytes:
    return serializer(net, "graph")._sis_hash()


def test_every_rule_has_its_cases():
    assert sorted(CASES) == sorted(RULES)


@pytest.mark.parametrize("rule, case", ALL_CASES, ids=[rule for rule, _ in ALL_CASES])
def test_the_rule_keeps_the_hash_of_the_same_model(rule: str, case: tuple[Net, Net, Net]):
    net, same, _ = case
    assert same_model(serializer(net, "dict").get(), serializer(same, "dict").get()) == []
    assert graph_hash(net) == graph_hash(same)
    assert serializer(net, "dict")._sis_hash() != serializer(same, "dict")._sis_hash()


@pytest.mark.parametrize("rule, case", ALL_CASES, ids=[rule for rule, _ in ALL_CASES])
def test_the_rule_does_not_hide_a_semantic_change_next_to_it(rule: str, case: tuple[Net, Net, Net]):
    net, _, changed = case
    assert same_model(serializer(net, "dict").get(), serializer(changed, "dict").get()) != []
    assert graph_hash(net) != graph_hash(changed)


@pytest.mark.parametrize(
    "model", ["transformer", pytest.param("enc_dec_loop", marks=pytest.mark.slow), "conv_downsampling"]
)  # (enc_dec_loop: 90 s to construct with RETURNN)
def test_parameter_scopes_are_the_tf_variable_names_of_real_models(model: str):
    """Rule "parameter-scope" on returnn_common's own nets (subnetworks, name_scope "" on loops, parameters inside a
    loop body): every variable layer's scope and param_name is exactly one of RETURNN's TF variables, and together
    they are all of them."""
    import contextlib
    import io

    from i6_rc_jobs._hashing.graph import Graph
    from tests import rc_models
    from i6_rc_jobs._verify.semantics import fingerprint

    with contextlib.redirect_stdout(io.StringIO()):
        extern_data, network = rc_models.ALL_BUILDERS[model]()
    net = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    graph = Graph(dict(net.sections())["network"], "network")
    scoped = [node["@scope"] + node["param_name"] for node in graph.form["layers"] if node["class"] == "variable"]
    with contextlib.redirect_stdout(io.StringIO()):
        variables = fingerprint(net.get()).params
    assert len(scoped) == len(set(scoped)) and sorted(scoped) == sorted(variables)


def test_parameter_scopes_follow_returnn_for_every_spelling():
    """Rule "parameter-scope" for each way RETURNN resolves a scope: nesting, name_scope "" (the parent's),
    relative, absolute and "/" (the root), and the "rec/" of a loop body (none with a name_scope on the loop)."""
    from i6_rc_jobs._hashing.graph import Graph
    from i6_rc_jobs._verify.semantics import fingerprint

    def variable(**options: Any) -> dict:
        return {"class": "variable", "shape": [in_dim], "param_name": "param", **options}

    def plus(*sources: str) -> dict:
        return {"class": "combine", "kind": "add", "from": list(sources)}

    def loop(**options: Any) -> dict:
        unit = {"v": variable(), "w": variable(name_scope="rel"), "output": plus("data:source", "v", "w")}
        return {"class": "rec", "from": "sub", "axis": time_dim, "unit": unit, **options}

    net = {
        "a": variable(name_scope="/abs/a"),
        "b": variable(name_scope="/"),
        "sub": {
            "class": "subnetwork",
            "from": "data",
            "name_scope": "",
            "subnetwork": {"c": variable(), "d": variable(name_scope="x/y"), "output": plus("data", "c", "d")},
        },
        "deep": {
            "class": "subnetwork",
            "from": "sub",
            "subnetwork": {"e": variable(), "output": plus("data", "e")},
        },
        "loop": loop(),
        "loop2": loop(name_scope="scoped"),
        "output": plus("loop", "loop2", "a", "b", "deep"),
    }
    serializer = ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net)
    graph = Graph(dict(serializer.sections())["network"], "network")
    scoped = [node["@scope"] + node["param_name"] for node in graph.form["layers"] if node["class"] == "variable"]
    assert sorted(fingerprint(serializer.get()).params) == sorted(scoped)
    assert {"abs/a/param", "param", "c/param", "x/y/param", "deep/e/param", "loop/rec/v/param"} < set(scoped)
    assert {"loop/rec/rel/param", "scoped/v/param", "scoped/rel/param"} < set(scoped)


def _in_loop(constant: dict) -> Net:
    unit = {"offset": constant, "output": plus("data:source", "offset")}
    return {"ff": linear("data"), "output": {"class": "rec", "from": "ff", "axis": time_dim, "unit": unit}}


#: Where rule "extern-shape-deps" cannot prove a dependency inert, and keeps it: (without it, with it).
KEPT_SHAPE_DEPS = {
    "not-an-extern-data-key": (
        noisy(linear("data"), noise(hidden_dim)),
        noisy(linear("data"), {**noise(hidden_dim), "shape_deps": ["data:classes"]}),
    ),
    "registered-by-a-layer": (
        {**noisy(linear("data"), noise(hidden_dim)), "reg": {**out("ff"), "register_as_extern_data": "data"}},
        {
            **noisy(linear("data"), {**noise(hidden_dim), "shape_deps": ["data"]}),
            "reg": {**out("ff"), "register_as_extern_data": "data"},
        },
    ),
    "in-a-loop": (
        _in_loop({"class": "constant", "value": 1.0, "shape": [batch_dim, hidden_dim]}),
        _in_loop({"class": "constant", "value": 1.0, "shape": [batch_dim, hidden_dim], "shape_deps": ["base:data"]}),
    ),
    "a-net-dict-nested-in-an-option": (
        {**noisy(linear("data"), noise(hidden_dim)), "x": {**out("ff"), "is_output_layer": True, "other": out("data")}},
        {
            **noisy(linear("data"), {**noise(hidden_dim), "shape_deps": ["data"]}),
            "x": {**out("ff"), "is_output_layer": True, "other": out("data")},
        },
    ),
}


@pytest.mark.parametrize("case", KEPT_SHAPE_DEPS.values(), ids=KEPT_SHAPE_DEPS)
def test_extern_shape_deps_are_kept_where_the_rule_cannot_prove_them_inert(case: tuple[Net, Net]):
    without, with_deps = case
    assert graph_hash(without) != graph_hash(with_deps)


def test_a_reuse_params_map_ties_only_the_layers_it_names():
    """The names in a reuse_params map are references: another layer of the same name elsewhere, unreached, is not
    tied to them (rule "unreached" drops it)."""
    weight = {"class": "variable", "shape": [in_dim, hidden_dim]}
    ff = linear("data", reuse_params={"map": {"W": {"layer_output": "w"}}})
    net = {"w": weight, "ff": ff, "output": out("ff")}
    elsewhere = {"class": "subnetwork", "from": "data", "subnetwork": {"w": relu("data"), "output": out("data")}}
    assert graph_hash(net) == graph_hash({**net, "unused": elsewhere})


def test_a_subnetwork_shifts_the_seeds_of_the_initializers_so_a_net_with_one_is_no_namespace():
    """Rule "subnetwork-namespace" holds only where no layer draws from a random generator: RETURNN seeds each
    subnetwork by a draw from its parent's generator, so wrapping a layer into one gives the linear layer built after
    it other initial values, which the graph hash must tell apart."""
    from i6_rc_jobs._verify.training_semantics import training_differences, training_fingerprint

    wrapped = {
        "block": {"class": "subnetwork", "from": "data", "subnetwork": {"act": tanh("data"), "output": out("act")}},
        "ff": linear("block"),
        "output": out("ff"),
    }
    flat = {"act": tanh("data"), "ff": linear("act"), "output": out("ff")}
    a, b = (serializer(net, "dict").get() for net in (wrapped, flat))
    assert same_model(a, b) == []  # the same model, up to the initializers' seeds
    assert any(
        "initial value" in line for line in training_differences(training_fingerprint(a)[1], training_fingerprint(b)[1])
    )
    assert graph_hash(wrapped) != graph_hash(flat)


def _trains(net: Net) -> Any:
    from i6_rc_jobs._verify.training_semantics import training_fingerprint

    return training_fingerprint(serializer(net, "dict").get())[1]


def test_a_layer_read_by_its_path_into_a_subnetwork_draws_from_the_subnetwork():
    """Rule "subnetwork-namespace": reading "block/ff" makes the Subnetwork "block" (a network of its own, seeded by
    a draw from the root's generator) even where "block" itself is never read: its linear layer gets other initial
    values than the same layer at the root, so each layer of a subnetwork names it."""
    from i6_rc_jobs._verify.training_semantics import training_differences

    block = {**block_of(linear("base:data")), "from": [], "name_scope": ""}  # the same variable names as flat
    wrapped = {"block": block, "proj": linear("block/ff"), "output": out("proj")}
    flat = {"ff": linear("data"), "proj": linear("ff"), "output": out("proj")}
    assert same_model(serializer(wrapped, "dict").get(), serializer(flat, "dict").get()) == []
    assert any("initial value" in line for line in training_differences(_trains(wrapped), _trains(flat)))
    assert graph_hash(wrapped) != graph_hash(flat)


@pytest.mark.parametrize("reader", ["dot", "rec"])
def test_a_subnetwork_read_whole_or_by_the_path_of_its_output_trains_alike(reader: str):
    """Rule "subnetwork-output", as returnn_common's LSTM stacks changed in 2022-05 ("lstms.0/rec" to "lstms.0"):
    the same variables, initial values under the same seeds, outputs and gradients, and the same graph hash."""
    from i6_rc_jobs._verify.training_semantics import training_differences

    def net(read: str) -> Net:
        if reader == "dot":
            return projected(block_of(linear("data")), read)
        lstm = {"class": "rec", "unit": "nativelstm2", "from": read, "out_dim": other_dim, "axis": time_dim}
        return {"block": block_of(linear("data")), "lstm": lstm, "output": out("lstm")}

    whole, path = net("block"), net("block/ff")
    assert training_differences(_trains(whole), _trains(path)) == []
    assert graph_hash(whole) == graph_hash(path)


def test_a_subnetwork_whose_output_is_found_outside_it_is_no_path_read():
    """Rule "subnetwork-output" holds only for an output layer inside the subnetwork: reading a subnetwork whose
    output is "base:ff" makes its Subnetwork, which shifts the seeds of the layers built after it, so RETURNN gives
    "ff" other initial values than where "ff" is read itself."""
    from i6_rc_jobs._verify.training_semantics import training_differences

    whole = projected(block_of(relu("data"), out("base:ff")), "block", ff=linear("data"))
    path = projected(block_of(relu("data"), out("base:ff")), "ff", ff=linear("data"))
    assert any("initial value" in line for line in training_differences(_trains(whole), _trains(path)))
    assert graph_hash(whole) != graph_hash(path)


@pytest.mark.parametrize("what", ["none", "copy reader", "scope shared", "trainable", "marked", "option", "in a loop"])
def test_what_the_subnetwork_output_rule_does_not_prove_keeps_the_read_apart(what: str):
    """Denied by default: a reader that may read more of a source than its output (CopyLayer passes on
    output_before_activation), a subnetwork under whose scope a layer outside it has variables, one holding a layer
    that sets "trainable" or is marked, one with an option of its own, and a reader in a loop ("none": a reader
    and a subnetwork the rule holds for)."""
    block = block_of(linear("data"))
    if what == "scope shared":
        block["name_scope"] = ""
    elif what == "trainable":
        block["subnetwork"]["ff"]["trainable"] = True
    elif what == "marked":
        block["subnetwork"]["ff"]["is_output_layer"] = True
    elif what == "option":
        block["concat_sources"] = True

    def net(read: str) -> Net:
        if what == "copy reader":
            return {"block": block, "output": out(read)}
        if what == "in a loop":
            unit = {"dot": {"class": "dot", "from": [f"base:{read}", "data:source"], "reduce": hidden_dim}}
            reader = {"class": "rec", "from": "block/ff", "axis": time_dim, "unit": {**unit, "output": out("dot")}}
            return {"block": block, "loop": reader, "output": out("loop")}
        return projected(block, read)

    assert (graph_hash(net("block")) == graph_hash(net("block/ff"))) is (what == "none")


def test_in_a_loop_of_a_net_with_seeds_the_two_spellings_of_a_scalar_operation_stay_apart():
    """Rule "scalar-operands" holds outside loops only where layers draw seeds: an eval of a subnetwork in a loop and
    its combine with a constant are built in another order (what RETURNN moves out of the loop differs), so the
    softmax outside gets other initial values under the same seed."""
    from i6_rc_jobs._verify.training_semantics import training_differences, training_fingerprint

    def net(output: dict, **more: dict) -> Net:
        step = {"class": "subnetwork", "from": "prev:acc", "subnetwork": {"output": output, **more}}
        unit = {"acc": plus("data:source", "prev:step"), "step": step, "output": out("acc")}
        return {
            "loop": {"class": "rec", "from": "data", "axis": time_dim, "unit": unit},
            "mse": {"class": "copy", "from": "loop", "loss": "mse", "target": "layer:data"},
            "sm": {"class": "softmax", "from": "data", "out_dim": hidden_dim},
            "output": out("sm"),
        }

    spelled = net({"class": "eval", "from": "data", "eval": "source(0) * 0.5"})
    combined = net(
        {"class": "combine", "kind": "mul", "from": ["data", "half"]}, half={"class": "constant", "value": 0.5}
    )
    a, b = (serializer(n, "dict").get() for n in (spelled, combined))
    assert any(
        "initial value" in line for line in training_differences(training_fingerprint(a)[1], training_fingerprint(b)[1])
    )
    assert graph_hash(spelled) != graph_hash(combined)

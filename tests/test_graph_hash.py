"""The graph hash (``hash_scheme="graph"``) as a whole: pinned by a golden file, invariant under every cosmetic rewrite
its rules cover and changed by every semantic change (hypothesis, over random nets), the same in every process,
opt-in without moving any hash of the default scheme, and explained by hash-diff by layer number and path.
The rules one by one, against real RETURNN: tests/test_graph_rules.py."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._cli.explain import explain
from i6_rc_jobs._hashing.graph_rules import GRAPH_FORMAT_VERSION
from tests.support import golden
from tests.test_serializer_properties import SETTINGS

time_dim = Dim(None, name="time", kind=Dim.Types.Spatial)
in_dim = Dim(5, name="in", kind=Dim.Types.Feature)
EXTERN_DATA = {"data": {"dim_tags": [batch_dim, time_dim, in_dim]}}
OUT_DIMS = [Dim(size, name=f"out{size}", kind=Dim.Types.Feature) for size in (3, 4)]


def graph_hash(network: dict) -> bytes:
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=network, hash_scheme="graph")._sis_hash()


def test_graph_hashes_match_golden_file():
    pinned = json.loads(golden.GRAPH_HASHES.read_text())
    current = golden.current_graph_hashes()
    if pinned["graph_format_version"] != GRAPH_FORMAT_VERSION:
        pytest.fail(f"GRAPH_FORMAT_VERSION is {GRAPH_FORMAT_VERSION}, golden graph hashes are not: update them")
    assert current == pinned, "a graph hash changed without a GRAPH_FORMAT_VERSION bump: see tests/support/golden.py"


# Random nets: layer i reads earlier layers or "data"; a layer is an activation, a combine of two, or a linear layer
# (which owns parameters). Each spec: (kind, option, sources as indices, -1 = data).
layer_specs = st.lists(
    st.one_of(
        st.tuples(st.just("activation"), st.sampled_from(["relu", "tanh", "sigmoid"]), st.integers(-1, 20)),
        st.tuples(st.just("combine"), st.sampled_from(["add", "mul", "sub"]), st.integers(-1, 20), st.integers(-1, 20)),
        st.tuples(st.just("linear"), st.integers(0, 1), st.integers(-1, 20)),
    ),
    min_size=1,
    max_size=8,
)


class RandomNet:
    """A net from specs, written with given layer names, dict order and spellings of the same graph."""

    def __init__(self, specs: list[tuple]):
        self.specs = specs

    def sources(self, i: int) -> list[int]:
        return [min(s, i - 1) for s in self.specs[i][2:]]

    def reached(self) -> set[int]:
        out, stack = set(), [len(self.specs) - 1]
        while stack:
            i = stack.pop()
            if i >= 0 and i not in out:
                out.add(i)
                stack.extend(self.sources(i))
        return out

    def build(
        self, names: list[str], order: list[int], copies: set[int], listed: set[int], flip: bool = False
    ) -> dict[str, Any]:
        """Layer i is named ``names[i]``; reading layer j in ``copies`` goes through a copy layer; layers in
        ``listed`` spell a single source as a list; entries go into the dict in ``order``, their options in reverse
        order if ``flip``. A linear layer's scope stays ``p<i>`` whatever its name."""

        def ref(j: int) -> str:
            if j < 0:
                return "data"
            return f"{names[j]}_copy" if j in copies else names[j]

        layers: dict[int, dict[str, Any]] = {}
        for i, (kind, option, *_) in enumerate(self.specs):
            sources = [ref(j) for j in self.sources(i)]
            source: Any = sources if len(sources) > 1 or i in listed else sources[0]
            if kind == "activation":
                layers[i] = {"class": "activation", "activation": option, "from": source}
            elif kind == "combine":
                layers[i] = {"class": "combine", "kind": option, "from": source}
            else:
                layers[i] = {"class": "linear", "from": source, "out_dim": OUT_DIMS[option], "name_scope": f"p{i}"}
        net: dict[str, Any] = {}
        for i in order:
            net[names[i]] = dict(reversed(layers[i].items())) if flip else layers[i]
            if i in copies:
                net[f"{names[i]}_copy"] = {"class": "copy", "from": names[i]}
        net["output"] = {"class": "copy", "from": ref(len(self.specs) - 1)}
        return net


@st.composite
def rewrites(draw, net: RandomNet) -> tuple[dict, dict]:
    """The net twice, with other names, dict orders, copy layers and source spellings: the same graph."""
    n = len(net.specs)
    built = []
    for _ in range(2):
        names = draw(st.permutations([f"layer{i}" for i in range(n)]))
        order = draw(st.permutations(list(range(n))))
        copies = draw(st.sets(st.integers(0, n - 1)))
        listed = draw(st.sets(st.integers(0, n - 1)))
        built.append(net.build(names, order, copies, listed, draw(st.booleans())))
    return built[0], built[1]


@SETTINGS
@given(st.data(), layer_specs)
def test_cosmetic_rewrites_keep_the_graph_hash(data, specs):
    net = RandomNet(specs)
    a, b = data.draw(rewrites(net))
    assert graph_hash(a) == graph_hash(b)


@SETTINGS
@given(st.data(), layer_specs)
def test_a_semantic_change_of_a_reached_layer_changes_the_graph_hash(data, specs):
    net = RandomNet(specs)
    i = data.draw(st.sampled_from(sorted(net.reached())))
    kind, option, *sources = specs[i]
    choices = {"activation": ["relu", "tanh", "sigmoid"], "combine": ["add", "mul", "sub"], "linear": [0, 1]}[kind]
    other = data.draw(st.sampled_from([c for c in choices if c != option]))
    changed = RandomNet(specs[:i] + [(kind, other, *sources)] + specs[i + 1 :])
    a, _ = data.draw(rewrites(net))
    b, _ = data.draw(rewrites(changed))
    assert graph_hash(a) != graph_hash(b)


def test_unreached_layers_count_when_they_own_parameters_or_returnn_builds_them():
    net = RandomNet([("activation", "relu", -1)]).build(["a"], [0], set(), set())
    with_param = {**net, "unused": {"class": "linear", "from": "data", "out_dim": OUT_DIMS[0]}}
    with_act = {**net, "unused": {"class": "activation", "activation": "tanh", "from": "data"}}
    assert graph_hash(with_act) == graph_hash(net) != graph_hash(with_param)
    for built in ({"is_output_layer": True}, {"register_as_extern_data": "x"}, {"loss": "as_is"}):
        marked = {**net, "unused": {**with_act["unused"], **built}}
        changed = {**net, "unused": {**marked["unused"], "activation": "relu"}}
        assert graph_hash(marked) != graph_hash(changed)
    extra = {**net, "extra.search:output": with_act["unused"]}
    assert graph_hash(extra) != graph_hash({**extra, "extra.search:output": with_act["a"]})


def test_names_that_returnn_reads_count():
    """Loss layers (score keys), the loop body's names and parameter scopes are names RETURNN reads."""
    net = RandomNet([("linear", 0, -1), ("activation", "relu", 0)]).build(["ff", "act"], [0, 1], set(), set())
    loss = {**net, "ce": {"class": "copy", "from": "act", "loss": "as_is"}}
    renamed_loss = {**net, "ce2": {"class": "copy", "from": "act", "loss": "as_is"}}
    assert graph_hash(loss) != graph_hash(renamed_loss)
    rescoped = copy.deepcopy(net)
    rescoped["ff"]["name_scope"] = "q0"
    assert graph_hash(net) != graph_hash(rescoped)


def test_a_name_in_an_option_that_finds_a_layer_keeps_which_layer_it_finds():
    """An option this graph does not know as a reference may still be one: the layer it names is kept, and which of
    two look-alike-by-position layers it names counts."""
    base = {
        "x": {"class": "activation", "activation": "relu", "from": "data"},
        "y": {"class": "activation", "activation": "tanh", "from": "data"},
        "output": {"class": "combine", "kind": "add", "from": ["x", "y"], "unknown_option": "x"},
    }
    swapped = copy.deepcopy(base)
    swapped["x"]["activation"], swapped["y"]["activation"] = "tanh", "relu"
    swapped["output"]["from"] = ["y", "x"]
    assert graph_hash(base) != graph_hash(swapped)
    unreached = {"z": {"class": "activation", "activation": "relu", "from": "data"}}
    mentioned = {**unreached, "output": {"class": "copy", "from": "data", "unknown_option": "z"}}
    changed = {**mentioned, "z": {"class": "activation", "activation": "tanh", "from": "data"}}
    assert graph_hash(mentioned) != graph_hash(changed)


def test_a_set_of_strings_in_an_option_is_hashed_with_the_layers_it_names():
    """A set of strings among an option's values (it made the graph hash fail): hashed in either scheme, its names
    tied to the layers they name as a string's are (a swap of two layers' roles moves it), its order none of the
    hash's."""
    base = {
        "x": {"class": "activation", "activation": "relu", "from": "data"},
        "y": {"class": "activation", "activation": "tanh", "from": "data"},
        "output": {"class": "eval", "from": ["x", "y"], "eval": "source(0) + source(1)", "eval_locals": {}},
    }

    def with_names(net: dict, names: set) -> dict:
        net = copy.deepcopy(net)
        net["output"]["eval_locals"] = {"names": names}
        return net

    named = with_names(base, {"x", "output"})
    assert graph_hash(named) == graph_hash(with_names(base, {"output", "x"})) != graph_hash(base)
    swapped = copy.deepcopy(named)
    swapped["x"]["activation"], swapped["y"]["activation"] = "tanh", "relu"
    swapped["output"]["from"] = ["y", "x"]
    assert graph_hash(swapped) != graph_hash(named)
    assert ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=named)._sis_hash()
    code = f"from tests.test_graph_hash import graph_hash\nprint(graph_hash({named!r}).decode())"
    hashes = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}
        ).stdout.splitlines()[-1]
        for seed in ("0", "1")
    }
    assert hashes == {graph_hash(named).decode()}  # the set's order in either process is none of the hash's


@pytest.mark.slow
def test_graph_hash_is_the_same_in_every_process():
    code = """
        import contextlib, io
        from tests import rc_models
        from i6_rc_jobs import ReturnnCommonSerializer
        for name, build in sorted(rc_models.ALL_BUILDERS.items()):
            with contextlib.redirect_stdout(io.StringIO()):
                extern_data, network = build()
            print(ReturnnCommonSerializer(extern_data=extern_data, network=network, hash_scheme="graph")._sis_hash())
    """
    outputs = set()
    for seed in ("0", "1", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.add("\n".join(line for line in done.stdout.splitlines() if "graph v" in line))
    assert len(outputs) == 1 and outputs.pop().count("graph v") == 5


def test_the_scheme_is_opt_in_and_pickled():
    net = RandomNet([("activation", "relu", -1)]).build(["a"], [0], set(), set())
    default = ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net)
    graph = ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme="graph")
    explicit = ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme="dict")
    assert default._sis_hash() == explicit._sis_hash() != graph._sis_hash()
    assert "hash_scheme" not in default.__getstate__()
    for serializer in (default, graph):
        loaded = pickle.loads(pickle.dumps(serializer))
        assert (loaded.hash_scheme, loaded._sis_hash()) == (serializer.hash_scheme, serializer._sis_hash())
        assert copy.deepcopy(serializer)._sis_hash() == serializer._sis_hash()
    with pytest.raises(SerializationError, match=r"hash_scheme: unknown hash scheme 'graf'"):
        ReturnnCommonSerializer(network=net, hash_scheme="graf")


def test_hash_diff_lines_up_graph_layers_by_path_and_says_their_numbers():
    net = {
        "enc": {
            "class": "subnetwork",
            "from": "data",
            "subnetwork": {
                "act": {"class": "activation", "activation": "relu", "from": "data"},
                "output": {"class": "copy", "from": "act"},
            },
        },
        "output": {"class": "copy", "from": "enc"},
    }
    a = ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme="graph")
    b = copy.deepcopy(a)
    b.network["enc"]["subnetwork"]["act"]["activation"] = "tanh"
    assert list(explain(a, b)) == ["network layer#0 'enc/act'['activation']: 'relu' -> 'tanh'"]
    inserted = copy.deepcopy(a)  # renumbers the layers after it: the sides still line up by path
    inserted.network["pre"] = {"class": "activation", "activation": "exp", "from": "data"}
    inserted.network["enc"]["from"] = "pre"
    assert list(explain(a, inserted)) == [
        "network layer#0 'enc/act'['from'][0]: @data('data',) -> <layer 'pre'>",
        "network layer#1 'pre': (missing) -> {'activation': 'exp', 'class': 'activation', 'from': [@data('data',)]}",
    ]
    c = copy.deepcopy(a)
    c.network["enc"]["subnetwork"]["act2"] = c.network["enc"]["subnetwork"].pop("act")
    c.network["enc"]["subnetwork"]["output"]["from"] = "act2"
    assert list(explain(a, c)) == []
    dict_scheme = ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net)
    assert list(explain(dict_scheme, a)) == ["hash_scheme: 'dict' -> 'graph'"]


def test_a_layer_named_by_an_entry_that_is_no_layer_is_in_the_graph():
    """Entries of a net dict that are no layer (RETURNN ignores "#..." keys, a user may keep notes) are hashed, and a
    layer their strings name is kept with its content."""
    net = {
        "x": {"class": "activation", "activation": "relu", "from": "data"},
        "#note": "x",
        "output": {"class": "copy", "from": "data"},
    }
    changed = {**net, "x": {**net["x"], "activation": "tanh"}}
    assert graph_hash(net) != graph_hash(changed)

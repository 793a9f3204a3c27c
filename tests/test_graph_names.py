"""Names that RETURNN puts into more than a layer's scope move the graph hash: a TF variable named after the layer
(a ``variable`` layer without ``param_name``, ``initial_output: "var"``, batch norm's parameters), and the order in
which RETURNN constructs layers where it sorts them by name (in a loop), which decides the seed each initializer draws.
Each pair is built with real RETURNN: the variables' names or initial values differ, and so do the graph hashes."""

from __future__ import annotations

import string
from typing import Any

import numpy
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer

time_dim = Dim(None, name="time", kind=Dim.Types.Spatial)
in_dim = Dim(5, name="in", kind=Dim.Types.Feature)
hidden_dim = Dim(7, name="hidden", kind=Dim.Types.Feature)
EXTERN_DATA = {"data": {"dim_tags": [batch_dim, time_dim, in_dim]}}

Net = dict[str, Any]


def serializer(net: Net, scheme: str = "dict") -> ReturnnCommonSerializer:
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme=scheme)


def graph_hash(net: Net) -> bytes:
    return serializer(net, "graph")._sis_hash()


def initial_values(net: Net) -> dict[str, numpy.ndarray]:
    """The initial value of every TF variable RETURNN makes of the written config, by the variable's name."""
    import tensorflow as tf

    from i6_rc_jobs._verify.returnn_check import network_in_new_graph
    from i6_rc_jobs._verify.semantics import load_config

    config = load_config(serializer(net).get())
    with network_in_new_graph(config, config.typed_value("network"), train_flag=False):
        variables = tf.compat.v1.global_variables()
        with tf.compat.v1.Session() as session:
            values = session.run([variable.initial_value for variable in variables])
    return {variable.name.rpartition(":")[0]: value for variable, value in zip(variables, values)}


def linear(source: Any, **options: Any) -> dict:
    return {"class": "linear", "from": source, "out_dim": hidden_dim, **options}


def in_loop(unit: Net) -> Net:
    return {"output": {"class": "rec", "from": "data", "axis": time_dim, "unit": unit}}


def _variable(name: str) -> Net:
    variable = {"class": "variable", "shape": [hidden_dim], "init": "glorot_uniform", "name_scope": ""}
    return {"ff": linear("data"), name: variable, "output": {"class": "combine", "kind": "add", "from": ["ff", name]}}


def _initial_output(name: str) -> Net:
    state = {"class": "combine", "kind": "add", "from": ["ff", f"prev:{name}"], "initial_output": "var"}
    return in_loop({"ff": linear("data:source"), name: {**state, "name_scope": ""}, "output": act(name)})


def _batch_norm(name: str) -> Net:
    normed = {
        "class": "copy",
        "from": "ff",
        "batch_norm": {"param_version": 0, "masked_time": False},
        "name_scope": "norm",
    }
    return {"ff": linear("data"), name: normed, "output": act(name)}


def act(source: str) -> dict:
    return {"class": "activation", "activation": "tanh", "from": source}


#: Nets that make a TF variable named after one layer, by that layer's name.
NAMED_VARIABLES = {"variable": _variable, "initial-output-var": _initial_output, "batch-norm": _batch_norm}


@pytest.mark.parametrize("kind", sorted(NAMED_VARIABLES))
def test_a_variable_named_after_its_layer_moves_the_graph_hash_with_the_name(kind: str):
    make = NAMED_VARIABLES[kind]
    first, second = make("w"), make("v")
    assert sorted(initial_values(first)) != sorted(initial_values(second))  # the variables' names
    assert graph_hash(first) != graph_hash(second)


def _prev_read(first: str, second: str) -> Net:
    """Two parameter-free layers read through ``prev:`` in a loop, each of one linear layer: RETURNN constructs them
    (and so their linear layers, which draw their seeds then) in the order of their names."""
    return in_loop(
        {
            "w1": linear(["data:source", f"prev:{first}"]),
            "w2": linear(["data:source", f"prev:{second}"]),
            first: act("w1"),
            second: act("w2"),
            "output": {"class": "combine", "kind": "add", "from": [f"prev:{first}", f"prev:{second}"]},
        }
    )


def test_renaming_layers_a_loop_constructs_in_name_order_moves_the_graph_hash():
    kept, swapped = _prev_read("p", "q"), _prev_read("z", "q")  # p < q, but z > q: w2 is constructed first
    ours, theirs = initial_values(kept), initial_values(swapped)
    weights = ("output/rec/w1/W", "output/rec/w2/W")
    assert sorted(ours) == sorted(theirs)
    assert numpy.array_equal(ours[weights[0]], theirs[weights[1]])  # the seeds swapped with the order
    assert not numpy.array_equal(ours[weights[0]], theirs[weights[0]])
    assert graph_hash(kept) != graph_hash(swapped)
    assert graph_hash(kept) == graph_hash(_prev_read("pa", "pb"))  # a rename that keeps the name order keeps it


LOOP_NAMES = st.text(string.ascii_lowercase + "_", min_size=1, max_size=6).filter(
    lambda name: name not in ("output", "end", "data", "w1", "w2")
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(LOOP_NAMES, LOOP_NAMES)
def test_a_loop_hashes_alike_exactly_when_its_layers_names_sort_alike(first: str, second: str):
    assume(first != second)

    def order(one: str, two: str) -> list[int]:
        names = [one, two, "output", "w1", "w2"]
        return sorted(range(len(names)), key=names.__getitem__)

    alike = order(first, second) == order("p", "q")
    assert (graph_hash(_prev_read(first, second)) == graph_hash(_prev_read("p", "q"))) == alike


def _window(**options: Any) -> dict:
    return {"class": "window", "from": "data", "window_size": 3, "window_left": 2, "window_right": 0, **options}


def test_a_layer_that_names_a_dim_keeps_its_name_and_one_with_every_dim_given_loses_it():
    """A window without window_dim describes its dim ``"<name>:window"`` (RETURNN lines up generated dims of one
    description): renaming it moves the graph hash. With a static window_dim, or an out_shape of given dims, the
    name is nowhere in the model: renaming it keeps the hash."""
    window_dim = Dim(3, name="window", kind=Dim.Types.Spatial)

    def renamed(window: dict) -> tuple[bytes, bytes]:
        return tuple(graph_hash({name: window, "output": {"class": "copy", "from": name}}) for name in ("w1", "w2"))

    named = renamed(_window())
    assert named[0] != named[1]
    given = renamed(_window(window_dim=window_dim))
    assert given[0] == given[1]
    checked = renamed(_window(out_shape={batch_dim, time_dim, window_dim, in_dim}))
    assert checked[0] == checked[1]


def test_a_dict_key_that_holds_a_layer_name_ties_that_layer():
    """Keys are values: ``set_dim_tags`` picks an axis by a key that may hold a layer's name (``"stag:<layer>:window"``
    for a window that describes its dim by its name), so which layer that name finds counts, as it does for an axis
    string. Here the two nets differ only in which of two layers of swapped contents the key's "p" finds."""
    new_dim = Dim(3, name="new", kind=Dim.Types.Spatial)
    first_dim, second_dim = (Dim(3, name=name, kind=Dim.Types.Spatial) for name in ("first", "second"))

    def net(inner: str, outer: str) -> Net:
        tagged = {"class": "reinterpret_data", "from": outer, "set_dim_tags": {"stag:p:window": new_dim}}
        return {
            inner: _window(window_dim=first_dim),
            outer: {**_window(window_dim=second_dim), "from": inner},
            "output": {"class": "reduce", "mode": "sum", "axis": new_dim, "from": "t"},
            "t": tagged,
        }

    assert graph_hash(net("p", "q")) != graph_hash(net("q", "p"))

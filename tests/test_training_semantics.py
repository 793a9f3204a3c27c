"""i6_rc_jobs._verify.training_semantics against real RETURNN: what only training shows of a model."""

from __future__ import annotations

import pytest

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs._verify.training_semantics import training_differences, training_fingerprint
from tests.test_graph_rules import EXTERN_DATA


def _code(network: dict) -> str:
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=network).get()


@pytest.mark.slow  # three RETURNN builds
def test_initial_values_follow_the_order_in_which_returnn_builds_layers():
    """RETURNN builds output layers in name order, each drawing its initializer's seed from the network's: a rename
    of one that moves it behind the other gives the other's weights other initial values. The eval judge, which
    sets every variable by its name, finds the two the same; only the initial values tell them apart."""
    out_dim = EXTERN_DATA["data"]["dim_tags"][-1]
    layer = {"class": "linear", "from": "data", "out_dim": out_dim, "is_output_layer": True}
    net = {"a": dict(layer), "b": dict(layer), "output": {"class": "copy", "from": "data"}}
    renamed = {"c": dict(layer), "b": dict(layer), "output": {"class": "copy", "from": "data"}}
    eval_a, train_a = training_fingerprint(_code(net))
    eval_b, train_b = training_fingerprint(_code(renamed))
    assert training_differences(train_a, training_fingerprint(_code(net))[1]) == []
    assert [line for line in eval_a.differences(eval_b) if "param b/" in line] == []
    assert "initial value of b/W differs" in training_differences(train_a, train_b)

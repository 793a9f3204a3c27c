"""A fixed-seed sample of the differential fuzzer (the package fuzz/) against real RETURNN: a few dozen pairs of
random net dicts, each built with RETURNN where a hash stayed; any pair whose graph or dict hashes are equal while
RETURNN finds a difference fails the test, with its shrunk reproducer."""

from __future__ import annotations

import io

import pytest
from returnn.tensor import Dim

from fuzz import dims, runner
from fuzz.dims import EXTERN_DATA, FEATURES, TWINS
from fuzz.generators import WIDE_GENERATORS
from fuzz.judge import Judge, loaded_form, serializer
from fuzz.corpora import SUITES, cached

SAMPLE_SEED, SAMPLE_PAIRS = 20261206, 96


@pytest.mark.slow
def test_the_fuzzer_finds_no_counterexample_in_a_fixed_sample():
    """One base of each generator of what a review found the others never make, then generated bases and the models
    of returnn_common's and RETURNN's test suites; any counterexample fails, with its reproducer."""
    out = io.StringIO()
    corpora = tuple((suite.name, cached(suite)) for suite in SUITES.values())  # collected once per pin: minutes
    report = runner.run(
        seed=SAMPLE_SEED, pairs=SAMPLE_PAIRS, processes=1, per_base=4, out=out, corpora=corpora, corpus_share=0.6
    )
    assert report.pairs == SAMPLE_PAIRS
    assert not set(WIDE_GENERATORS) - set(report.generators), out.getvalue()
    assert report.sources.get("returnn_common", 0) >= 4 and report.sources.get("RETURNN", 0) >= 4, out.getvalue()
    assert report.process_checked > 0
    assert report.counterexamples == [], out.getvalue()
    # The sample exercises the rules: pairs whose graph hash stayed while the dict hash moved, and RETURNN agreed.
    exercised = sum(row["exercised"] for (scheme, _), row in report.table.items() if scheme == "graph")
    kept = sum(row["kept, RETURNN same"] for (scheme, _), row in report.table.items() if scheme == "graph")
    moved = sum(row["moved"] for (scheme, _), row in report.table.items() if scheme == "graph")
    assert exercised >= 5 and kept >= 5 and moved >= 5, out.getvalue()


def test_the_judge_sees_what_only_training_shows():
    """Two nets that the eval judge finds the same but that train differently (dropout, a frozen layer, L2, a loss
    scale): the fuzzer's training fingerprint tells each apart, and finds a net the same as itself."""

    def net(**options) -> dict:
        return {
            "lin": {"class": "linear", "from": "data", "out_dim": FEATURES[4], **options},
            "output": {
                "class": "softmax",
                "from": "lin",
                "out_dim": dims.CLASSES,
                "loss": "ce",
                "target": "classes",
            },
        }

    judge = Judge()
    base = net()
    code = serializer(base, "dict", False).get()
    built = judge.build(code, base, False)
    assert EXTERN_DATA["classes"]["sparse_dim"] is dims.CLASSES
    same = judge.build(code + "\n", base, False)
    assert judge.differences(built, same, False, loaded=True) == []
    for options, says in [
        ({"dropout": 0.3}, "train-mode output differs"),
        ({"trainable": False}, "trainable variables"),
        ({"L2": 0.1}, "objective"),
    ]:
        other = net(**options)
        other_code = serializer(other, "dict", False).get()
        lines = judge.differences(built, judge.build(other_code, other, False), False, False)
        assert any(says in line for line in lines), (options, lines)
        assert all(line.startswith("training: ") for line in lines), lines


def test_the_dict_property_compares_loaded_dims_as_returnn_does():
    """A same_as copy that differs from its base in nothing RETURNN reads is the base (Dim equality goes to the
    base); one of another match_priority or kind, or another dim of the same size and kind, is another dim."""

    def form(out_dim) -> tuple:
        net = {
            "a": {"class": "linear", "from": "data", "out_dim": FEATURES[4]},
            "output": {"class": "copy", "from": "a"},
        }
        net["b"] = {"class": "linear", "from": "data", "out_dim": out_dim}
        return loaded_form(serializer(net, "dict", False).get(), net, False)

    base = FEATURES[4]
    assert form(base.copy(description="f4 copy")) == form(base)
    for other in (base.copy(match_priority=1), base.copy(kind=Dim.Types.Spatial), TWINS[4]):
        assert form(other) != form(base), other


def test_a_rename_keeps_a_cell_named_as_the_layer():
    """A rec layer's unit "cumsum" names a cell, not the layer "cumsum": renaming the layer keeps it (RETURNN's
    RecLayer reads a str unit as a cell name only)."""
    from fuzz.nets import rename

    net = {
        "cumsum": {"class": "cumsum", "from": "data", "axis": "T"},
        "acc": {"class": "rec", "unit": "cumsum", "from": "cumsum", "n_out": 4},
    }
    rename(net, "cumsum", "renamed")
    assert net == {
        "renamed": {"class": "cumsum", "from": "data", "axis": "T"},
        "acc": {"class": "rec", "unit": "cumsum", "from": "renamed", "n_out": 4},
    }

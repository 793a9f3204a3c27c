"""Fixed configs built from real RETURNN dims by hand, for golden files (generated code, hashes) and the
process-level tests (pickling, PYTHONHASHSEED). Pure functions: every call builds new dims."""

from __future__ import annotations

from returnn.tensor import Dim, batch_dim, single_step_dim
from returnn.tensor.marked_dim import ImplicitDynSizeDim, ImplicitSparseDim

from i6_rc_jobs import ReturnnCommonSerializer
from tests.support import other_records
from tests.support.records import Pair


def encoder_decoder(**kwargs) -> ReturnnCommonSerializer:
    """A small encoder-decoder with everything a net dict can hold: derived dims, copies with match_priority,
    marked dims, single_step_dim, sets, dims as keys, a namedtuple, inf and nan, a dict subclass."""
    time = Dim(None, description="time", kind=Dim.Types.Spatial)
    feat = Dim(40, description="feature", kind=Dim.Types.Feature)
    model = Dim(256, description="model", kind=Dim.Types.Feature)
    classes = Dim(1000, description="classes", kind=Dim.Types.Feature)
    out_time = Dim(None, description="out-time", kind=Dim.Types.Spatial)
    down = time.ceildiv_right(2)
    extern_data = {
        "data": {"dim_tags": [batch_dim, time, feat]},
        "classes": {"dim_tags": [batch_dim, out_time], "sparse_dim": classes, "dtype": "int32"},
    }
    network = {
        "pool": {"class": "pool", "from": "data", "mode": "max", "pool_size": [2], "out_spatial_dims": [down]},
        "enc": {
            "class": "subnetwork",
            "from": "pool",
            "subnetwork": {
                "ff": {"class": "linear", "from": "data", "out_dim": model, "activation": "relu"},
                "att": {"class": "dot", "from": ["ff", "ff"], "reduce": model.copy(match_priority=1)},
                "output": {"class": "copy", "from": "ff", "out_shape": {batch_dim, down, model}},
            },
        },
        "dec": {
            "class": "rec",
            "from": [],
            "axis": out_time,
            "unit": {
                "lstm": {"class": "rec", "unit": "lstm", "axis": single_step_dim, "out_dim": 2 * model},
                "shifted": {"class": "copy", "from": "prev:lstm", "out_shape": {ImplicitSparseDim(classes)}},
                "cum": {"class": "cum_concat", "out_spatial_dim": out_time + 1, "implicit": {ImplicitDynSizeDim(down)}},
            },
        },
        "output": {"class": "softmax", "from": "dec", "out_dim": classes, "loss": "ce", "loss_scale": 1.0},
        "limits": {"class": "eval", "from": "output", "clip": (float("-inf"), float("inf")), "fill": float("nan")},
        "split": {"class": "split", "from": "enc", "axis": model, "sizes": {model: 256}, "pair": Pair(feat, "x")},
    }
    return ReturnnCommonSerializer(extern_data=extern_data, network=network, **kwargs)


def staged(**kwargs) -> ReturnnCommonSerializer:
    """Three stages sharing dims with extern_data and each other."""
    time = Dim(None, description="time", kind=Dim.Types.Spatial)
    feat = Dim(9, description="in", kind=Dim.Types.Feature)
    hidden = Dim(32, description="hidden", kind=Dim.Types.Feature)
    classes = Dim(2, description="classes", kind=Dim.Types.Feature)

    def net(layers: int) -> dict:
        out = {}
        for i in range(layers):
            out[f"ff{i}"] = {"class": "linear", "from": f"ff{i - 1}" if i else "data", "out_dim": hidden}
        out["output"] = {
            "class": "softmax",
            "from": f"ff{layers - 1}",
            "out_dim": classes,
            "loss": "ce",
            "target": "classes",
        }
        return out

    return ReturnnCommonSerializer(
        extern_data={
            "data": {"dim_tags": [batch_dim, time, feat]},
            "classes": {"dim_tags": [batch_dim, time], "sparse_dim": classes},
        },
        staged_networks={1: net(1), 5: net(2), 10: net(3)},
        **kwargs,
    )


def extern_data_only(**kwargs) -> ReturnnCommonSerializer:
    """What a PyTorch-backend config needs: extern_data alone."""
    time = Dim(None, description="time", kind=Dim.Types.Spatial)
    feat = Dim(80, description="log-mel", kind=Dim.Types.Feature)
    vocab = Dim(10025, description="vocab", kind=Dim.Types.Feature)
    return ReturnnCommonSerializer(
        extern_data={
            "data": {"dim_tags": [batch_dim, time, feat]},
            "targets": {"dim_tags": [batch_dim, Dim(None, description="out-time")], "sparse_dim": vocab},
        },
        **kwargs,
    )


def nested_sets(**kwargs) -> ReturnnCommonSerializer:
    """Sets inside sets and as values of dim-keyed dicts, next to two new dims alike in everything: the hash orders
    them by where they occur, which walks these values (a regression: this crashed the set fast path)."""
    time = Dim(None, description="t")
    feat = Dim(3, description="f")
    network = {
        "a": {"by_dim": {feat: {time, batch_dim}}},
        "b": {"out_shape": {Dim(None, description="x"), Dim(None, description="x")}},
        "c": {"nested": {frozenset({time}), "foo"}},
    }
    return ReturnnCommonSerializer(network=network, **kwargs)


def corrections(**kwargs) -> ReturnnCommonSerializer:
    """What the corrections of 2026-11-30 pinned (CHANGELOG.md): auto-generated dims equal or not by description,
    a batch_dim copy with its match_priority, set elements and dict keys told apart only by their dims, keys
    without a total order, complex numbers, and a namedtuple class named like the import of Dim."""
    auto = [Dim(5, description=d, auto_generated=True) for d in ("same", "same", "other", None)]
    feat = [Dim(4, description=d, kind=Dim.Types.Feature) for d in "abcd"]
    network = {
        "auto": {"dims": auto},
        "batch": {"out_shape": {batch_dim.copy(match_priority=1)}},
        "ties": {"set": {(feat[0], 1), (feat[1], 1)}, "keys": {(feat[2], feat[3]): 1}, "m": [feat[1], feat[3]]},
        "partial": {frozenset({"a"}): 1, frozenset({"b"}): 2, frozenset({"a", "c"}): 3},
        "complex": [complex(float("nan"), -0.0), 1 + 2j],
        "records": [other_records.Dim(1, 2)],
    }
    return ReturnnCommonSerializer(network=network, **kwargs)


CASES = {
    "encoder_decoder": encoder_decoder,
    "staged": staged,
    "extern_data_only": extern_data_only,
    "nested_sets": nested_sets,
    "corrections": corrections,
}

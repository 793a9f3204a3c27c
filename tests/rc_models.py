"""
Real returnn_common models for tests and benchmarks.

Each builder returns ``(extern_data, network)``: the raw dicts of ``nn.get_returnn_config()``
(``get_extern_data_raw_dict()`` and ``get_net_dict_raw_dict(root_module)``), which still contain the real
``returnn.tensor.Dim`` objects, ``nn.LayerState`` etc. That is what i6 recipes hand to ReturnnConfig, so
serialization and hashing must cope with exactly these objects; hand-written dicts would miss the hard parts
(equal-but-distinct dims, derived dims, ``match_priority`` copies, loop state).

Every builder starts from ``nn.reset_default_root_name_ctx()``, so builders are independent of each other and
every call makes fresh Dim objects. returnn_common prints debug lines on stdout while building.

The pinned returnn_common (f7ad63a) is older than the pinned RETURNN: :func:`i6_rc_jobs._compat.rc_compat.apply` makes it
build its models with it (``nn.Loop``, ``nn.LayerState``); it changes how returnn_common builds, not the model.
"""

from __future__ import annotations

import functools
from typing import Any

from returnn_common import nn

from i6_rc_jobs import rc_compat
from tests import rc_builders

nn = rc_compat.apply(nn)

__all__ = [
    "transformer",
    "lstm_stack",
    "conv_downsampling",
    "enc_dec_loop",
    "task12ax_lstm",
    "pooled_search",
    "with_vocabs",
    "ALL_BUILDERS",
    "construct",
]

RawDicts = rc_builders.RawDicts


class _Model(nn.Module):
    """Root module, so that all params get names relative to one module (as in a real recipe)."""


# Written once for any returnn_common nn (tests.rc_builders, shared with bench.graph_history), built with this one.
transformer = functools.partial(rc_builders.transformer, nn)
lstm_stack = functools.partial(rc_builders.lstm_stack, nn)
enc_dec_loop = functools.partial(rc_builders.enc_dec_loop, nn)


class _ConvDownsampling(_Model):
    """Conv front-end which reduces the frame rate by 4, like in ASR encoders."""

    def __init__(self, in_dim: nn.Dim, out_dim: nn.Dim):
        super().__init__()
        self.conv1 = nn.Conv1d(in_dim, nn.FeatureDim("conv1", 32), 3, padding="same")
        self.conv2 = nn.Conv1d(self.conv1.out_dim, nn.FeatureDim("conv2", 32), 3, padding="same", strides=2)
        self.linear = nn.Linear(self.conv2.out_dim, out_dim)

    def __call__(self, x: nn.Tensor, *, spatial_dim: nn.Dim) -> tuple[nn.Tensor, nn.Dim]:
        x, _ = self.conv1(x, in_spatial_dim=spatial_dim)  # "same", stride 1: keeps the time dim
        x = nn.relu(x)
        # Derived dims given explicitly, as recipes do, so that they can be referred to elsewhere.
        # pool "valid" of size 2 has floor(T / 2) frames, the strided "same" conv ceil(T' / 2).
        x, pool_dim = nn.pool1d(
            x, mode="max", pool_size=2, padding="valid", in_spatial_dim=spatial_dim, out_spatial_dim=spatial_dim // 2
        )
        x, out_dim = self.conv2(x, in_spatial_dim=pool_dim, out_spatial_dim=pool_dim.ceildiv_right(2))
        return self.linear(nn.relu(x)), out_dim


def conv_downsampling() -> RawDicts:
    """Conv + max-pool + strided conv: time // 2 then ceildiv(., 2) as derived dims, then a linear layer."""
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_feat = nn.FeatureDim("input", 40)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_feat]))
    model = _ConvDownsampling(in_feat, nn.FeatureDim("out", 64))
    out, _ = model(data, spatial_dim=time_dim)
    out.mark_as_default_output()
    return rc_builders.raw_dicts(nn, model)


def task12ax_lstm() -> RawDicts:
    """
    Model for RETURNN's ``Task12AXDataset`` ("data": 9 dense features, "classes": 2 sparse classes on the same
    time axis): one LSTM, softmax, CE loss. Small enough to train for real in a test.
    """
    return lstm_stack(num_layers=1, in_dim=9, num_classes=2, hidden=16)


class _PooledSearch(_Model):
    """Two max-poolings of the time axis (to ceil(time/6)), then a loop over the pooled axis that searches a label
    per frame: the loop's length is the pooled axis's, which RETURNN infers from its derivation under beam search."""

    def __init__(self, in_dim: nn.Dim, target_dim: nn.Dim):
        super().__init__()
        self.enc = nn.Linear(in_dim, nn.FeatureDim("enc", 8))
        self.out = nn.Linear(self.enc.out_dim, target_dim)

    def __call__(self, x: nn.Tensor, *, spatial_dim: nn.Dim) -> nn.Tensor:
        x = self.enc(x)
        # No out_spatial_dim: returnn_common makes each a same_as copy of RETURNN's derived ceil(in/stride).
        x, pooled_dim = nn.pool1d(x, mode="max", pool_size=2, padding="same", in_spatial_dim=spatial_dim)
        x, pooled_dim = nn.pool1d(x, mode="max", pool_size=3, padding="same", in_spatial_dim=pooled_dim)
        loop = nn.Loop(axis=pooled_dim)
        with loop:
            logits = self.out(loop.unstack(x))
            labels = loop.stack(nn.choice(logits, input_type="log_prob", target=None, search=True, beam_size=4))
        return labels


def pooled_search() -> RawDicts:
    """Two poolings to ceil(time/6) and a loop over the pooled axis with ``nn.choice(search=True)`` in it."""
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_feat = nn.FeatureDim("input", 5)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_feat]))
    model = _PooledSearch(in_feat, nn.FeatureDim("target", 7))
    model(data, spatial_dim=time_dim).mark_as_default_output()
    return rc_builders.raw_dicts(nn, model)


def with_vocabs(vocab_file: str, labels: list[str]) -> RawDicts:
    """Sparse targets whose dim has a vocab read from ``vocab_file`` (as datasets put it into extern_data), and a
    linear layer to a dim of its own whose vocab has ``labels`` (a recognition output)."""
    from returnn.datasets.util.vocabulary import Vocabulary

    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_feat = nn.FeatureDim("input", 5)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_feat]))
    vocab = Vocabulary.create_vocab(vocab_file=vocab_file, unknown_label="<unk>")
    target_dim = nn.FeatureDim("target", vocab.num_labels)
    targets = nn.Data("classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=target_dim, dtype="int32", vocab=vocab)
    nn.get_extern_data(targets)
    out_dim = nn.FeatureDim("out-labels", len(labels))
    out_dim.vocab = Vocabulary.create_vocab(vocab_file=None, labels=labels, unknown_label=None)
    model = nn.Linear(in_feat, out_dim)
    model(data).mark_as_default_output()
    return rc_builders.raw_dicts(nn, model)


ALL_BUILDERS = {
    "transformer": transformer,
    "lstm_stack": lstm_stack,
    "conv_downsampling": conv_downsampling,
    "enc_dec_loop": enc_dec_loop,
    "task12ax_lstm": task12ax_lstm,
}


def construct(extern_data: dict[str, Any], network: dict[str, Any], epochs=(1,)) -> dict[int, list[str]]:
    """RETURNN (TF graph mode) constructs the network: epoch -> names of the layers it made."""
    from returnn.config import Config

    from i6_rc_jobs._verify.returnn_check import construct_networks_from_config

    config = Config()
    config.update({"extern_data": extern_data, "network": network, "behavior_version": nn.min_returnn_behavior_version})
    return construct_networks_from_config(config, epochs)

"""
Real returnn_common models for tests and benchmarks.

Each builder returns ``(extern_data, network)``: the raw dicts of ``nn.get_returnn_config()``
(``get_extern_data_raw_dict()`` and ``get_net_dict_raw_dict(root_module)``), which still contain the real
``returnn.tensor.Dim`` objects, ``nn.LayerState`` etc. That is what i6 recipes hand to ReturnnConfig, so
serialization and hashing must cope with exactly these objects; hand-written dicts would miss the hard parts
(equal-but-distinct dims, derived dims, ``match_priority`` copies, loop state).

Every builder starts from ``nn.reset_default_root_name_ctx()``, so builders are independent of each other and
every call makes fresh Dim objects. returnn_common prints debug lines on stdout while building.

The pinned returnn_common (f7ad63a) is older than the pinned RETURNN: :func:`i6_rc_jobs.rc_compat.apply` makes it
build its models with it (``nn.Loop``, ``nn.LayerState``); it changes how returnn_common builds, not the model.
"""

from __future__ import annotations

from typing import Any

from returnn_common import nn

from i6_rc_jobs import rc_compat

nn = rc_compat.apply(nn)

__all__ = [
    "transformer",
    "lstm_stack",
    "conv_downsampling",
    "enc_dec_loop",
    "task12ax_lstm",
    "ALL_BUILDERS",
    "construct",
]

RawDicts = tuple[dict[str, Any], dict[str, Any]]


def _raw_dicts(root: nn.Module) -> RawDicts:
    """The raw extern_data and net dicts for the current (default) root name context."""
    config = nn.get_returnn_config()
    return config.get_extern_data_raw_dict(), config.get_net_dict_raw_dict(root)


class _Model(nn.Module):
    """Root module, so that all params get names relative to one module (as in a real recipe)."""


def transformer(num_layers: int = 2, model_dim: int = 64) -> RawDicts:
    """
    returnn_common's own full encoder-decoder ``nn.Transformer`` (decoder as ``nn.Loop`` over the target time),
    trained with teacher forcing on sparse targets, CE loss on the logits.
    """
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    out_time_dim = nn.SpatialDim("out-time")
    model_feat = nn.FeatureDim("model", model_dim)
    target_dim = nn.FeatureDim("target", 32)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, model_feat]))
    targets = nn.get_extern_data(
        nn.Data("classes", dim_tags=[nn.batch_dim, out_time_dim], sparse_dim=target_dim, dtype="int32")
    )
    model = nn.Transformer(
        model_dim=model_feat,
        target_dim=target_dim,
        num_heads=4,
        num_encoder_layers=num_layers,
        num_decoder_layers=num_layers,
    )
    _, logits, _, _ = model(data, source_spatial_axis=time_dim, target=targets, target_spatial_axis=out_time_dim)
    loss = nn.cross_entropy(target=targets, estimated=logits, estimated_type="logits", axis=target_dim)
    loss.mark_as_loss("ce")
    logits.mark_as_default_output()
    return _raw_dicts(model)


class _LstmStack(_Model):
    """LSTM layers over time, then a softmax over the classes."""

    def __init__(self, in_dim: nn.Dim, hidden_dim: nn.Dim, num_classes: nn.Dim, num_layers: int):
        super().__init__()
        dims = [in_dim] + [hidden_dim] * num_layers
        self.lstms = nn.ModuleList([nn.LSTM(dims[i], dims[i + 1]) for i in range(num_layers)])
        self.out = nn.Linear(hidden_dim, num_classes)

    def __call__(self, x: nn.Tensor, *, spatial_dim: nn.Dim) -> nn.Tensor:
        for lstm in self.lstms:
            x, _ = lstm(x, spatial_dim=spatial_dim)
        return nn.softmax(self.out(x), axis=self.out.out_dim)


def _lstm_softmax_ce(in_dim: int, num_classes: int, hidden: int, num_layers: int) -> RawDicts:
    """Sparse framewise classes on the same time axis as the input; CE on the softmax output."""
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_feat = nn.FeatureDim("input", in_dim)
    classes_dim = nn.FeatureDim("classes", num_classes)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_feat]))
    targets = nn.get_extern_data(
        nn.Data("classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=classes_dim, dtype="int32")
    )
    model = _LstmStack(in_feat, nn.FeatureDim("lstm", hidden), classes_dim, num_layers)
    probs = model(data, spatial_dim=time_dim)
    probs.mark_as_default_output()
    loss = nn.cross_entropy(target=targets, estimated=probs, estimated_type="probs", axis=classes_dim)
    loss.mark_as_loss("ce")
    return _raw_dicts(model)


def lstm_stack(num_layers: int = 2) -> RawDicts:
    """``num_layers`` x ``nn.LSTM`` over a dynamic time axis, softmax over 10 sparse classes, CE loss."""
    return _lstm_softmax_ce(in_dim=40, num_classes=10, hidden=64, num_layers=num_layers)


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
    return _raw_dicts(model)


class _EncDec(_Model):
    """
    LSTM encoder on time // 2 (max-pool), LSTM decoder stepping in an ``nn.Loop`` over the target time with
    ``single_step_dim``, dot attention on the encoder, teacher forcing with the previous target.
    """

    def __init__(self, in_dim: nn.Dim, target_dim: nn.Dim, hidden: int = 32):
        super().__init__()
        self.enc_dim = nn.FeatureDim("enc", hidden)
        self.encoder = nn.LSTM(in_dim, self.enc_dim)
        self.embed = nn.Embedding(target_dim, nn.FeatureDim("embed", 16))
        self.dec_dim = nn.FeatureDim("dec", hidden)
        self.decoder = nn.LSTM(self.embed.out_dim + self.enc_dim, self.dec_dim)
        self.query = nn.Linear(self.dec_dim, self.enc_dim)
        self.out = nn.Linear(self.dec_dim + self.enc_dim, target_dim)
        self.target_dim = target_dim

    def __call__(
        self, x: nn.Tensor, targets: nn.Tensor, *, spatial_dim: nn.Dim, target_spatial_dim: nn.Dim
    ) -> nn.Tensor:
        x, enc_spatial_dim = nn.pool1d(
            x, mode="max", pool_size=2, padding="valid", in_spatial_dim=spatial_dim, out_spatial_dim=spatial_dim // 2
        )
        enc, _ = self.encoder(x, spatial_dim=enc_spatial_dim)
        batch_dims = enc.remaining_dims((enc_spatial_dim, self.enc_dim))
        loop = nn.Loop(axis=target_spatial_dim)
        loop.state.decoder = self.decoder.default_initial_state(batch_dims=batch_dims)
        loop.state.att = nn.zeros(list(batch_dims) + [self.enc_dim])
        loop.state.target = nn.constant(value=0, shape=batch_dims, sparse_dim=self.target_dim)  # BOS
        with loop:
            dec_in = nn.concat_features(self.embed(loop.state.target), loop.state.att)
            dec, loop.state.decoder = self.decoder(dec_in, spatial_dim=nn.single_step_dim, state=loop.state.decoder)
            loop.state.att = nn.dot_attention(
                self.query(dec), enc, enc, key_dim=self.enc_dim, axis=enc_spatial_dim, att_dropout=0.0
            )
            logits = loop.stack(self.out(nn.concat_features(dec, loop.state.att)))
            loop.state.target = loop.unstack(targets)  # teacher forcing: the next step sees this target
        return logits


def enc_dec_loop() -> RawDicts:
    """Attention encoder-decoder with a decoder ``nn.Loop``; contains LayerState, single_step_dim, time // 2."""
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    out_time_dim = nn.SpatialDim("out-time")
    in_feat = nn.FeatureDim("input", 40)
    target_dim = nn.FeatureDim("target", 20)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_feat]))
    targets = nn.get_extern_data(
        nn.Data("classes", dim_tags=[nn.batch_dim, out_time_dim], sparse_dim=target_dim, dtype="int32")
    )
    model = _EncDec(in_feat, target_dim)
    logits = model(data, targets, spatial_dim=time_dim, target_spatial_dim=out_time_dim)
    logits.mark_as_default_output()
    loss = nn.cross_entropy(target=targets, estimated=logits, estimated_type="logits", axis=target_dim)
    loss.mark_as_loss("ce")
    return _raw_dicts(model)


def task12ax_lstm() -> RawDicts:
    """
    Model for RETURNN's ``Task12AXDataset`` ("data": 9 dense features, "classes": 2 sparse classes on the same
    time axis): one LSTM, softmax, CE loss. Small enough to train for real in a test.
    """
    return _lstm_softmax_ce(in_dim=9, num_classes=2, hidden=16, num_layers=1)


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

    from i6_rc_jobs.returnn_check import construct_networks_from_config

    config = Config()
    config.update({"extern_data": extern_data, "network": network, "behavior_version": nn.min_returnn_behavior_version})
    return construct_networks_from_config(config, epochs)

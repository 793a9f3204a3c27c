"""The returnn_common models ``transformer``, ``lstm_stack`` and ``enc_dec_loop``, written once for any returnn_common
``nn`` from 2022-04 on (the first argument of each builder), against the API that changed under them: tests.rc_models
builds them with the installed ``nn``, bench.graph_history with each commit's. Each returns the raw
``(extern_data, network)`` dicts of the current root name context. Nothing here imports returnn_common, so that a
process holds only the ``nn`` it builds with.

Adapters, each chosen by what the given ``nn`` has (never by a date), with the commits they cover:
- ``nn.LSTM`` before 2022-10-06 (1e44765, in_dim optional): made with out_dim, then ``_lazy_init(in_dim)`` (note 1).
- ``nn.Linear``: ``in_dim=``/``out_dim=`` as keywords, which every version takes (positional since aa70295).
- ``LSTM.__call__``'s time dim is ``axis=`` before 2022-10-21 (9528a3c), ``spatial_dim=`` since.
- ``LSTM.default_initial_state()`` takes no arguments before 2022-08-25 (060ff0a), ``batch_dims=`` since.
- ``Tensor.mark_as_loss()`` without a name before 2022-09-14 (5ab6f7a), ``mark_as_loss(name)`` since.
- ``nn.concat_features`` exists since 2022-08-19 (e29d8bc); before, ``nn.concat`` of each input with its feature dim.
- ``nn.Embedding`` exists since 2023-03-12 (1bfdf29); before, ``nn.Linear``, which embedded sparse inputs.
- ``nn.scoped`` before 2022-06-12 (3834ae4): the models' ``__call__`` are decorated with it, as modules then were.

Note 1: given in_dim, ``_Rec.__init__`` set it before calling ``_lazy_init``, which then saw it set and made no
parameters; left out, the LSTM made them at its first call, inside the decoder loop. Before 3834ae4 a parameter made
inside a loop sat in the loop, where today's RETURNN fails on its random init; the Transformer's own lazy target
embedding does, so the Transformer is unbuildable there.

The batch dims of the loop states are ``[nn.batch_dim]`` (what ``Tensor.remaining_dims``, since 2023-02-28, gives
here). Adapters are chosen outside the model code and called as lambdas: returnn_common names layers after the
functions on the stack that hold tensors (but not lambdas), so a helper function there would rename layers.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

from i6_rc_jobs._compat.rc_compat import _scoped_function

RawDicts = tuple[dict[str, Any], dict[str, Any]]


def _params(nn: types.ModuleType, func: Callable) -> set[str]:
    """The parameter names of ``func``, also behind ``nn.scoped``'s wrapper (whose own are ``*args, name, **kwargs``)."""
    return set(inspect.signature(_scoped_function(nn, func)).parameters)


def _requires(func: Callable, name: str) -> bool:
    """Whether ``func`` has a parameter ``name`` without a default."""
    parameter = inspect.signature(func).parameters.get(name)
    return parameter is not None and parameter.default is inspect.Parameter.empty


def _with_parameters(rec: Any, in_dim: Any) -> Any:
    """``rec`` (an ``nn.LSTM`` made without in_dim) with its parameters for ``in_dim``, made now, as ``_Rec.__init__``
    meant to make them when given in_dim (see the module docstring)."""
    rec._lazy_init(in_dim)
    return rec


class _Api:
    """The adapters for one ``nn`` (see the module docstring)."""

    def __init__(self, nn: types.ModuleType):
        if _requires(nn.LSTM.__init__, "in_dim"):
            self.lstm = lambda in_dim, out_dim: nn.LSTM(in_dim=in_dim, out_dim=out_dim)
        else:
            self.lstm = lambda in_dim, out_dim: _with_parameters(nn.LSTM(out_dim=out_dim), in_dim)
        self.spatial_kw = "spatial_dim" if "spatial_dim" in _params(nn, nn.LSTM.__call__) else "axis"
        if "name" in _params(nn, nn.Tensor.mark_as_loss):
            self.mark_as_loss = lambda loss, name: loss.mark_as_loss(name)
        else:
            self.mark_as_loss = lambda loss, name: loss.mark_as_loss()
        if "batch_dims" in _params(nn, nn.LSTM.default_initial_state):
            self.initial_state = lambda rec: rec.default_initial_state(batch_dims=[nn.batch_dim])
        else:
            self.initial_state = lambda rec: rec.default_initial_state()
        embedding = getattr(nn, "Embedding", nn.Linear)
        self.embedding = lambda in_dim, out_dim: embedding(in_dim=in_dim, out_dim=out_dim)
        if hasattr(nn, "concat_features"):
            self.concat_features = nn.concat_features
        else:
            self.concat_features = lambda *xs: nn.concat(*[(x, x.feature_dim) for x in xs])
        self.scoped = getattr(nn, "scoped", lambda func: func)


def raw_dicts(nn: types.ModuleType, root: Any) -> RawDicts:
    """The raw extern_data and net dicts for the current (default) root name context."""
    config = nn.get_returnn_config()
    return config.get_extern_data_raw_dict(), config.get_net_dict_raw_dict(root_module=root)


def transformer(nn: types.ModuleType, num_layers: int = 2, model_dim: int = 64) -> RawDicts:
    """returnn_common's own full encoder-decoder ``nn.Transformer`` (decoder as ``nn.Loop`` over the target time),
    trained with teacher forcing on sparse targets, CE loss on the logits."""
    api = _Api(nn)
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
    api.mark_as_loss(loss, "ce")
    logits.mark_as_default_output()
    return raw_dicts(nn, model)


def lstm_stack(
    nn: types.ModuleType, num_layers: int = 2, *, in_dim: int = 40, num_classes: int = 10, hidden: int = 64
) -> RawDicts:
    """``num_layers`` x ``nn.LSTM`` over a dynamic time axis, softmax over ``num_classes`` sparse classes, CE loss."""
    api = _Api(nn)

    class _LstmStack(nn.Module):
        def __init__(self, in_dim: Any, hidden_dim: Any, num_classes: Any, num_layers: int):
            super().__init__()
            dims = [in_dim] + [hidden_dim] * num_layers
            self.lstms = nn.ModuleList([api.lstm(dims[i], dims[i + 1]) for i in range(num_layers)])
            self.out = nn.Linear(in_dim=hidden_dim, out_dim=num_classes)

        @api.scoped
        def __call__(self, x: Any, *, spatial_dim: Any) -> Any:
            for lstm in self.lstms:
                x, _ = lstm(x, **{api.spatial_kw: spatial_dim})
            return nn.softmax(self.out(x), axis=self.out.out_dim)

    return _lstm_softmax_ce(nn, api, _LstmStack, in_dim, num_classes, hidden, num_layers)


def _lstm_softmax_ce(
    nn: types.ModuleType, api: _Api, model_class: type, in_dim: int, num_classes: int, hidden: int, num_layers: int
) -> RawDicts:
    """Sparse framewise classes on the same time axis as the input; CE on the softmax output. The tensors are held in
    this function's frame, as when the golden hashes were pinned (returnn_common may name layers after such frames)."""
    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_feat = nn.FeatureDim("input", in_dim)
    classes_dim = nn.FeatureDim("classes", num_classes)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_feat]))
    targets = nn.get_extern_data(
        nn.Data("classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=classes_dim, dtype="int32")
    )
    model = model_class(in_feat, nn.FeatureDim("lstm", hidden), classes_dim, num_layers)
    probs = model(data, spatial_dim=time_dim)
    probs.mark_as_default_output()
    loss = nn.cross_entropy(target=targets, estimated=probs, estimated_type="probs", axis=classes_dim)
    api.mark_as_loss(loss, "ce")
    return raw_dicts(nn, model)


def enc_dec_loop(nn: types.ModuleType) -> RawDicts:
    """LSTM encoder on time // 2 (max-pool), LSTM decoder stepping in an ``nn.Loop`` over the target time with
    ``single_step_dim``, dot attention on the encoder, teacher forcing with the previous target; the net holds
    LayerState, single_step_dim and time // 2."""
    api = _Api(nn)

    class _EncDec(nn.Module):
        def __init__(self, in_dim: Any, target_dim: Any, hidden: int = 32):
            super().__init__()
            self.enc_dim = nn.FeatureDim("enc", hidden)
            self.encoder = api.lstm(in_dim, self.enc_dim)
            self.embed = api.embedding(target_dim, nn.FeatureDim("embed", 16))
            self.dec_dim = nn.FeatureDim("dec", hidden)
            self.decoder = api.lstm(self.embed.out_dim + self.enc_dim, self.dec_dim)
            self.query = nn.Linear(in_dim=self.dec_dim, out_dim=self.enc_dim)
            self.out = nn.Linear(in_dim=self.dec_dim + self.enc_dim, out_dim=target_dim)
            self.target_dim = target_dim

        @api.scoped
        def __call__(self, x: Any, targets: Any, *, spatial_dim: Any, target_spatial_dim: Any) -> Any:
            x, enc_spatial_dim = nn.pool1d(
                x,
                mode="max",
                pool_size=2,
                padding="valid",
                in_spatial_dim=spatial_dim,
                out_spatial_dim=spatial_dim // 2,
            )
            enc, _ = self.encoder(x, **{api.spatial_kw: enc_spatial_dim})
            batch_dims = [nn.batch_dim]
            loop = nn.Loop(axis=target_spatial_dim)
            loop.state.decoder = api.initial_state(self.decoder)
            loop.state.att = nn.zeros(list(batch_dims) + [self.enc_dim])
            loop.state.target = nn.constant(value=0, shape=batch_dims, sparse_dim=self.target_dim)  # BOS
            with loop:
                dec_in = api.concat_features(self.embed(loop.state.target), loop.state.att)
                dec, loop.state.decoder = self.decoder(
                    dec_in, **{api.spatial_kw: nn.single_step_dim}, state=loop.state.decoder
                )
                loop.state.att = nn.dot_attention(
                    self.query(dec), enc, enc, key_dim=self.enc_dim, axis=enc_spatial_dim, att_dropout=0.0
                )
                logits = loop.stack(self.out(api.concat_features(dec, loop.state.att)))
                loop.state.target = loop.unstack(targets)  # teacher forcing: the next step sees this target
            return logits

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
    api.mark_as_loss(loss, "ce")
    return raw_dicts(nn, model)

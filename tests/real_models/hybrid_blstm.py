"""
Hybrid NN-HMM: a BLSTM encoder with its SpecAugment under ``nn.Cond(nn.train_flag())``, a framewise softmax over
CART states and a CE loss on the alignment, on the input's time axis.

Source (rwth-i6/i6_experiments at commit 6b0591b10c1b5a4c40d51d3590b6c7bb7341ddab):
- ``users/rossenbach/experiments/librispeech/librispeech_100_hybrid/rc_networks/default_hybrid_v2.py``: all of it,
  as written;
- ``users/rossenbach/experiments/librispeech/librispeech_100_hybrid/configs/rc_baseline.py``: the ``net_kwargs`` and
  extern data given to ``construct_hybrid_network``, in :func:`build`.

Changes: returnn_common's API rename ``Tensor.shape`` -> ``Tensor.dims_set`` (94292c2, 2023-02-26, "prepare for
Tensor merge") in ``HybridHMM.__call__``. The config's sizes are scaled down for the tests' runtime (``num_layers``
8 -> 2, ``size`` 1024 -> 64); 50 input features and 12001 CART states as in the setup.

Training: a step on generated data.
"""

from typing import Any, Callable, Optional, Tuple

from returnn_common import nn
from returnn_common.nn.hybrid_hmm import IHybridHMM, EncoderType, ISeqFramewiseEncoder, ISeqDownsamplingEncoder
from returnn_common.asr.specaugment import specaugment_v2, random_mask_v2

from tests.real_models import Stages, nn, stage

KIND = "hybrid NN-HMM (BLSTM, framewise CE)"
SOURCE = "users/rossenbach/experiments/librispeech/librispeech_100_hybrid/rc_networks/default_hybrid_v2.py"
TRAINS = None
SEQ_LENS = 25  # one length for all: the data and its alignment share the time dim
STAGES = (1,)
SEARCH_STAGES: tuple = ()


def flexible_specaugment(
    x: nn.Tensor,
    *,
    spatial_dim: nn.Dim,
    feature_dim: nn.Dim = nn.NotSpecified,
    only_on_train: bool = True,
    min_frame_masks=2,
    mask_each_n_frames=25,
    max_frames_per_mask=20,
    min_feature_masks=2,
    max_feature_masks=5,
    max_features_per_mask=8,
) -> nn.Tensor:
    """
    SpecAugment :func:`specaugment_v2` but with adjustable parameters
    """
    if feature_dim is nn.NotSpecified:
        assert x.feature_dim
        feature_dim = x.feature_dim

    with nn.Cond(nn.train_flag() | (not only_on_train)) as cond:
        x_masked = x
        spatial_len = nn.dim_value(spatial_dim)
        # time mask
        x_masked = random_mask_v2(
            x_masked,
            mask_axis=spatial_dim,
            broadcast_axis=feature_dim,
            min_num=nn.minimum(min_frame_masks, spatial_len),
            max_num=nn.minimum(nn.maximum(spatial_len // mask_each_n_frames, min_frame_masks), spatial_len),
            max_dims=max_frames_per_mask,
        )
        # feature mask
        x_masked = random_mask_v2(
            x_masked,
            mask_axis=feature_dim,
            broadcast_axis=spatial_dim,
            min_num=min_feature_masks,
            max_num=max_feature_masks,
            max_dims=max_features_per_mask,
        )
        cond.true = x_masked
        cond.false = x
    return cond.result


class BLSTMLayer(nn.Module):
    """
    BLSTM with time broadcasted dropout
    """

    def __init__(self, in_dim: nn.Dim, size=512, dropout: float = 0.0):
        super().__init__()
        self.lstm_dim = nn.FeatureDim(description="BLSTM-out-dim", dimension=size)
        self.out_dim = 2 * self.lstm_dim
        self.fwd_lstm = nn.LSTM(in_dim=in_dim, out_dim=self.lstm_dim)
        self.bwd_lstm = nn.LSTM(in_dim=in_dim, out_dim=self.lstm_dim)
        self.dropout = dropout

    def __call__(self, source: nn.Tensor, time_dim: nn.Dim):
        fwd, _ = self.fwd_lstm(source, spatial_dim=time_dim, direction=1)
        bwd, _ = self.bwd_lstm(source, spatial_dim=time_dim, direction=-1)
        concat, _ = nn.concat((fwd, self.lstm_dim), (bwd, self.lstm_dim))
        if self.dropout > 0.0:
            return nn.dropout(concat, self.dropout, axis=[nn.batch_dim, concat.feature_dim])
        else:
            return concat


class BLSTMEncoder(ISeqFramewiseEncoder):
    """
    BLSTM encoder with specaugment
    """

    def __init__(self, in_dim: nn.Dim, num_layers: int, size: int, dropout: float, specaugment_options=None):
        super().__init__()
        self.specaugment_options = specaugment_options

        running_dim = in_dim
        blstm_layers = []
        for _ in range(num_layers):
            blstm_layer = BLSTMLayer(in_dim=running_dim, size=size, dropout=dropout)
            blstm_layers.append(blstm_layer)
            running_dim = blstm_layer.out_dim

        self.out_dim = running_dim
        self.blstm_stack = nn.Sequential(blstm_layers)

    def __call__(self, source: nn.Tensor, *, spatial_dim: nn.Dim) -> nn.Tensor:
        if self.specaugment_options:
            source = flexible_specaugment(
                source, spatial_dim=spatial_dim, feature_dim=source.feature_dim, **self.specaugment_options
            )
        return self.blstm_stack(source, time_dim=spatial_dim)


class HybridHMM(IHybridHMM):
    """
    Hybrid NN-HMM
    """

    def __init__(self, *, encoder: EncoderType, out_dim: nn.Dim, focal_loss_scale: float = 0.0):
        super().__init__()
        self.encoder = encoder
        self.focal_loss_scale = focal_loss_scale
        self.out_dim = out_dim
        self.out_projection = nn.Linear(in_dim=self.encoder.out_dim, out_dim=out_dim)

    def __call__(
        self,
        source: nn.Tensor,
        *,
        state: Optional[nn.LayerState] = None,
        train: bool = False,
        targets: Optional[nn.Tensor] = None,
    ) -> Tuple[nn.Tensor, Optional[nn.LayerState]]:
        assert source.data.time_dim_axis is not None
        in_spatial_dim = source.data.dim_tags[source.data.time_dim_axis]
        assert state is None, f"{self} stateful hybrid HMM not supported yet"
        if isinstance(self.encoder, ISeqFramewiseEncoder):
            encoder_output = self.encoder(source, spatial_dim=in_spatial_dim)
            out_spatial_dim = in_spatial_dim
        elif isinstance(self.encoder, ISeqDownsamplingEncoder):
            encoder_output, out_spatial_dim = self.encoder(source, in_spatial_dim=in_spatial_dim)
        else:
            raise TypeError(f"unsupported encoder type {type(self.encoder)}")
        out_embed = self.out_projection(encoder_output)
        if train:
            assert out_spatial_dim in targets.dims_set  # Tensor.shape before returnn_common 94292c2
            ce_loss = nn.sparse_softmax_cross_entropy_with_logits(logits=out_embed, targets=targets, axis=self.out_dim)
            # focal loss (= more emphasis on "low" scores), might not be correct yet
            if self.focal_loss_scale > 0.0:
                ce_loss *= (1.0 - nn.exp(-ce_loss)) ** self.focal_loss_scale
            ce_loss.mark_as_loss(name="default_ce")
        return nn.log_softmax(out_embed, axis=self.out_dim), None


def construct_hybrid_network(epoch: int, train: bool, audio_data: nn.Data, label_data: nn.Data, **kwargs):
    """
    :param epoch:
    :param train:
    :param encoder:
    :param audio_data:
    :param label_data:
    :param kwargs: encoder kwargs
    :return:
    """
    label_feature_dim = label_data.sparse_dim
    focal_loss_scale = kwargs.pop("focal_loss_scale", 0.0)
    enc = BLSTMEncoder(in_dim=audio_data.feature_dim_or_sparse_dim, **kwargs)
    net = HybridHMM(encoder=enc, out_dim=label_feature_dim, focal_loss_scale=focal_loss_scale)
    out, _ = net(source=nn.get_extern_data(audio_data), train=train, targets=nn.get_extern_data(label_data))
    out.mark_as_default_output()

    return net


def build() -> Stages:
    """One stage: the training net of rc_baseline.py (``train=True``)."""
    time_dim = nn.SpatialDim("time")
    audio_data = nn.Data("data", dim_tags=[nn.batch_dim, time_dim, nn.FeatureDim("feature", 50)], dtype="float32")
    label_data = nn.Data(
        "classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=nn.FeatureDim("classes", 12001), dtype="int32"
    )
    net_kwargs = {
        "train": True,
        "num_layers": 2,
        "size": 64,
        "dropout": 0.0,
        "specaugment_options": {
            "min_frame_masks": 1,
            "mask_each_n_frames": 100,
            "max_frames_per_mask": 20,
            "min_feature_masks": 1,
            "max_feature_masks": 2,
            "max_features_per_mask": 10,
        },
    }
    return {1: stage(lambda: construct_hybrid_network(1, audio_data=audio_data, label_data=label_data, **net_kwargs))}

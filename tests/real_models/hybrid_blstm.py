"""
Hybrid NN-HMM: a BLSTM encoder with its SpecAugment under ``nn.Cond(nn.train_flag())``, a framewise softmax over
CART states and a CE loss on the alignment, on the input's time axis.

Loaded from the checkout: ``users/rossenbach/experiments/librispeech/librispeech_100_hybrid/rc_networks/
default_hybrid_v2.py``. Adaptation (:data:`DIMS_SET`): returnn_common renamed ``Tensor.shape`` to ``Tensor.dims_set``
(94292c2, 2023-02-26, "prepare for Tensor merge"), which ``HybridHMM.__call__`` asserts on.

Built here (:func:`build`): the ``net_kwargs`` and extern data that ``users/rossenbach/experiments/librispeech/
librispeech_100_hybrid/configs/rc_baseline.py`` gives ``construct_hybrid_network``, its sizes scaled down for the
tests' runtime (``num_layers`` 8 -> 2, ``size`` 1024 -> 64); 50 input features and 12001 CART states as in the setup.

Training: a step on generated data.
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, nn, stage

KIND = "hybrid NN-HMM (BLSTM, framewise CE)"
SOURCE = "users/rossenbach/experiments/librispeech/librispeech_100_hybrid/rc_networks/default_hybrid_v2.py"
TRAINS = None
SEQ_LENS = 25  # one length for all: the data and its alignment share the time dim
STAGES = (1,)
SEARCH_STAGES: tuple = ()

DIMS_SET = checkout.Adaptation(
    "Tensor.dims_set (Tensor.shape before returnn_common 94292c2)",
    "assert out_spatial_dim in targets.shape",
    "assert out_spatial_dim in targets.dims_set",
)

model = checkout.load(SOURCE, DIMS_SET)


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
    return {
        1: stage(lambda: model.construct_hybrid_network(1, audio_data=audio_data, label_data=label_data, **net_kwargs))
    }

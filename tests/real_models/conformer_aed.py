"""
Conformer attention encoder-decoder: log-mel features computed in the net (STFT, mel filterbank), a conv front end
with time strides 3 and 2, a Conformer encoder, a CTC loss on the encoder, and an LSTM decoder with MLP attention and
attention-weight feedback stepping in an ``nn.Loop`` over the BPE targets (teacher forcing, CE loss).

Loaded from the checkout, as it is: ``users/rossenbach/experiments/librispeech/librispeech_100_attention/
rc_conformer_2023/rc_networks/conformer_aed_trial.py`` (with the ``features.py`` and ``rescale_tests.py`` beside it,
which it imports).

Built here (:func:`build`): the extern data (audio samples, BPE labels) and an encoder of 2 layers instead of the
default 12, for the tests' runtime (``num_layers`` is an argument of ``construct_network``).

Training: a step on generated data.
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, nn, stage

KIND = "attention encoder-decoder (log-mel, Conformer, LSTM decoder in nn.Loop, CTC + CE)"
SOURCE = (
    "users/rossenbach/experiments/librispeech/librispeech_100_attention/rc_conformer_2023/rc_networks/"
    "conformer_aed_trial.py"
)
TRAINS = None
SEQ_LENS = {"audio_features": (3200, 4000), "bpe_labels": (2, 3)}
STAGES = (1,)
SEARCH_STAGES: tuple = ()

model = checkout.load(SOURCE)


def build() -> Stages:
    """The training net (CTC and CE losses)."""
    audio_features = nn.Data(
        "audio_features",
        dim_tags=[nn.batch_dim, nn.SpatialDim("audio_time"), nn.FeatureDim("audio_samples", 1)],
        dtype="float32",
    )
    bpe_labels = nn.Data(
        "bpe_labels",
        dim_tags=[nn.batch_dim, nn.SpatialDim("bpe_time")],
        sparse_dim=nn.FeatureDim("bpe_labels", 185),
        dtype="int32",
    )
    return {1: stage(lambda: model.construct_network(1, audio_features, bpe_labels, num_layers=2))}

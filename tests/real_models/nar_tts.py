"""
Non-autoregressive TTS (Tacotron-like without attention): phoneme and speaker embeddings, a conv stack and BLSTM
encoder, a duration predictor (L1 loss on the given durations), Gaussian upsampling to the audio frames by the
durations with LSTM-predicted variances, a BLSTM decoder and an L1 loss on the audio features; the upsampled time is
declared the same as the audio time (``declare_same_as``).

Loaded from the checkout: ``users/rossenbach/experiments/alignment_analysis_tts/rc_networks/nar_nonatt_taco.py``
(with the ``gaussian_upsampling.py`` beside it, which it imports). Adaptations:

- its ``Conv1DBlock`` and ``ConvStack`` come from ``users/rossenbach/experiments/unnormalized_tts/rc_networks/
  conv_modules.py``, the researcher's newer copy of the ``conv_modules.py`` beside it, whose ``ConvStack`` refuses the
  call ``nar_nonatt_taco.py`` makes (three layers with the default one ``dim_sizes``) (:data:`CONV_MODULES`);
- returnn_common's API renames: ``LSTM.__call__``'s ``axis=`` is ``spatial_dim=`` since 9528a3c (2022-10-21), in
  ``Decoder`` and ``NARTTSModel`` (:data:`LSTM_SPATIAL_DIM`); ``nn.reinterpret_new_dim`` is ``nn.replace_dim``
  (:func:`tests.real_models.checkout.replace_dim`); ``NARTTSModel.embedding`` and ``.speaker_embedding`` were
  ``nn.Linear`` on sparse labels, ``nn.Embedding`` since 1bfdf29 (2023-03-12, without the bias the old Linear added)
  (:data:`EMBEDDINGS`).

Built here (:func:`build`): the extern data (phonemes, speaker labels, durations, audio features).

Training: not on generated data: a sequence needs one duration per phoneme (the durations' time is replaced by the
phonemes') adding up to its audio frames (the upsampled time is declared the same as the audio time); generated data has
lengths and values of its own (RETURNN fails with ``InvalidArgumentError: Input to reshape is a tensor with 10
values, but the requested shape has 14``).
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, nn, stage

KIND = "non-autoregressive TTS (duration model, Gaussian upsampling)"
SOURCE = "users/rossenbach/experiments/alignment_analysis_tts/rc_networks/nar_nonatt_taco.py"
TRAINS = "generated data has neither one duration per phoneme nor durations adding up to the audio frames"
STAGES = (1,)
SEARCH_STAGES: tuple = ()

CONV_MODULES = checkout.Adaptation(
    "the conv modules of unnormalized_tts, whose ConvStack takes one size for all layers",
    "from .conv_modules import ",
    "from ...unnormalized_tts.rc_networks.conv_modules import ",
)
LSTM_SPATIAL_DIM = (
    checkout.Adaptation(
        "LSTM.__call__'s spatial_dim (axis before returnn_common 9528a3c)",
        "axis=time_dim, direction=",
        "spatial_dim=time_dim, direction=",
        4,
    ),
    checkout.Adaptation(
        "LSTM.__call__'s spatial_dim (axis before returnn_common 9528a3c)",
        "axis=phon_time_dim, direction=",
        "spatial_dim=phon_time_dim, direction=",
        2,
    ),
)
EMBEDDINGS = (
    checkout.Adaptation(
        "nn.Embedding for the phoneme embedding (nn.Linear before returnn_common 1bfdf29)",
        "self.embedding = nn.Linear(in_dim=label_in_dim,",
        "self.embedding = nn.Embedding(in_dim=label_in_dim,",
    ),
    checkout.Adaptation(
        "nn.Embedding for the speaker embedding (nn.Linear before returnn_common 1bfdf29)",
        "self.speaker_embedding = nn.Linear(in_dim=speaker_in_dim,",
        "self.speaker_embedding = nn.Embedding(in_dim=speaker_in_dim,",
    ),
)

model = checkout.load(SOURCE, CONV_MODULES, *LSTM_SPATIAL_DIM, checkout.replace_dim(2), *EMBEDDINGS)


def build() -> Stages:
    """The training net (``training=True``, the given durations)."""
    phoneme_data = nn.Data(
        "phonemes",
        dim_tags=[nn.batch_dim, nn.SpatialDim("phoneme_time")],
        sparse_dim=nn.FeatureDim("phonemes", 44),
        dtype="int32",
    )
    speaker_label_data = nn.Data(
        "speaker_labels",
        dim_tags=[nn.batch_dim, nn.SpatialDim("speaker_label_time")],
        sparse_dim=nn.FeatureDim("speaker_labels", 251),
        dtype="int32",
    )
    phoneme_duration_data = nn.Data(
        "durations",
        dim_tags=[nn.batch_dim, nn.SpatialDim("duration_time"), nn.FeatureDim("duration", 1)],
        dtype="int32",
    )
    audio_data = nn.Data(
        "audio_features", dim_tags=[nn.batch_dim, nn.SpatialDim("audio_time"), nn.FeatureDim("audio_features", 80)]
    )
    return {
        1: stage(
            lambda: model.construct_network(
                1,
                phoneme_data=phoneme_data,
                speaker_label_data=speaker_label_data,
                phoneme_duration_data=phoneme_duration_data,
                audio_data=audio_data,
            )
        )
    }

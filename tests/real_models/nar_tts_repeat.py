"""
Non-autoregressive TTS: phoneme and speaker embeddings, a conv stack and BLSTM encoder, a duration predictor (L1 loss
on the given durations), the encoder repeated by the durations (``nn.repeat``), a BLSTM decoder and an L1 loss on the
audio features; the repeated time is declared the same as the audio time (``declare_same_as`` on an extern data dim)
and the audio features' dim the same as the decoder's.

Loaded from the checkout: ``users/hilmes/experiments/librispeech/nar_tts_2022/networks/tts_model.py``, built with its
default options. Adaptations, returnn_common's API renames: ``nn.reinterpret_new_dim`` is ``nn.replace_dim``
(:func:`tests.real_models.checkout.replace_dim`); ``Tensor.shape_ordered`` is ``Tensor.dims`` since 9b3095f
(2023-02-26, "prepare for Tensor merge") (:data:`DIMS`); ``NARTTSModel.embedding`` and ``.speaker_embedding`` were
``nn.Linear`` on sparse labels, ``nn.Embedding`` since 1bfdf29 (2023-03-12, without the bias the old Linear added)
(:data:`EMBEDDINGS`).

Its other options do not build with today's RETURNN, which matches dims by identity and no longer reorders sums of
dims: with ``use_vae``, the duration predictor's in_dim ``(2*enc+speaker)+vae`` is not the input's
``2*enc+(speaker+vae)``; with ``use_pitch_pred``/``use_energy_pred``, the embeddings of the predictions take
``FeatureDim("pred_dim", 1)``, not the predictor's own ``pitch_pred`` dim of the same size.

Built here (:func:`build`): the extern data (phonemes, durations, speaker labels, audio features).

Training: not on generated data: a sequence needs one duration per phoneme (the durations' time is replaced by the
phonemes') adding up to its audio frames (the repeated time is declared the same as the audio time); generated data has
lengths and values of its own (RETURNN fails with ``InvalidArgumentError: Input to reshape is a tensor with 10
values, but the requested shape has 14``).
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, nn, stage

KIND = "non-autoregressive TTS (duration model, nn.repeat)"
SOURCE = "users/hilmes/experiments/librispeech/nar_tts_2022/networks/tts_model.py"
TRAINS = "generated data has neither one duration per phoneme nor durations adding up to the audio frames"
STAGES = (1,)
SEARCH_STAGES: tuple = ()

DIMS = checkout.Adaptation(
    "Tensor.dims (Tensor.shape_ordered before returnn_common 9b3095f)", ".shape_ordered", ".dims", 3
)
EMBEDDINGS = (
    checkout.Adaptation(
        "nn.Embedding for the phoneme embedding (nn.Linear before returnn_common 1bfdf29)",
        "self.embedding = nn.Linear(out_dim=self.embedding_dim,",
        "self.embedding = nn.Embedding(out_dim=self.embedding_dim,",
    ),
    checkout.Adaptation(
        "nn.Embedding for the speaker embedding (nn.Linear before returnn_common 1bfdf29)",
        "self.speaker_embedding = nn.Linear(out_dim=self.speaker_embedding_dim,",
        "self.speaker_embedding = nn.Embedding(out_dim=self.speaker_embedding_dim,",
    ),
)

model = checkout.load(SOURCE, checkout.replace_dim(3), DIMS, *EMBEDDINGS)


def build() -> Stages:
    """The training net."""
    time_dim = nn.SpatialDim("phoneme_time")
    label_time_dim = nn.SpatialDim("speaker_label_time")
    speech_time_dim = nn.SpatialDim("audio_time")
    duration_time_dim = nn.SpatialDim("duration_time")
    data = dict(
        phoneme_data=nn.Data(
            "phonemes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=nn.FeatureDim("phonemes", 44), dtype="int32"
        ),
        duration_data=nn.Data(
            "durations", dim_tags=[nn.batch_dim, duration_time_dim, nn.FeatureDim("duration", 1)], dtype="int32"
        ),
        label_data=nn.Data(
            "speaker_labels",
            dim_tags=[nn.batch_dim, label_time_dim],
            sparse_dim=nn.FeatureDim("speaker_labels", 251),
            dtype="int32",
        ),
        audio_data=nn.Data(
            "audio_features", dim_tags=[nn.batch_dim, speech_time_dim, nn.FeatureDim("audio_features", 80)]
        ),
        time_dim=time_dim,
        label_time_dim=label_time_dim,
        speech_time_dim=speech_time_dim,
        duration_time_dim=duration_time_dim,
    )
    return {1: stage(lambda: model.construct_network(1, model.NARTTSModel, **data))}

"""
CTC aligner for TTS: speaker and audio embeddings, a conv stack and a BLSTM, a CTC loss over the phonemes and a
reconstruction (MSE) loss through a BLSTM decoder of the phoneme posteriors (training); for extraction
(``training=False``), a CTC forced alignment of the phonemes dumped to HDF.

Loaded from the checkout: ``users/rossenbach/experiments/alignment_analysis_tts/rc_networks/ctc_aligner_v2.py``.
Adaptations, returnn_common's API renames:

- ``CTCAligner.speaker_embedding`` was ``nn.Linear(in_dim=in_speaker_dim, ...)`` on the sparse speaker labels; since
  returnn_common 1bfdf29 (2023-03-12, "Embedding separate from Linear") that is ``nn.Embedding(in_dim=in_speaker_dim,
  ...)`` (without the bias the old Linear added) (:data:`SPEAKER_EMBEDDING`);
- ``nn.reinterpret_new_dim`` is ``nn.replace_dim`` (:func:`tests.real_models.checkout.replace_dim`).

Built here (:func:`build`): the extern data of ``users/rossenbach/experiments/alignment_analysis_tts/ctc_aligner/
config.py`` (audio features, speaker labels, phonemes) and ``training=False`` of its forward config.

Training: a step on generated data (stage 1); the ``"align"`` stage is the forward net.
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, nn, stage

KIND = "CTC aligner for TTS (CTC + reconstruction loss; forced alignment)"
SOURCE = "users/rossenbach/experiments/alignment_analysis_tts/rc_networks/ctc_aligner_v2.py"
TRAINS = None
SEQ_LENS = {"audio_features": (40, 50), "phonemes": (5, 8), "speaker_labels": 1}
STAGES = (1, "align")
SEARCH_STAGES: tuple = ()

SPEAKER_EMBEDDING = checkout.Adaptation(
    "nn.Embedding for the speaker embedding (nn.Linear before returnn_common 1bfdf29)",
    "self.speaker_embedding = nn.Linear(in_dim=in_speaker_dim,",
    "self.speaker_embedding = nn.Embedding(in_dim=in_speaker_dim,",
)

model = checkout.load(SOURCE, SPEAKER_EMBEDDING, checkout.replace_dim(1))


def build() -> Stages:
    """The training net (stage 1) and the forward net that extracts the alignment (``"align"``)."""
    audio_time_dim = nn.SpatialDim("audio_time")
    label_time_dim = nn.SpatialDim("speaker_label_time", 1)
    phoneme_time_dim = nn.SpatialDim("phoneme_time")
    audio_data = nn.Data("audio_features", dim_tags=[nn.batch_dim, audio_time_dim, nn.FeatureDim("audio_features", 80)])
    label_data = nn.Data(
        "speaker_labels",
        dim_tags=[nn.batch_dim, label_time_dim],
        sparse_dim=nn.FeatureDim("speaker_labels", 251),
        dtype="int32",
    )
    phoneme_data = nn.Data(
        "phonemes", dim_tags=[nn.batch_dim, phoneme_time_dim], sparse_dim=nn.FeatureDim("phonemes", 44), dtype="int32"
    )
    data = dict(
        audio_data=audio_data,
        label_data=label_data,
        phoneme_data=phoneme_data,
        audio_time_dim=audio_time_dim,
        label_time_dim=label_time_dim,
        phoneme_time_dim=phoneme_time_dim,
    )
    return {
        1: stage(lambda: model.construct_network(1, model.CTCAligner, **data)),
        "align": stage(lambda: model.construct_network(1, model.CTCAligner, training=False, **data)),
    }

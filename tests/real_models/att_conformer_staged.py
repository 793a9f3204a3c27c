"""
Attention encoder-decoder, staged: a BLSTM (time reduction 6) + Conformer encoder, an LSTM decoder with MLP attention
and weight feedback stepping in an ``nn.Loop`` over the targets (teacher forcing, CE loss), CTC losses after layers 4
and 8; four stages of pretraining (2, 4, 8, 12 encoder layers, growing dims; the tests build the first two) and its beam
search (an ``nn.Loop`` without length that ends on EOS, ``nn.choice(search=True)``). The targets are BPE labels with a
vocabulary on their sparse dim (``_get_bos_idx`` and ``_get_eos_idx`` read it).

Loaded from the checkout: ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/
att_conformer_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py``, built by
:mod:`tests.real_models.zeyer_setup`, which says what every such file needs adapted. Adaptation of this file besides
(:data:`TARGET_EMBEDDING`): ``Model.target_embed`` was ``nn.Linear(nb_target_dim, ..., with_bias=False)`` on the sparse
labels; since returnn_common 1bfdf29 (2023-03-12, "Embedding separate from Linear") that is
``nn.Embedding(nb_target_dim, ...)``.

Training: a step on generated data.
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, zeyer_setup

KIND = "attention encoder-decoder, staged (LSTM decoder in nn.Loop, beam search)"
FILE = "att_conformer_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py"
SOURCE = f"{zeyer_setup.FOLDER}/{FILE}"
TRAINS = None
SEQ_LENS = {"data": (80, 100), "classes": (3, 5)}
STAGES = zeyer_setup.EPOCHS + ("recog",)
SEARCH_STAGES = ("recog",)

TARGET_EMBEDDING = checkout.Adaptation(
    "nn.Embedding for the decoder's target embedding (nn.Linear before returnn_common 1bfdf29)",
    'nn.Linear(nb_target_dim, nn.FeatureDim("target_embed", 621), with_bias=False)',
    'nn.Embedding(nb_target_dim, nn.FeatureDim("target_embed", 621))',
)

model = zeyer_setup.load(FILE, TARGET_EMBEDDING)


def build() -> Stages:
    """The nets of tests.real_models.zeyer_setup's stages and of recognition."""
    return zeyer_setup.build(model)

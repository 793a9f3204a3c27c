"""
CTC, staged: a BLSTM (time reduction 6) + Conformer encoder with CTC losses on the output and after layers 4 and 8; four
stages of pretraining (2, 4, 8, 12 encoder layers, growing dims; the tests build the first two) and its time-sync beam
search (``nn.Loop`` over the downsampled time, ``nn.choice(search=True)``). The targets are BPE labels with a vocabulary
on their sparse dim (``_get_bos_idx`` reads it; the search output gets a vocabulary with ``<blank>``).

Loaded from the checkout: ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/
ctc_conformer_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py``, built by
:mod:`tests.real_models.zeyer_setup`, which says what every such file needs adapted. Adaptation of this file besides:
the search output's vocabulary on its sparse dim (``zeyer_setup.SEARCH_VOCAB_ON_SPARSE_DIM``).

Training: a step on generated data.
"""

from __future__ import annotations

from tests.real_models import Stages, zeyer_setup

KIND = "CTC, staged (time-sync beam search)"
FILE = "ctc_conformer_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py"
SOURCE = f"{zeyer_setup.FOLDER}/{FILE}"
TRAINS = None
SEQ_LENS = {"data": (80, 100), "classes": (3, 5)}
STAGES = zeyer_setup.EPOCHS + ("recog",)
SEARCH_STAGES = ("recog",)

model = zeyer_setup.load(FILE, zeyer_setup.SEARCH_VOCAB_ON_SPARSE_DIM)


def build() -> Stages:
    """The nets of tests.real_models.zeyer_setup's stages and of recognition."""
    return zeyer_setup.build(model)

"""
Transducer, staged, with window attention over the encoder: a BLSTM (time reduction 6) + Conformer encoder whose
convolution modules normalize with ``nn.LayerNorm`` (not batch norm), a label-sync LSTM prediction net that attends
to a window of 5 encoder frames around each frame (``nn.window`` over the downsampled time: a pad, a ``merge_dims``
to ``enc_win_dim * ((2 + <pooled time>) + 2)``, a pad and a reshape, the sums and products of dynamic dims that
``get_network(epoch)`` must give back as one dim in every stage), the full-sum transducer loss and CTC losses after
layers 4 and 8; four stages of pretraining (2, 4, 8, 12 encoder layers, growing dims; the tests build the first three,
from epochs 1, 11 and 21, which share the extern data dims) and its time-sync beam search (``nn.Loop`` over the
downsampled time, ``nn.choice(search=True)``). The targets are BPE labels with a vocabulary on their sparse dim.

Loaded from the checkout: ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/
conformer_ln_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py``, built by
:mod:`tests.real_models.zeyer_setup`, which says what every such file needs adapted. Adaptations of this file besides:
``nn.Embedding`` for the prediction net's label embedding (``zeyer_setup.LABEL_EMBEDDING``), the search output's
vocabulary on its sparse dim (``zeyer_setup.SEARCH_VOCAB_ON_SPARSE_DIM``). It differs from
:mod:`tests.real_models.transducer_fullsum_staged` by its normalization and by the third stage built here (8 encoder
layers; RETURNN constructs it in about half a minute).

Training: a step on generated data; the full-sum loss compiles RETURNN's warp-rna op from RETURNN's git submodule
``returnn/extern/WarpRna/warp-rna`` (a RETURNN checkout without its submodules fails there).
"""

from __future__ import annotations

from tests.real_models import Stages, zeyer_setup

KIND = "transducer, staged, window attention over the encoder (three stages, full-sum loss, time-sync beam search)"
FILE = "conformer_ln_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py"
SOURCE = f"{zeyer_setup.FOLDER}/{FILE}"
TRAINS = None
SEQ_LENS = {"data": (80, 100), "classes": (3, 5)}
EPOCHS = (1, 11, 21)
STAGES = EPOCHS + ("recog",)
SEARCH_STAGES = ("recog",)

model = zeyer_setup.load(FILE, zeyer_setup.LABEL_EMBEDDING, zeyer_setup.SEARCH_VOCAB_ON_SPARSE_DIM)


def build() -> Stages:
    """The nets of the pretraining stages from epochs 1, 11 and 21 and of recognition."""
    return zeyer_setup.build(model, epochs=EPOCHS)

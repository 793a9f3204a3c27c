"""
Transducer, the starting point of its series: a BLSTM + CNN encoder with its own SpecAugment
(``BlstmCnnSpecAugEncoder``), a label-sync LSTM prediction net, the full-sum transducer loss; its encoder grows by a
layer every two epochs from 2 to 6 (of its stages, the tests build those from epochs 1, 5 and 9) and its time-sync
beam search (``nn.Loop`` over the downsampled time, ``nn.choice(search=True)``). The targets are BPE labels with a
vocabulary on their sparse dim.

Loaded from the checkout: ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/start.py``, built by
:mod:`tests.real_models.zeyer_setup`, which says what every such file needs adapted. Adaptations of this file besides:
``nn.Embedding`` for the prediction net's label embedding (``zeyer_setup.LABEL_EMBEDDING``), the search output's
vocabulary on its sparse dim (``zeyer_setup.SEARCH_VOCAB_ON_SPARSE_DIM``).

Training: a step on generated data; the full-sum loss compiles RETURNN's warp-rna op from RETURNN's git submodule
``returnn/extern/WarpRna/warp-rna`` (a RETURNN checkout without its submodules fails there).
"""

from __future__ import annotations

from tests.real_models import Stages, zeyer_setup

KIND = "transducer, encoder growing over epochs (BLSTM-CNN, full-sum loss, time-sync beam search)"
FILE = "start.py"
SOURCE = f"{zeyer_setup.FOLDER}/{FILE}"
TRAINS = None
SEQ_LENS = {"data": (80, 100), "classes": (3, 5)}
EPOCHS = (1, 5, 9)
STAGES = EPOCHS + ("recog",)
SEARCH_STAGES = ("recog",)

model = zeyer_setup.load(FILE, zeyer_setup.LABEL_EMBEDDING, zeyer_setup.SEARCH_VOCAB_ON_SPARSE_DIM)


def build() -> Stages:
    """The net of each stage of the growing encoder and of recognition."""
    return zeyer_setup.build(model, epochs=EPOCHS)

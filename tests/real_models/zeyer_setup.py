"""
The staged models of ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/``, shared by their modules:
:func:`load` loads one from the checkout with the adaptations all of them need, :func:`build` builds its stages
through its ``ModelDef``, ``TrainDef`` and ``RecogDef`` functions, from the extern data of their Switchboard task
(40-dim features, BPE 1k targets with a vocabulary on their sparse dim, made here of generated labels).

:func:`build` calls these functions as ``_returnn_get_network`` of ``exp2022_07_21_transducer/train.py`` (a training
stage) and of ``users/zeyer/recog.py`` (recognition) do inside RETURNN, but gives the model ``target_dim=
targets.sparse_dim``, as recog.py does: train.py gives ``targets.feature_dim``, which today's RETURNN makes None for
sparse targets (it was their sparse dim). Each stage is returned as raw dicts instead of the net dict alone.

Adaptations of every such model file (:data:`ADAPTATIONS`):

- the imports of the Sisyphus side of the setup are dropped (the Switchboard task, ``model_interfaces``, the
  recognition and training jobs): only ``sis_run_with_prefix`` uses them, and the annotations ``ModelDef[Model]``
  etc., which the file's ``from __future__ import annotations`` leaves unevaluated; ``model_interfaces`` and the
  training and recognition code are not in the checkout's folders, nor is their Sisyphus stack loaded here.
"""

from __future__ import annotations

import functools
import types
from typing import Sequence

from tests.real_models import Stages, checkout, nn, stage

FOLDER = "users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base"

ADAPTATIONS = (
    checkout.Adaptation(
        "drop the imports of the Sisyphus side of the setup",
        "from i6_experiments.users.zeyer.datasets.switchboard_2020.task import get_switchboard_task_bpe1k\n"
        "from i6_experiments.users.zeyer.model_interfaces import ModelDef, RecogDef, TrainDef\n"
        "from i6_experiments.users.zeyer.recog import recog_training_exp\n"
        "from ..train import train\n",
        "\n\n\n\n",
    ),
)

#: ``model_recog`` of the transducer and CTC models sets the search output's vocabulary on ``res.feature_dim``, which
#: today's RETURNN makes None for sparse tensors (it was their sparse dim): it is set on ``res.sparse_dim``.
SEARCH_VOCAB_ON_SPARSE_DIM = checkout.Adaptation(
    "the search output's vocabulary on its sparse dim", "res.feature_dim.vocab = ", "res.sparse_dim.vocab = "
)

#: ``DecoderLabelSync.embed`` of the transducers was ``nn.Linear(in_dim, embed_dim)`` on the sparse labels; since
#: returnn_common 1bfdf29 (2023-03-12, "Embedding separate from Linear") that is ``nn.Embedding(in_dim, embed_dim)``
#: (without the bias the old Linear added).
LABEL_EMBEDDING = checkout.Adaptation(
    "nn.Embedding for the prediction net's label embedding (nn.Linear before returnn_common 1bfdf29)",
    "self.embed = nn.Linear(in_dim, embed_dim)",
    "self.embed = nn.Embedding(in_dim, embed_dim)",
)

#: Of the four pretraining stages of these models (from epochs 1, 11, 21, 31: 2, 4, 8, 12 encoder layers), the first
#: two, for the tests' runtime (RETURNN takes most of a minute to construct a net of 12 Conformer layers here).
EPOCHS = (1, 11)
#: The epoch of the model that recognizes: the second stage's, for the same reason (the researcher recognizes with
#: several checkpoints of a training).
RECOG_EPOCH = 11


def load(file: str, *adaptations: checkout.Adaptation) -> types.ModuleType:
    """The model file ``file`` of :data:`FOLDER` with :data:`ADAPTATIONS` and ``adaptations``."""
    return checkout.load(f"{FOLDER}/{file}", *ADAPTATIONS, *adaptations)


def build(module: types.ModuleType, epochs: Sequence[int] = EPOCHS) -> Stages:
    """The net of the stage from each of ``epochs`` and of recognition (key ``"recog"``) of the model file
    ``module``."""
    model_def, train_def, recog_def = module.from_scratch_model_def, module.from_scratch_training, module.model_recog
    labels = ["<s>", "<unk>"] + [f"bpe{i}" for i in range(1028)]
    vocab = nn.Vocabulary.create_vocab_from_labels(labels, bos_label=0, eos_label=0, unknown_label="<unk>")
    data = nn.Data("data", dim_tags=[nn.batch_dim, nn.SpatialDim("time"), nn.FeatureDim("audio", 40)], dtype="float32")
    targets = nn.Data(
        "classes",
        dim_tags=[nn.batch_dim, nn.SpatialDim("out-spatial")],
        sparse_dim=nn.FeatureDim("bpe", len(labels), vocab=vocab),
        dtype="int32",
    )

    def train_net(epoch: int) -> nn.Module:
        data_ = nn.get_extern_data(data)
        targets_ = nn.get_extern_data(targets)
        model = model_def(epoch=epoch, in_dim=data_.feature_dim, target_dim=targets_.sparse_dim)
        train_def(
            model=model,
            data=data_,
            data_spatial_dim=data.get_time_dim_tag(),
            targets=targets_,
            targets_spatial_dim=targets.get_time_dim_tag(),
        )
        return model

    def recog_net() -> nn.Module:
        data_ = nn.get_extern_data(data)
        targets_ = nn.get_extern_data(targets)
        model = model_def(epoch=RECOG_EPOCH, in_dim=data_.feature_dim, target_dim=targets_.sparse_dim)
        recog_out = recog_def(
            model=model, data=data_, data_spatial_dim=data.get_time_dim_tag(), targets_dim=targets_.sparse_dim
        )
        assert isinstance(recog_out, nn.Tensor)
        recog_out.mark_as_default_output()
        return model

    stages: Stages = {epoch: stage(functools.partial(train_net, epoch)) for epoch in epochs}
    stages["recog"] = stage(recog_net)
    return stages

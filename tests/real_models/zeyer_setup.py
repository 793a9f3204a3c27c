"""
How the staged models of ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/`` are built, shared by their
modules: ``_returnn_get_network`` of ``users/zeyer/experiments/exp2022_07_21_transducer/train.py`` (a training stage)
and of ``users/zeyer/recog.py`` (recognition), from the extern data of their Switchboard task (40-dim features, BPE 1k
targets with a vocabulary on their sparse dim, made here of generated labels).

Changes: train.py gives the model ``target_dim=targets.feature_dim``, which today's RETURNN makes None for sparse
targets (it was their sparse dim): :func:`build` gives ``targets.sparse_dim``, as recog.py does. Each stage is returned
as raw dicts instead of the net dict alone.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

from tests.real_models import Stages, nn, stage

#: Of the four pretraining stages of these models (from epochs 1, 11, 21, 31: 2, 4, 8, 12 encoder layers), the first
#: two, for the tests' runtime (RETURNN takes most of a minute to construct a net of 12 Conformer layers here).
EPOCHS = (1, 11)
#: The epoch of the model that recognizes: the second stage's, for the same reason (the researcher recognizes with
#: several checkpoints of a training).
RECOG_EPOCH = 11


def build(model_def: Callable, train_def: Callable, recog_def: Callable, epochs: Sequence[int] = EPOCHS) -> Stages:
    """The net of the stage from each of ``epochs`` and of recognition (key ``"recog"``)."""
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

"""A RETURNN-frontend model for Task12AX, trained with the PyTorch backend: one Conformer block (RETURNN's own
``rf`` ConformerEncoder) with a per-frame ``rf.Linear`` output. The config holds ``get_model`` as a
``functools.partial`` of :class:`Model` with its dims, and :func:`train_step`; importing this module imports neither
torch nor TensorFlow (the manager imports it)."""

from __future__ import annotations

import functools

import returnn.frontend as rf
from returnn.frontend.encoder.conformer import ConformerEncoder
from returnn.tensor import Dim, Tensor, TensorDict, batch_dim

#: The behavior version the config sets (RETURNN's frontend needs 21 or higher).
BEHAVIOR_VERSION = 21


class Model(rf.Module):
    """One Conformer block, then a linear layer to the classes' logits."""

    def __init__(
        self, in_dim: Dim, out_dim: Dim, *, model_dim: Dim, num_layers: int = 1, num_heads: int = 4, **_engine_kwargs
    ):
        super().__init__()
        self.encoder = ConformerEncoder(
            in_dim,
            model_dim,
            input_layer=None,
            num_layers=num_layers,
            num_heads=num_heads,
            ff_dim=model_dim * 2,
            conv_kernel_size=3,
            dropout=0.0,
            att_dropout=0.0,
            input_dropout=0.0,
        )
        self.output = rf.Linear(model_dim, out_dim)

    def __call__(self, source: Tensor, *, spatial_dim: Dim) -> Tensor:
        encoded, _ = self.encoder(source, in_spatial_dim=spatial_dim)
        return self.output(encoded)


def train_step(*, model: Model, extern_data: TensorDict, **_kwargs) -> None:
    """Per-frame cross entropy and frame error rate, the losses RETURNN reports per epoch."""
    data = extern_data["data"]
    targets = extern_data["classes"]
    spatial_dim = data.dims[1]  # (batch, time, input), as extern_data says
    logits = model(data, spatial_dim=spatial_dim)
    ce = rf.cross_entropy(estimated=logits, estimated_type="logits", target=targets, axis=model.output.out_dim)
    ce.mark_as_loss("ce")
    frame_error = rf.not_equal(rf.reduce_argmax(logits, axis=model.output.out_dim), targets)
    frame_error.mark_as_loss("fer", as_error=True)


def config_values() -> dict:
    """The config values the serializer writes: extern_data with its dims, the model as a partial, the train step
    (``backend = "torch"`` goes into the config dict itself, where i6_core's ReturnnTrainingJob reads it)."""
    time_dim = Dim(None, name="time")
    in_dim = Dim(9, name="input")
    classes_dim = Dim(2, name="classes")
    return {
        "extern_data": {
            "data": {"dims": [batch_dim, time_dim, in_dim], "dtype": "float32"},
            "classes": {"dims": [batch_dim, time_dim], "sparse_dim": classes_dim, "dtype": "int32"},
        },
        "get_model": functools.partial(Model, in_dim, classes_dim, model_dim=Dim(32, name="model")),
        "train_step": train_step,
    }


def train_step_without_loss(*, model: Model, extern_data: TensorDict, **_kwargs) -> None:
    """A train step that marks no loss: RETURNN cannot train with it (the config check must say so)."""
    model(extern_data["data"], spatial_dim=extern_data["data"].dims[1])

"""A small RETURNN-frontend model with the mistakes the torch check must place: a model that fails while it is built,
a ``train_step`` and a ``forward_step`` that fail, and a ``forward_callback`` that writes a file (to the current
directory, as i6_core's ReturnnForwardJobV2 expects)."""

from __future__ import annotations

import returnn.frontend as rf
from returnn.forward_iface import ForwardCallbackIface
from returnn.tensor import Dim, Tensor, TensorDict, batch_dim


class Model(rf.Module):
    """One linear layer to the classes' logits; ``fail`` makes its construction fail."""

    def __init__(self, in_dim: Dim, out_dim: Dim, *, fail: bool = False, **_engine_kwargs):
        super().__init__()
        if fail:
            raise ValueError("this model cannot be built")
        self.out_dim = out_dim
        self.output = rf.Linear(in_dim, out_dim)

    def __call__(self, source: Tensor) -> Tensor:
        return self.output(source)


def train_step(*, model: Model, extern_data: TensorDict, **_kwargs) -> None:
    logits = model(extern_data["data"])
    ce = rf.cross_entropy(estimated=logits, estimated_type="logits", target=extern_data["classes"], axis=model.out_dim)
    ce.mark_as_loss("ce")


def train_step_on_torch_tensors(*, model: Model, extern_data: TensorDict, **_kwargs) -> None:
    """Reads the dims of a torch tensor, which has none."""
    raw = extern_data["data"].raw_tensor
    model(raw.dims)


def forward_step(*, model: Model, extern_data: TensorDict, **_kwargs) -> None:
    data = extern_data["data"]
    rf.get_run_ctx().mark_as_default_output(model(data), shape=[batch_dim, data.dims[1], model.out_dim])


def forward_step_on_torch_tensors(*, model: Model, extern_data: TensorDict, **_kwargs) -> None:
    """Reads the dims of a torch tensor, which has none."""
    logits = model(extern_data["data"])
    rf.get_run_ctx().mark_as_default_output(logits, shape=logits.raw_tensor.dims)


class WriteShapes(ForwardCallbackIface):
    """Writes each sequence's output shape to ``shapes.txt`` in the current directory."""

    def init(self, *, model: Model) -> None:
        self.file = open("shapes.txt", "w")

    def process_seq(self, *, seq_tag: str, outputs: TensorDict) -> None:
        self.file.write(f"{seq_tag} {outputs['output'].raw_tensor.shape}\n")

    def finish(self) -> None:
        self.file.close()

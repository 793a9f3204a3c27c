"""A train step for the example's RETURNN-frontend model that computes another loss with the same parameters (for
same-model on torch configs)."""

from __future__ import annotations

from typing import Any

import returnn.frontend as rf
from returnn.tensor import TensorDict


def train_step_smoothed(*, model: Any, extern_data: TensorDict, **_kwargs) -> None:
    """The example's cross entropy, with label smoothing."""
    data, targets = extern_data["data"], extern_data["classes"]
    logits = model(data, spatial_dim=data.dims[1])
    smoothed = rf.label_smoothing(rf.one_hot(targets), 0.1, axis=model.output.out_dim)
    ce = rf.cross_entropy(estimated=logits, estimated_type="logits", target=smoothed, axis=model.output.out_dim)
    ce.mark_as_loss("ce")
    rf.not_equal(rf.reduce_argmax(logits, axis=model.output.out_dim), targets).mark_as_loss("fer", as_error=True)

"""
Judge with real RETURNN (PyTorch backend) whether two written PyTorch / RETURNN-frontend configs define the same
model: each config's ``get_model`` builds its model on CPU, which is reduced to a :class:`TorchFingerprint`: the
parameters (names and shapes) and the losses its ``train_step`` marks on one fixed batch (random data from the
config's ``extern_data``, seeded) with every parameter set from a random generator seeded by its name. Parameter
names and shapes differ, or the losses do: another model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy

from i6_rc_jobs._verify.returnn_check import behavior_version
from i6_rc_jobs._verify.semantics import DEFAULT_BEHAVIOR_VERSION, PARAM_SCALE, stable_int, load_config

__all__ = ["TorchFingerprint", "torch_fingerprint", "is_torch_config"]

#: How close two losses must be to count as equal (float32 sums over the batch, computed in another order).
LOSS_TOLERANCE = 1e-5
#: The fixed batch: this many sequences, dynamic dims of at most this many frames.
BATCH_SIZE, MAX_FRAMES = 3, 7


@dataclass(frozen=True)
class TorchFingerprint:
    """A torch model as far as same-model compares it: parameter shapes by name, and the losses on a fixed batch."""

    parameters: dict[str, tuple[int, ...]]
    losses: dict[str, float]

    def differences(self, other: TorchFingerprint, losses: bool = True) -> list[str]:
        """One line per difference; [] iff the same model."""
        found = []
        for name in sorted(set(self.parameters) | set(other.parameters)):
            ours, theirs = self.parameters.get(name), other.parameters.get(name)
            if ours != theirs:
                found.append(f"parameter {name}: {_shape(ours)} != {_shape(theirs)}")
        if found or not losses:
            return found
        for name in sorted(set(self.losses) | set(other.losses)):
            ours_loss, theirs_loss = self.losses.get(name), other.losses.get(name)
            if ours_loss is None or theirs_loss is None:
                found.append(
                    f"loss {name}: {'missing' if ours_loss is None else ours_loss} != "
                    f"{'missing' if theirs_loss is None else theirs_loss}"
                )
            elif not math.isclose(ours_loss, theirs_loss, rel_tol=LOSS_TOLERANCE, abs_tol=LOSS_TOLERANCE):
                found.append(f"loss {name} on the fixed batch with equal parameters: {ours_loss} != {theirs_loss}")
        return found


def _shape(shape: Any) -> str:
    return "missing" if shape is None else str(list(shape))


def is_torch_config(config_code: str) -> bool:
    """Whether the written config sets ``backend = "torch"`` (read by RETURNN's loader, without building anything)."""
    return load_config(config_code).value("backend", None) == "torch"


def torch_fingerprint(config_code: str, *, seed: int = 1) -> TorchFingerprint:
    """Builds the config's model and runs its ``train_step`` (train flag off) on the fixed batch."""
    import returnn.frontend as rf
    import torch
    from returnn.config import global_config_ctx
    from returnn.tensor import TensorDict
    from returnn.tensor.utils import tensor_dict_fill_random_numpy_
    from returnn.torch.data.tensor_utils import tensor_dict_numpy_to_torch_
    from returnn.torch.frontend.bridge import rf_module_to_pt_module

    config = load_config(config_code)
    config.typed_dict.setdefault("behavior_version", DEFAULT_BEHAVIOR_VERSION)
    with global_config_ctx(config), behavior_version(config.int("behavior_version", None)):
        rf.select_backend_torch()
        rf.set_random_seed(seed)
        model = config.typed_value("get_model")(epoch=1, step=0)
        pt_model = rf_module_to_pt_module(model) if isinstance(model, rf.Module) else model
        parameters = {name: tuple(param.shape) for name, param in pt_model.named_parameters()}
        with torch.no_grad():
            for name, param in pt_model.named_parameters():
                rng = numpy.random.default_rng([seed, stable_int(name)])
                param.copy_(torch.from_numpy(PARAM_SCALE * rng.standard_normal(tuple(param.shape))).to(param.dtype))
        extern_data = TensorDict()
        extern_data.update(config.typed_value("extern_data"), auto_convert=True)
        dynamic = {dim: MAX_FRAMES for tensor in extern_data.data.values() for dim in tensor.dims if dim.is_dynamic()}
        batch_dims = {
            dim: BATCH_SIZE for tensor in extern_data.data.values() for dim in tensor.dims if dim.is_batch_dim()
        }
        tensor_dict_fill_random_numpy_(extern_data, rnd=seed, dyn_dim_max_sizes={**dynamic, **batch_dims})
        tensor_dict_numpy_to_torch_(extern_data)
        pt_model.eval()
        rf.init_train_step_run_ctx(train_flag=False, step=0, epoch=1)
        with torch.no_grad():
            config.typed_value("train_step")(model=model, extern_data=extern_data)
        losses = {
            name: float(loss.get_summed_loss().raw_tensor.detach().cpu())
            for name, loss in sorted(rf.get_run_ctx().losses.items())
        }
    return TorchFingerprint(parameters, losses)

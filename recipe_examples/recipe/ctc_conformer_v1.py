"""A CTC Conformer as i6's PyTorch setups build it to train with MiniReturnn: a small frontend (the input symbols
one-hot, then i6_models' WindowConvolutionFrontendV1), i6_models' ConformerEncoderV1, a linear output with the CTC
blank as its last index. ``train_step`` marks the CTC loss in MiniReturnn's run context; ``prior_init_hook``,
``prior_step`` and ``prior_finish_hook`` make the forward job that writes the prior, the average softmax over a
dataset, to ``prior.txt`` (log space, one line per label, the blank last)."""

from __future__ import annotations

import numpy as np
import torch
from i6_models.assemblies.conformer.conformer_v1 import (
    ConformerBlockV1Config,
    ConformerEncoderV1,
    ConformerEncoderV1Config,
)
from i6_models.config import ModuleFactoryV1
from i6_models.parts.conformer.convolution import ConformerConvolutionV1Config
from i6_models.parts.conformer.feedforward import ConformerPositionwiseFeedForwardV1Config
from i6_models.parts.conformer.mhsa import ConformerMHSAV1Config
from i6_models.parts.conformer.norm import LayerNormNC
from i6_models.parts.frontend.window_convolution import WindowConvolutionFrontendV1, WindowConvolutionFrontendV1Config

from ctc_conformer_v1_cfg import ModelConfig

ACTIVATIONS = {"ReLU": torch.nn.functional.relu, "SiLU": torch.nn.functional.silu}


def sequence_mask(lengths: torch.Tensor, max_length: int) -> torch.Tensor:
    """[B, T], True within each sequence: what i6_models' modules take."""
    return torch.arange(max_length, device=lengths.device)[None, :] < lengths[:, None]


class Model(torch.nn.Module):
    """Takes the config as a dict (``asdict(ModelConfig(...))``); MiniReturnn's ``epoch`` and ``step`` go unused."""

    def __init__(self, model_config_dict: dict, **_kwargs):
        super().__init__()
        self.cfg = ModelConfig.from_dict(model_config_dict)
        size = self.cfg.conformer_size
        frontend = self.cfg.frontend_config
        frontend_config = WindowConvolutionFrontendV1Config(
            input_dim=self.cfg.num_inputs,
            output_dim=size,
            dropout=frontend.dropout,
            kernel_size=frontend.kernel_size,
            stride=frontend.stride,
            activation=ACTIVATIONS[frontend.activation_str],
        )
        block_config = ConformerBlockV1Config(
            ff_cfg=ConformerPositionwiseFeedForwardV1Config(
                input_dim=size, hidden_dim=self.cfg.ff_dim, dropout=self.cfg.ff_dropout
            ),
            mhsa_cfg=ConformerMHSAV1Config(
                input_dim=size,
                num_att_heads=self.cfg.num_heads,
                att_weights_dropout=self.cfg.att_weights_dropout,
                dropout=self.cfg.mhsa_dropout,
            ),
            conv_cfg=ConformerConvolutionV1Config(
                channels=size,
                kernel_size=self.cfg.conv_kernel_size,
                dropout=self.cfg.conv_dropout,
                activation=torch.nn.functional.silu,
                norm=LayerNormNC(size),
            ),
        )
        self.conformer = ConformerEncoderV1(
            ConformerEncoderV1Config(
                num_layers=self.cfg.num_layers,
                frontend=ModuleFactoryV1(WindowConvolutionFrontendV1, frontend_config),
                block_cfg=block_config,
            )
        )
        self.final_dropout = torch.nn.Dropout(self.cfg.final_dropout)
        self.final_linear = torch.nn.Linear(size, self.cfg.label_target_size + 1)  # + the CTC blank

    def forward(self, symbols: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Input symbols [B, T] and lengths [B] -> log probabilities [B, T', labels + blank] and lengths [B]."""
        features = torch.nn.functional.one_hot(symbols.long(), self.cfg.num_inputs).float()
        mask = sequence_mask(lengths.to(symbols.device), symbols.shape[1])
        encoded, out_mask = self.conformer(features, mask)
        logits = self.final_linear(self.final_dropout(encoded))
        return torch.log_softmax(logits, dim=-1), out_mask.sum(dim=1)


def train_step(*, model: Model, data: dict, run_ctx, **_kwargs) -> None:
    """The CTC loss, summed over the batch and normalized by the number of labels, as MiniReturnn reports it."""
    log_probs, lengths = model(data["data"], data["data:size1"])
    labels, labels_len = data["classes"], data["classes:size1"]
    loss = torch.nn.functional.ctc_loss(
        log_probs.transpose(0, 1),  # [T, B, F]
        labels.long(),
        input_lengths=lengths,
        target_lengths=labels_len,
        blank=model.cfg.label_target_size,
        reduction="sum",
        zero_infinity=True,
    )
    run_ctx.mark_as_loss(name="ctc", loss=loss, inv_norm_factor=labels_len.sum())


def prior_init_hook(run_ctx, **_kwargs) -> None:
    run_ctx.sum_probs = None
    run_ctx.sum_frames = 0


def prior_step(*, model: Model, data: dict, run_ctx, **_kwargs) -> None:
    """Sums the softmax over the frames of the batch, padding left out."""
    log_probs, lengths = model(data["data"], data["data:size1"])
    mask = sequence_mask(lengths, log_probs.shape[1])
    probs = (torch.exp(log_probs) * mask[:, :, None]).sum(dim=(0, 1))
    run_ctx.sum_probs = probs if run_ctx.sum_probs is None else run_ctx.sum_probs + probs
    run_ctx.sum_frames += int(lengths.sum())


def prior_finish_hook(run_ctx, **_kwargs) -> None:
    """Writes the log of the average softmax to ``prior.txt``, the file the forward job keeps."""
    average = run_ctx.sum_probs.cpu().numpy() / run_ctx.sum_frames
    np.savetxt("prior.txt", np.log(average))

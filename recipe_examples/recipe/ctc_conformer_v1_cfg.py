"""The config of :mod:`ctc_conformer_v1`, as i6's PyTorch setups write a model's config: dataclasses beside the model
file (``<model>_cfg.py``). The Sisyphus config passes ``asdict(ModelConfig(...))`` to ``get_model``, plain data that
hashes and writes as it is, and :meth:`ModelConfig.from_dict` makes the dataclasses again where the model is built."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FrontendConfig:
    """i6_models' WindowConvolutionFrontendV1 over the one-hot input symbols; the activation by name, so that the
    dict stays plain data."""

    kernel_size: int
    stride: int
    dropout: float
    activation_str: str


@dataclass
class ModelConfig:
    """The sizes of the CTC Conformer (``label_target_size`` without the blank, which comes last)."""

    num_inputs: int
    label_target_size: int
    frontend_config: FrontendConfig
    conformer_size: int
    num_layers: int
    num_heads: int
    ff_dim: int
    att_weights_dropout: float
    mhsa_dropout: float
    ff_dropout: float
    conv_dropout: float
    conv_kernel_size: int
    final_dropout: float

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        return cls(**{**d, "frontend_config": FrontendConfig(**d["frontend_config"])})

"""
CTC: a gammatone front end, SpecAugment, a VGG + Conformer encoder and RASR's full-sum CTC loss (``fast_bw``).

Source (rwth-i6/i6_experiments at commit 6b0591b10c1b5a4c40d51d3590b6c7bb7341ddab):
- ``users/berger/rc_modules/models/ctc.py``: ``make_ctc_rasr_loss_config``, ``make_rasr_ctc_loss_opts``,
  ``CTCModel``, ``construct_net_with_data``;
- ``users/berger/rc_modules/feature_extraction/__init__.py`` and ``gammatone.py``: ``FeatureType``,
  ``make_features``, ``make_gammatone_module``;
- ``users/berger/rc_modules/encoder/__init__.py``, ``conformer.py`` and ``blstm.py``: ``EncoderType``,
  ``make_encoder``, ``VGGConformer`` with its defaults, ``Blstm``;
- ``users/berger/rc_modules/data_augmentation/specaugment.py``: ``legacy_specaugment``;
- the extern data of ``users/berger/rc_helpers/serializers/ctc.py`` (raw audio, one feature).

Changes: the helpers are copied into this module (their package-relative imports dropped). The encoder defaults hold
``CodeWrapper("nn.swish")`` etc., which the researcher's generated RETURNN config turns into code; built in-process,
:func:`build` passes the objects they name (``nn.swish``, ``nn.BatchNorm``) in ``encoder_args``. The RASR paths of the
loss are placeholders (the loss runs RASR's ``nn-trainer``).

Training: not possible here, the ``fast_bw`` loss runs RASR's ``nn-trainer`` binary.
"""

from __future__ import annotations

import copy
from enum import Enum, auto
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

import i6_core.rasr as rasr
from i6_core.am.config import acoustic_model_config
from i6_core.returnn.config import CodeWrapper
from returnn_common.asr.gt import GammatoneV2
from returnn_common.asr.specaugment import random_mask_v2, specaugment_v2
from returnn_common.nn.conformer import ConformerConvSubsample, ConformerEncoder
from returnn_common.nn.encoder.base import ISeqDownsamplingEncoder, ISeqFramewiseEncoder
from returnn_common.nn.encoder.blstm import BlstmEncoder

from tests.real_models import Stages, nn, stage

KIND = "CTC (gammatone, VGG + Conformer, RASR full-sum loss)"
SOURCE = "users/berger/rc_modules/models/ctc.py"
TRAINS = "its fast_bw loss runs RASR's nn-trainer binary"
STAGES = (1,)
SEARCH_STAGES: tuple = ()


# users/berger/rc_modules/feature_extraction/gammatone.py
def make_gammatone_module(*args, sample_rate: int = 8_000, **kwargs) -> Tuple[GammatoneV2, nn.Dim]:
    assert sample_rate in {8_000, 16_000}
    default_kwargs = {
        8000: {
            "gt_filterbank_size": 320,
            "temporal_integration_size": 200,
            "temporal_integration_strides": 80,
            "freq_max": 3_800,
        },
        16000: {
            "gt_filterbank_size": 640,
            "temporal_integration_size": 400,
            "temporal_integration_strides": 160,
            "freq_max": 7_500,
        },
    }[sample_rate]

    default_kwargs.update(kwargs)

    if sample_rate == 8_000:
        out_dim = nn.FeatureDim("channels", 40)
    else:
        out_dim = nn.FeatureDim("channels", 50)

    module = GammatoneV2(out_dim=out_dim, *args, sample_rate=sample_rate, **default_kwargs)
    for p in module.parameters():
        p.trainable = False

    return module, module.out_dim


# users/berger/rc_modules/feature_extraction/__init__.py
class FeatureType(Enum):
    Gammatone = auto()


def make_features(type: FeatureType, *args, **kwargs) -> Tuple[nn.Module, nn.Dim]:
    return {FeatureType.Gammatone: make_gammatone_module}[type](*args, **kwargs)


# users/berger/rc_modules/encoder/conformer.py
hybrid_vgg_defaults = {
    "out_dims": [32, 64, 64, 32],
    "filter_sizes": [3, 3, 3, 3],
    "strides": [1, 1, 1, (3, 1)],
    "pool_sizes": [(1, 2)],
    "activation": CodeWrapper("nn.swish"),
    "padding": "same",
}

hybrid_conformer_defaults = {
    "num_layers": 12,
    "input_dropout": 0.1,
    "out_dim": 384,
    "ff_dim": 1536,
    "ff_activation": CodeWrapper("nn.swish"),
    "dropout": 0.1,
    "conv_kernel_size": 8,
    "conv_norm": CodeWrapper("nn.LayerNorm"),
    "num_heads": 6,
    "att_dropout": 0.1,
}

transducer_vgg_defaults = {
    "out_dims": [32, 64, 64],
    "filter_sizes": [3, 3, 3],
    "strides": [1, (2, 1), (2, 1)],
    "pool_sizes": [(1, 2)],
    "activation": CodeWrapper("nn.swish"),
}

transducer_conformer_defaults = {
    "num_layers": 12,
    "input_dropout": 0.1,
    "out_dim": 512,
    "ff_dim": 2048,
    "ff_activation": CodeWrapper("nn.swish"),
    "dropout": 0.1,
    "conv_kernel_size": 32,
    "conv_norm": CodeWrapper("nn.BatchNorm"),
    "num_heads": 8,
    "att_dropout": 0.1,
}


class VGGConformer(ConformerEncoder):
    def __init__(
        self,
        in_dim: nn.Dim,
        vgg_args: dict = transducer_vgg_defaults,
        conformer_args: dict = transducer_conformer_defaults,
    ):
        vgg_args_mod = copy.deepcopy(vgg_args)
        conformer_args_mod = copy.deepcopy(conformer_args)
        if "out_dims" in vgg_args:
            vgg_args_mod["out_dims"] = [
                nn.FeatureDim(f"vgg_out_{i}", dim) for i, dim in enumerate(vgg_args["out_dims"])
            ]
        if "out_dim" in conformer_args:
            conformer_args_mod["out_dim"] = nn.FeatureDim("conformer_out_dim", conformer_args["out_dim"])
        if "ff_dim" in conformer_args:
            conformer_args_mod["ff_dim"] = nn.FeatureDim("conformer_ff_dim", conformer_args["ff_dim"])

        vgg = ConformerConvSubsample(in_dim=in_dim, **vgg_args_mod)
        super().__init__(in_dim=in_dim, input_layer=vgg, **conformer_args_mod)


# users/berger/rc_modules/encoder/blstm.py
class Blstm(BlstmEncoder):
    def __init__(
        self,
        dim: int = 512,
        **kwargs,
    ):
        super().__init__(dim=nn.FeatureDim("lstm_dim", dim), **kwargs)


# users/berger/rc_modules/encoder/__init__.py
class EncoderType(Enum):
    Blstm = auto()
    Conformer = auto()


def make_encoder(type: EncoderType, *args, **kwargs) -> Union[ISeqFramewiseEncoder, ISeqDownsamplingEncoder]:
    return {EncoderType.Blstm: Blstm, EncoderType.Conformer: VGGConformer}[type](*args, **kwargs)


# users/berger/rc_modules/data_augmentation/specaugment.py
def legacy_specaugment(
    x: nn.Tensor,
    *,
    spatial_dim: nn.Dim,
    feature_dim: nn.Dim = nn.NotSpecified,
    global_train_step_dependent: bool = True,
    only_on_train: bool = True,
    max_time_num: int = 1,
    max_time: int = 15,
    max_feature_num: int = 4,
    max_feature: int = 5,
) -> nn.Tensor:
    """
    specaugment with original configuration settings
    """
    if feature_dim is nn.NotSpecified:
        assert x.feature_dim
        feature_dim = x.feature_dim
    if global_train_step_dependent:
        step = nn.global_train_step()
        step1 = nn.where(step >= 2000, 1, 0)
    else:
        step1 = 1

    with nn.Cond(nn.train_flag() | (not only_on_train)) as cond:
        x_masked = x
        spatial_len = nn.dim_value(spatial_dim)
        # time mask
        x_masked = random_mask_v2(
            x_masked,
            mask_axis=spatial_dim,
            broadcast_axis=feature_dim,
            min_num=0,
            max_num=nn.maximum(spatial_len // int(1.0 / 0.7 * max_time), max_time_num) // (1 + step1),
            max_dims=max_time,
        )
        # feature mask
        x_masked = random_mask_v2(
            x_masked,
            mask_axis=feature_dim,
            broadcast_axis=spatial_dim,
            min_num=0,
            max_num=max_feature_num // (1 + step1),
            max_dims=max_feature,
        )
        cond.true = x_masked
        cond.false = x
    return cond.result


# users/berger/rc_modules/models/ctc.py
def make_ctc_rasr_loss_config(
    loss_corpus_path: str,
    loss_lexicon_path: str,
    am_args: Dict,
    allow_label_loop: bool = True,
    min_duration: int = 1,
    extra_config: Optional[rasr.RasrConfig] = None,
    extra_post_config: Optional[rasr.RasrConfig] = None,
):

    # Make crp and set loss_corpus and lexicon
    loss_crp = rasr.CommonRasrParameters()
    rasr.crp_add_default_output(loss_crp)

    loss_crp.corpus_config = rasr.RasrConfig()  # type: ignore
    loss_crp.corpus_config.file = loss_corpus_path  # type: ignore
    loss_crp.corpus_config.remove_corpus_name_prefix = "loss-corpus/"  # type: ignore

    loss_crp.lexicon_config = rasr.RasrConfig()  # type: ignore
    loss_crp.lexicon_config.file = loss_lexicon_path  # type: ignore

    loss_crp.acoustic_model_config = acoustic_model_config(**am_args)  # type: ignore
    loss_crp.acoustic_model_config.allophones.add_all = True  # type: ignore
    loss_crp.acoustic_model_config.allophones.add_from_lexicon = False  # type: ignore

    # Make config from crp
    mapping = {
        "acoustic_model": "*.model-combination.acoustic-model",
        "corpus": "*.corpus",
        "lexicon": "*.model-combination.lexicon",
    }
    config, post_config = rasr.build_config_from_mapping(
        loss_crp,
        mapping,
        parallelize=False,
    )
    config.action = "python-control"
    config.python_control_loop_type = "python-control-loop"
    config.extract_features = False

    # Allophone state transducer
    config["*"].transducer_builder_filter_out_invalid_allophones = True  # type: ignore
    config["*"].fix_allophone_context_at_word_boundaries = True  # type: ignore

    # Automaton manipulation
    if allow_label_loop:
        topology = "ctc"
    else:
        topology = "rna"
    config["*"].allophone_state_graph_builder.topology = topology  # type: ignore

    if min_duration > 1:
        config["*"].allophone_state_graph_builder.label_min_duration = min_duration  # type: ignore

    # maybe not needed
    config["*"].allow_for_silence_repetitions = False  # type: ignore

    config._update(extra_config)
    post_config._update(extra_post_config)

    return config, post_config


def make_rasr_ctc_loss_opts(
    rasr_binary_path: str, rasr_arch: str = "linux-x86_64-standard", num_instances: int = 2, **kwargs
):
    trainer_exe = Path(rasr_binary_path) / f"nn-trainer.{rasr_arch}"

    config, post_config = make_ctc_rasr_loss_config(**kwargs)

    loss_opts = {
        "sprint_opts": {
            "sprintExecPath": trainer_exe.as_posix(),
            "sprintConfigStr": f"{config} {post_config} --*.LOGFILE=nn-trainer.loss.log --*.TASK=1",
            "minPythonControlVersion": 4,
            "numInstances": num_instances,
            "usePythonSegmentOrder": False,
        },
        "tdp_scale": 0.0,
    }
    return loss_opts


class CTCModel(nn.Module):
    def __init__(
        self,
        num_outputs: int,
        feature_type: FeatureType = FeatureType.Gammatone,
        encoder_type: EncoderType = EncoderType.Blstm,
        specaug_args: dict = {},
        feature_args: dict = {},
        encoder_args: dict = {},
        loss_args: dict = {},
        legacy_specaug: bool = False,
    ) -> None:
        self.features, self.feature_dim = make_features(feature_type, **feature_args)

        self.specaug_args = specaug_args

        self.encoder = make_encoder(encoder_type, in_dim=self.feature_dim, **encoder_args)
        self.out_dim = nn.FeatureDim("ctc_out", dimension=num_outputs)
        self.out_projection = nn.Linear(self.encoder.out_dim, self.out_dim)

        self.loss_args = loss_args

        self.legacy_specaug = legacy_specaug

    def __call__(
        self,
        source: nn.Tensor,
        *,
        train: bool = False,
    ) -> nn.Tensor:
        assert source.data is not None
        assert source.data.time_dim_axis is not None
        in_spatial_dim = source.data.dim_tags[source.data.time_dim_axis]

        x = source

        if source.data.feature_dim_or_sparse_dim is not None:
            x = nn.squeeze(x, axis=source.data.feature_dim_or_sparse_dim)

        x = self.features(x, in_spatial_dim=in_spatial_dim)
        assert isinstance(x, tuple)
        x, spatial_dim = x
        assert isinstance(spatial_dim, nn.Dim)

        if self.legacy_specaug:
            x = legacy_specaugment(x, spatial_dim=spatial_dim, feature_dim=self.feature_dim, **self.specaug_args)
        else:
            x = specaugment_v2(x, spatial_dim=spatial_dim, feature_dim=self.feature_dim, **self.specaug_args)

        if isinstance(self.encoder, ISeqFramewiseEncoder):
            x = self.encoder(x, spatial_dim=spatial_dim)
        elif isinstance(self.encoder, ISeqDownsamplingEncoder):
            x, spatial_dim = self.encoder(x, in_spatial_dim=spatial_dim)
        else:
            raise TypeError(f"unsupported encoder type {type(self.encoder)}")

        x = self.out_projection(x)

        if train:
            x = nn.make_layer(
                name="ctc_loss",
                layer_dict={
                    "class": "activation",
                    "activation": "softmax",
                    "from": x,
                    "loss": "fast_bw",
                    "loss_opts": make_rasr_ctc_loss_opts(**self.loss_args),
                },
            )
        else:
            x = nn.log_softmax(x, axis=self.out_dim)

        return x


def construct_net_with_data(epoch: int, train: bool, audio_data: nn.Data, **kwargs) -> CTCModel:
    net = CTCModel(**kwargs)

    output = net(source=nn.get_extern_data(audio_data), train=train)
    output.mark_as_default_output()

    return net


# The network kwargs of a config, the extern data of users/berger/rc_helpers/serializers/ctc.py.
def build() -> Stages:
    """One stage: the training net (train=True, with the loss)."""
    audio_data = nn.Data(
        "data",
        dim_tags=[nn.batch_dim, nn.SpatialDim("data_time"), nn.FeatureDim("data_feature", 1)],
        dtype="float32",
    )
    net_kwargs = dict(
        num_outputs=88,
        feature_type=FeatureType.Gammatone,
        encoder_type=EncoderType.Conformer,
        feature_args={"sample_rate": 8_000},
        encoder_args={
            "vgg_args": dict(hybrid_vgg_defaults, activation=nn.swish),
            "conformer_args": dict(
                hybrid_conformer_defaults, ff_activation=nn.swish, conv_norm=nn.LayerNorm, num_layers=6
            ),
        },
        loss_args={
            "rasr_binary_path": "/opt/rasr/arch/linux-x86_64-standard",
            "loss_corpus_path": "/data/corpus/train.corpus.xml.gz",
            "loss_lexicon_path": "/data/lexicon/train.lexicon.xml.gz",
            "am_args": {"state_tying": "monophone", "states_per_phone": 1, "tdp_scale": 1.0},
        },
    )
    return {1: stage(lambda: construct_net_with_data(1, True, audio_data, **net_kwargs))}

"""
CTC: a gammatone front end, SpecAugment, a VGG + Conformer encoder and RASR's full-sum CTC loss (``fast_bw``).

Loaded from the checkout, as it is: the package ``users/berger/rc_modules`` (``models/ctc.py``: ``CTCModel``,
``construct_net_with_data`` and the RASR loss options; ``feature_extraction``: the gammatone module;
``encoder``: ``VGGConformer`` with its defaults; ``data_augmentation``).

Built here (:func:`build`): the extern data of ``users/berger/rc_helpers/serializers/ctc.py`` (raw audio, one
feature) and network kwargs as a config gives them: the hybrid defaults of the encoder, with 6 Conformer layers
instead of 12. Those defaults
hold ``CodeWrapper("nn.swish")`` etc., which the researcher's generated RETURNN config turns into code; built
in-process, :func:`build` passes the objects they name (``nn.swish``, ``nn.LayerNorm``). The RASR paths of the loss
are placeholders (the loss runs RASR's ``nn-trainer``).

Training: not possible here, the ``fast_bw`` loss runs RASR's ``nn-trainer`` binary.
"""

from __future__ import annotations

from tests.real_models import Stages, checkout, nn, stage

KIND = "CTC (gammatone, VGG + Conformer, RASR full-sum loss)"
SOURCE = "users/berger/rc_modules/models/ctc.py"
TRAINS = "its fast_bw loss runs RASR's nn-trainer binary"
STAGES = (1,)
SEARCH_STAGES: tuple = ()

model = checkout.load(SOURCE)
conformer = checkout.load("users/berger/rc_modules/encoder/conformer.py")


def build() -> Stages:
    """One stage: the training net (train=True, with the loss)."""
    audio_data = nn.Data(
        "data",
        dim_tags=[nn.batch_dim, nn.SpatialDim("data_time"), nn.FeatureDim("data_feature", 1)],
        dtype="float32",
    )
    net_kwargs = dict(
        num_outputs=88,
        feature_type=model.FeatureType.Gammatone,
        encoder_type=model.EncoderType.Conformer,
        feature_args={"sample_rate": 8_000},
        encoder_args={
            "vgg_args": dict(conformer.hybrid_vgg_defaults, activation=nn.swish),
            "conformer_args": dict(
                conformer.hybrid_conformer_defaults, ff_activation=nn.swish, conv_norm=nn.LayerNorm, num_layers=6
            ),
        },
        loss_args={
            "rasr_binary_path": "/opt/rasr/arch/linux-x86_64-standard",
            "loss_corpus_path": "/data/corpus/train.corpus.xml.gz",
            "loss_lexicon_path": "/data/lexicon/train.lexicon.xml.gz",
            "am_args": {"state_tying": "monophone", "states_per_phone": 1, "tdp_scale": 1.0},
        },
    )
    return {1: stage(lambda: model.construct_net_with_data(1, True, audio_data, **net_kwargs))}

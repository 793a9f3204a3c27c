"""
CTC, staged: a BLSTM (time reduction 6) + Conformer encoder with CTC losses on the output and after layers 4 and 8; four
stages of pretraining (2, 4, 8, 12 encoder layers, growing dims; the tests build the first two) and its time-sync beam
search (``nn.Loop`` over the downsampled time, ``nn.choice(search=True)``). The targets are BPE labels with a vocabulary
on their sparse dim (``_get_bos_idx`` reads it; the search output gets a vocabulary with ``<blank>``).

Source (rwth-i6/i6_experiments at commit 6b0591b10c1b5a4c40d51d3590b6c7bb7341ddab):
- ``users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/
  ctc_conformer_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py``: everything from ``aux_loss_layers``
  on, as written (the Sisyphus part before it, ``sis_run_with_prefix`` and the training ``config``, is not the model);
- how a stage is built from the extern data: tests.real_models.zeyer_setup.

Changes: the type annotations ``ModelDef[Model]``, ``TrainDef[Model]``, ``RecogDef[Model]`` of
``users/zeyer/model_interfaces`` are dropped with their import (annotations only). ``model_recog`` sets the
vocabulary on ``res.sparse_dim`` (was ``res.feature_dim``, which today's RETURNN makes None for sparse tensors; it
was their sparse dim).

Training: a step on generated data.
"""

from __future__ import annotations

from typing import Optional, Any, Tuple, Dict, Sequence
import numpy
from returnn_common import nn
from returnn_common.nn.encoder.blstm import BlstmEncoder
from returnn_common.asr.specaugment import specaugment_v2

from tests.real_models import Stages, zeyer_setup

KIND = "CTC, staged (time-sync beam search)"
SOURCE = (
    "users/zeyer/experiments/exp2022_07_21_transducer/exp_fs_base/"
    "ctc_conformer_pre10_d384_h6_blstmf2_specaug_attdrop01_posdrop01_aux48ff.py"
)
TRAINS = None
SEQ_LENS = {"data": (80, 100), "classes": (3, 5)}
STAGES = zeyer_setup.EPOCHS + ("recog",)
SEARCH_STAGES = ("recog",)

aux_loss_layers = [4, 8]


class Model(nn.Module):
    """Model definition"""

    def __init__(
        self,
        in_dim: nn.Dim,
        *,
        num_enc_layers: int = 12,
        nb_target_dim: nn.Dim,
        wb_target_dim: nn.Dim,
        blank_idx: int,
        bos_idx: int,
        enc_aux_logits: Sequence[int] = (),  # layers
        enc_input_allow_pool_last: bool = False,
        enc_model_dim: nn.Dim = nn.FeatureDim("enc", 512),
        enc_ff_dim: nn.Dim = nn.FeatureDim("enc-ff", 2048),
        enc_att_num_heads: int = 4,
        enc_conformer_layer_opts: Optional[Dict[str, Any]] = None,
        enc_dropout: float = 0.1,
        enc_att_dropout: float = 0.1,
        l2: float = 0.0001,
    ):
        super(Model, self).__init__()
        if nn.ConformerEncoderLayer.use_dropout_after_self_att:
            nn.ConformerEncoderLayer.use_dropout_after_self_att = False
        self.in_dim = in_dim
        self.encoder = nn.ConformerEncoder(
            in_dim,
            enc_model_dim,
            ff_dim=enc_ff_dim,
            input_layer=BlstmEncoder(
                in_dim,
                nn.FeatureDim("pre-lstm", 512),
                num_layers=2,
                time_reduction=6,
                dropout=enc_dropout,
                allow_pool_last=enc_input_allow_pool_last,
            ),
            encoder_layer_opts=enc_conformer_layer_opts,
            num_layers=num_enc_layers,
            num_heads=enc_att_num_heads,
            dropout=enc_dropout,
            att_dropout=enc_att_dropout,
        )

        for i in enc_aux_logits:
            setattr(self, f"enc_aux_logits_{i}", nn.Linear(enc_model_dim, wb_target_dim))
        self.logits = nn.Linear(enc_model_dim, wb_target_dim)

        self.nb_target_dim = nb_target_dim
        self.wb_target_dim = wb_target_dim
        self.blank_idx = blank_idx
        self.bos_idx = bos_idx  # for non-blank labels; for with-blank labels, we use bos_idx=blank_idx

        for p in self.encoder.parameters():
            p.weight_decay = l2

    def encode(
        self,
        source: nn.Tensor,
        *,
        in_spatial_dim: nn.Dim,
        collected_outputs: Optional[Dict[str, nn.Tensor]] = None,
    ) -> Tuple[Dict[str, nn.Tensor], nn.Dim]:
        """encode, and extend the encoder output for things we need in the decoder"""
        source = specaugment_v2(source, spatial_dim=in_spatial_dim, feature_dim=self.in_dim)
        enc, enc_spatial_dim = self.encoder(source, in_spatial_dim=in_spatial_dim, collected_outputs=collected_outputs)
        return dict(enc=enc), enc_spatial_dim

    @staticmethod
    def encoder_unstack(ext: Dict[str, nn.Tensor]) -> Dict[str, nn.Tensor]:
        """
        prepare the encoder output for the loop (full-sum or time-sync)
        """
        # We might improve or generalize the interface later...
        # https://github.com/rwth-i6/returnn_common/issues/202
        loop = nn.NameCtx.inner_loop()
        return {k: loop.unstack(v) for k, v in ext.items()}


def _get_bos_idx(target_dim: nn.Dim) -> int:
    """for non-blank labels"""
    assert target_dim.vocab
    if target_dim.vocab.bos_label_id is not None:
        bos_idx = target_dim.vocab.bos_label_id
    elif target_dim.vocab.eos_label_id is not None:
        bos_idx = target_dim.vocab.eos_label_id
    elif "<sil>" in target_dim.vocab.user_defined_symbol_ids:
        bos_idx = target_dim.vocab.user_defined_symbol_ids["<sil>"]
    else:
        raise Exception(f"cannot determine bos_idx from vocab {target_dim.vocab}")
    return bos_idx


def from_scratch_model_def(*, epoch: int, in_dim: nn.Dim, target_dim: nn.Dim) -> Model:
    """Function is run within RETURNN."""
    # Pretraining:
    extra_net_dict = nn.NameCtx.top().root.extra_net_dict
    extra_net_dict["#config"] = {}
    extra_net_dict["#copy_param_mode"] = "subset"
    num_enc_layers_ = sum(([i] * 10 for i in [2, 4, 8, 12]), [])
    num_enc_layers = num_enc_layers_[epoch - 1] if epoch <= len(num_enc_layers_) else num_enc_layers_[-1]
    if num_enc_layers <= 2:
        extra_net_dict["#config"]["batch_size"] = 20000
    initial_dim_factor = 0.5
    grow_frac_enc = 1.0 - float(num_enc_layers_[-1] - num_enc_layers) / (num_enc_layers_[-1] - num_enc_layers_[0])
    dim_frac_enc = initial_dim_factor + (1.0 - initial_dim_factor) * grow_frac_enc
    enc_att_num_heads = 6
    return Model(
        in_dim,
        num_enc_layers=num_enc_layers,
        enc_input_allow_pool_last=True,
        enc_model_dim=nn.FeatureDim("enc", int(384 * dim_frac_enc / float(enc_att_num_heads)) * enc_att_num_heads),
        enc_ff_dim=nn.FeatureDim("enc-ff", int(384 * 4 * dim_frac_enc / float(enc_att_num_heads)) * enc_att_num_heads),
        enc_att_num_heads=enc_att_num_heads,
        enc_conformer_layer_opts=dict(
            self_att_opts=dict(
                pos_emb_dropout=0.1 * dim_frac_enc,
            )
        ),
        enc_aux_logits=aux_loss_layers,
        nb_target_dim=target_dim,
        wb_target_dim=target_dim + 1,
        blank_idx=target_dim.dimension,
        bos_idx=_get_bos_idx(target_dim),
        enc_dropout=0.1 * dim_frac_enc,
        enc_att_dropout=0.1 * dim_frac_enc,
    )


from_scratch_model_def.behavior_version = 14


def from_scratch_training(
    *, model: Model, data: nn.Tensor, data_spatial_dim: nn.Dim, targets: nn.Tensor, targets_spatial_dim: nn.Dim
):
    """Function is run within RETURNN."""
    collected_outputs = {}
    enc_args, enc_spatial_dim = model.encode(data, in_spatial_dim=data_spatial_dim, collected_outputs=collected_outputs)
    for i in aux_loss_layers:
        if i > len(model.encoder.layers):
            continue
        linear = getattr(model, f"enc_aux_logits_{i}")
        aux_logits = linear(collected_outputs[str(i - 1)])
        aux_loss = nn.ctc_loss(logits=aux_logits, targets=targets)
        aux_loss.mark_as_loss(f"ctc_{i}")
    logits = model.logits(enc_args["enc"])
    loss = nn.ctc_loss(logits=logits, targets=targets)
    loss.mark_as_loss("ctc")


from_scratch_training.learning_rate_control_error_measure = "dev_score_ctc"


def model_recog(
    *,
    model: Model,
    data: nn.Tensor,
    data_spatial_dim: nn.Dim,
    targets_dim: nn.Dim,  # noqa
) -> nn.Tensor:
    """
    Function is run within RETURNN.

    Earlier we used the generic beam_search function,
    but now we just directly perform the search here,
    as this is overall simpler and shorter.

    :return: recog results including beam
    """
    enc_args, enc_spatial_dim = model.encode(data, in_spatial_dim=data_spatial_dim)
    beam_size = 12

    loop = nn.Loop(axis=enc_spatial_dim)  # time-sync transducer
    loop.max_seq_len = nn.dim_value(enc_spatial_dim) * 2
    with loop:
        enc = model.encoder_unstack(enc_args)
        logits = model.logits(enc["enc"])
        log_prob = nn.log_softmax(logits, axis=model.wb_target_dim)

        label = nn.choice(
            log_prob, input_type="log_prob", target=None, search=True, beam_size=beam_size, length_normalization=False
        )
        res = loop.stack(label)

    assert model.blank_idx == targets_dim.dimension  # added at the end
    res.sparse_dim.vocab = nn.Vocabulary.create_vocab_from_labels(
        targets_dim.vocab.labels + ["<blank>"], user_defined_symbols={"<blank>": model.blank_idx}
    )
    return res


# RecogDef API
model_recog.output_with_beam = True
model_recog.output_blank_label = "<blank>"
model_recog.batch_size_dependent = False


def build() -> Stages:
    """The nets of tests.real_models.zeyer_setup's stages and of recognition."""
    return zeyer_setup.build(from_scratch_model_def, from_scratch_training, model_recog)

"""How RETURNN reads each option of each layer class: the table the graph hash denies by default with (a layer of a
class not in it, or with an option not in it, keeps its names).

Read off the pinned RETURNN: every option a class accepts (the parameters of its ``__init__`` and
``get_out_data_from_opts`` and its bases', LayerBase's, and what ``LayerBase.transform_config_dict`` consumes), each
with the kind of value RETURNN takes it as. ``tests/test_layer_options.py`` introspects every class against it, so a
RETURNN that accepts an option the table lacks, or whose default names a layer, fails there."""

from __future__ import annotations

from typing import NamedTuple


class Reading(NamedTuple):
    """How RETURNN reads an option's value: ``kind`` is one of :data:`KINDS`, ``cites`` the RETURNN file and function
    it is read off."""

    kind: str
    cites: str


#: "layer": a layer reference; "layers": a list of them; "dim": a dim (or dims); "code": code with names in it (or a
#: value this table does not prove free of them); "net": a nested net dict (or layer dict); "axis": a string RETURNN
#: may match against dim descriptions; "literal": a plain value without names, which changes what RETURNN computes;
#: "inert": proven not to change what RETURNN computes.
KINDS = frozenset({"layer", "layers", "dim", "code", "net", "axis", "literal", "inert"})

_BASE = "returnn/tf/layers/base.py LayerBase"


def _options(cites: str, **kinds: str) -> dict[str, Reading]:
    """Readings by kind: each keyword is a kind, its value the options of that kind, separated by spaces."""
    return {option: Reading(kind, cites) for kind, options in kinds.items() for option in options.split()}


#: The options of LayerBase, which every class accepts.
COMMON: dict[str, Reading] = {
    "class": Reading("literal", "returnn/tf/layers/basic.py get_layer_class"),
    **_options(
        f"{_BASE}.transform_config_dict",
        layers="from state",
        layer="target reuse_params initial_output",
        literal="loss loss_scale loss_only_on_non_search",
        code="loss_opts",
    ),
    "out_shape": Reading("literal", f"{_BASE}.get_out_data_from_opts"),  # also allows broadcasting all sources
    "name_scope": Reading("inert", f"{_BASE}.get_absolute_name_scope_prefix"),  # resolved into the parameter scope
    **_options(
        f"{_BASE}.__init__",
        dim="in_dim out_dim",
        literal="n_out is_output_layer register_as_extern_data only_on_search only_on_eval trainable L2 darc1 "
        "spatial_smoothing param_dropout param_dropout_min_ndim param_variational_noise param_device need_last "
        "copy_output_loss_from_source_idx debug_print_layer_output encapsulate",
        code="out_type collocate_with custom_param_importer updater_opts batch_norm control_dependencies_on_output "
        "size_target",
    ),
}


def _own(cites: str, **kinds: str) -> dict[str, Reading]:
    """A class's own options (beyond LayerBase's), read off its ``__init__`` and ``get_out_data_from_opts`` and its
    bases' (``cites``: its file and class)."""
    return _options(f"{cites}.__init__", **kinds)


_OWN: dict[str, dict[str, Reading]] = {
    ":i": _own("returnn/tf/layers/rec.py RecStepInfoLayer", code="i prev_end_flag prev_end_layer seq_lens"),
    "accumulate_mean": _own(
        "returnn/tf/layers/basic.py AccumulateMeanLayer",
        axis="axes axis dropout_axis enforce_batch_dim_axis",
        code="dropout_noise_shape exp_average initial_value is_prob_distribution mask use_time_mask",
        literal="dropout dropout_on_forward keep_dims mode",
    ),
    "activation": _own(
        "returnn/tf/layers/basic.py ActivationLayer",
        axis="dropout_axis",
        code="activation dropout_noise_shape mask opts",
        literal="dropout dropout_on_forward",
    ),
    "alternating_real_to_complex": _own(
        "returnn/tf/layers/signal_processing.py AlternatingRealToComplexLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "apply_length_distribution": _own(
        "returnn/tf/layers/segmental_model.py ApplyLengthDistributionLayer", literal="length_model_scale"
    ),
    "batch_median_pooling": _own(
        "returnn/tf/layers/signal_processing.py BatchMedianPoolingLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward pool_size",
    ),
    "batch_norm": _own(
        "returnn/tf/layers/basic.py BatchNormLayer",
        axis="dropout_axis",
        code="beta_init delay_sample_update dropout_noise_shape epsilon extra_deps force_sample gamma_init mask masked_time momentum param_version update_sample_only_in_training use_sample use_shift use_std",
        literal="dropout dropout_on_forward",
    ),
    "batch_softmax": _own(
        "returnn/tf/layers/basic.py BatchSoftmaxLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "boolean_mask": _own("returnn/tf/layers/basic.py BooleanMaskLayer", dim="dims", layer="mask"),
    "cast": _own(
        "returnn/tf/layers/basic.py CastLayer",
        axis="dropout_axis",
        code="dropout_noise_shape extra_deps mask",
        literal="dropout dropout_on_forward dtype",
    ),
    "choice": _own(
        "returnn/tf/layers/rec.py ChoiceLayer",
        code="add_to_beam_scores beam_size custom_score_combine input_type search source_beam_sizes",
        layers="explicit_search_sources",
        literal="base_beam_score_scale cheating keep_beams length_normalization length_normalization_exponent prob_scale random_sample_scale scheduled_sampling",
    ),
    "choice_get_beam_scores": _own("returnn/tf/layers/rec.py ChoiceGetBeamScoresLayer"),
    "choice_get_src_beams": _own("returnn/tf/layers/rec.py ChoiceGetSrcBeamsLayer"),
    "classes_to_length_distribution": _own(
        "returnn/tf/layers/segmental_model.py ClassesToLengthDistributionLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward scale window",
    ),
    "classes_to_length_distribution_global": _own(
        "returnn/tf/layers/segmental_model.py ClassesToLengthDistributionGlobalLayer",
        axis="broadcast_axis dropout_axis",
        code="dropout_noise_shape mask target_smoothing",
        literal="dropout dropout_on_forward min_length weight_falloff window",
    ),
    "classes_to_segments": _own(
        "returnn/tf/layers/segmental_model.py ClassesToSegmentsLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask num_classes",
        literal="dropout dropout_on_forward window",
    ),
    "combine": _own(
        "returnn/tf/layers/basic.py CombineLayer",
        code="activation allow_broadcast_all_sources eval eval_locals",
        literal="eval_for_output_loss kind with_bias",
    ),
    "combine_dims": _own(
        "returnn/tf/layers/basic.py CombineDimsLayer",
        axis="axes dropout_axis",
        code="dropout_noise_shape keep_order mask",
        literal="dropout dropout_on_forward",
    ),
    "compare": _own(
        "returnn/tf/layers/basic.py CompareLayer", code="allow_broadcast_all_sources value", literal="kind"
    ),
    "complex_linear_projection": _own(
        "returnn/tf/layers/signal_processing.py ComplexLinearProjectionLayer",
        axis="dropout_axis",
        code="clp_weights_init dropout_noise_shape mask nr_of_filters",
        literal="dropout dropout_on_forward",
    ),
    "complex_to_alternating_real": _own(
        "returnn/tf/layers/signal_processing.py ComplexToAlternatingRealLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "concat": _own("returnn/tf/layers/basic.py ConcatLayer", literal="allow_broadcast"),
    "concat_attention": _own(
        "returnn/tf/layers/rec.py ConcatAttentionLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="base base_ctx",
        literal="dropout dropout_on_forward",
    ),
    "cond": _own("returnn/tf/layers/basic.py CondLayer", net="condition false_layer true_layer"),
    "constant": _own(
        "returnn/tf/layers/basic.py ConstantLayer",
        dim="feature_dim shape sparse_dim",
        layers="shape_deps",
        literal="dtype value with_batch_dim",
    ),
    "conv": _own(
        "returnn/tf/layers/basic.py ConvLayer",
        axis="dropout_axis",
        code="activation auto_use_channel_first bias_init dropout_noise_shape filter_perm filter_size forward_weights_init mask pad_seq_len_to_power with_bias",
        dim="in_spatial_dims input_expand_dims input_split_feature_dim out_spatial_dims",
        layer="bias filter",
        literal="dilation_rate dropout dropout_on_forward groups input_add_feature_dim padding strides use_time_mask",
    ),
    "copy": _own(
        "returnn/tf/layers/basic.py CopyLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layers="extra_deps",
        literal="dropout dropout_on_forward",
    ),
    "ctc_loss": _own(
        "returnn/tf/layers/basic.py CtcLossLayer",
        layer="logits targets",
        literal="blank_index label_loop logits_normalized max_approx",
    ),
    "cum_concat": _own(
        "returnn/tf/layers/rec.py CumConcatLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        dim="out_spatial_dim",
        literal="dropout dropout_on_forward",
    ),
    "cumsum": _own(
        "returnn/tf/layers/basic.py CumsumLayer",
        axis="axis dropout_axis",
        code="additional_left_summand_per_element dropout_noise_shape mask",
        literal="dropout dropout_on_forward reverse",
    ),
    "dct": _own(
        "returnn/tf/layers/basic.py DctLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask n norm",
        literal="dropout dropout_on_forward type",
    ),
    "decide": _own(
        "returnn/tf/layers/rec.py DecideLayer",
        code="add_to_beam_scores beam_size search",
        literal="length_normalization",
    ),
    "decide_keep_beam": _own(
        "returnn/tf/layers/rec.py DecideKeepBeamLayer", code="add_to_beam_scores beam_size search"
    ),
    "dot": _own(
        "returnn/tf/layers/basic.py DotLayer",
        axis="red1 red2 reduce var1 var2",
        code="add_var2_if_empty",
        literal="debug use_mask",
    ),
    "dot_attention": _own(
        "returnn/tf/layers/rec.py DotAttentionLayer",
        axis="dropout_axis",
        code="dropout_noise_shape energy_factor mask",
        layer="base base_ctx",
        literal="dropout dropout_on_forward",
    ),
    "dropout": _own(
        "returnn/tf/layers/basic.py DropoutLayer",
        axis="dropout_axis",
        code="dropout_noise_shape extra_deps mask",
        literal="dropout dropout_on_forward",
    ),
    "edit_distance": _own("returnn/tf/layers/rec.py EditDistanceLayer", dim="a_spatial_dim b_spatial_dim", layer="a b"),
    "edit_distance_table": _own(
        "returnn/tf/layers/rec.py EditDistanceTableLayer", axis="axis", code="blank_idx", literal="debug"
    ),
    "elemwise_prod": _own(
        "returnn/tf/layers/basic.py ElemwiseProdLayer",
        axis="axes dropout_axis",
        code="dropout_noise_shape mask size",
        literal="dropout dropout_on_forward",
    ),
    "eval": _own(
        "returnn/tf/layers/basic.py EvalLayer",
        code="activation allow_broadcast_all_sources eval eval_locals",
        literal="eval_for_output_loss kind with_bias",
    ),
    "expand_dims": _own(
        "returnn/tf/layers/basic.py ExpandDimsLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        literal="dim dropout dropout_on_forward",
    ),
    "fast_bw": _own(
        "returnn/tf/layers/basic.py FastBaumWelchLayer",
        axis="dropout_axis",
        code="align_target align_target_key ctc_opts dropout_noise_shape input_type mask sprint_opts",
        layer="staircase_seq_len_source",
        literal="am_scale dropout dropout_on_forward min_prob tdp_scale",
    ),
    "fill_unused": _own(
        "returnn/tf/layers/segmental_model.py FillUnusedMemoryLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward fill_value",
    ),
    "first_t_frames_noise_estimator": _own(
        "returnn/tf/layers/signal_processing.py NoiseEstimationByFirstTFramesLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask nr_of_frames",
        literal="dropout dropout_on_forward",
    ),
    "flatten_batch": _own(
        "returnn/tf/layers/basic.py FlattenBatchLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        literal="batch_major dropout dropout_on_forward",
    ),
    "flatten_time": _own(
        "returnn/tf/layers/segmental_model.py FlattenTimeLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "fold": _own(
        "returnn/tf/layers/basic.py FoldLayer",
        code="window_left window_right",
        dim="in_spatial_dim out_spatial_dim window_dim",
        literal="mode padding stride",
    ),
    "forced_align": _own(
        "returnn/tf/layers/basic.py ForcedAlignmentLayer",
        axis="dropout_axis",
        code="dropout_noise_shape input_type mask topology",
        layer="align_target",
        literal="blank_idx blank_included dropout dropout_on_forward",
    ),
    "forward": _own(
        "returnn/tf/layers/basic.py LinearLayer",
        axis="dropout_axis",
        code="activation bias_init dropout_noise_shape forward_weights_init grad_filter mask",
        literal="dropout dropout_on_forward use_transposed_weights with_bias",
    ),
    "framewise_statistics": _own(
        "returnn/tf/layers/basic.py FramewiseStatisticsLayer", code="sil_label_idx", literal="histogram_num_bins"
    ),
    "gather": _own(
        "returnn/tf/layers/basic.py GatherLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        layer="position",
        literal="clip_to_valid dropout dropout_on_forward",
    ),
    "gather_nd": _own(
        "returnn/tf/layers/basic.py GatherNdLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="position",
        literal="dropout dropout_on_forward",
    ),
    "gating": _own(
        "returnn/tf/layers/basic.py GatingLayer",
        axis="dropout_axis",
        code="activation dropout_noise_shape gate_activation mask",
        literal="dropout dropout_on_forward",
    ),
    "gauss_window_attention": _own(
        "returnn/tf/layers/rec.py GaussWindowAttentionLayer",
        axis="dropout_axis",
        code="dropout_noise_shape inner_size mask window_size",
        layer="base",
        literal="dropout dropout_on_forward inner_size_step std",
    ),
    "generic_attention": _own(
        "returnn/tf/layers/rec.py GenericAttentionLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="base weights",
        literal="auto_squeeze dropout dropout_on_forward",
    ),
    "get_last_hidden_state": _own("returnn/tf/layers/rec.py GetLastHiddenStateLayer", code="combine key"),
    "get_rec_accumulated": _own("returnn/tf/layers/rec.py GetRecAccumulatedOutputLayer", code="sub_layer"),
    "global_train_step": _own("returnn/tf/layers/basic.py GlobalTrainStepLayer"),
    "gradient": _own(
        "returnn/tf/layers/basic.py GradientLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="x y",
        literal="dropout dropout_on_forward",
    ),
    "hdf_dump": _own(
        "returnn/tf/layers/basic.py HDFDumpLayer",
        code="filename labels",
        layers="extra",
        literal="dump_per_run dump_whole_batches extend_existing_file",
    ),
    "hidden": _own(
        "returnn/tf/layers/basic.py LinearLayer",
        axis="dropout_axis",
        code="activation bias_init dropout_noise_shape forward_weights_init grad_filter mask",
        literal="dropout dropout_on_forward use_transposed_weights with_bias",
    ),
    "identity": _own("returnn/tf/layers/basic.py IdentityLayer", layers="control_dependencies"),
    "image_summary": _own("returnn/tf/layers/basic.py ImageSummaryLayer", literal="max_outputs"),
    "istft": _own(
        "returnn/tf/layers/signal_processing.py IstftLayer",
        axis="dropout_axis",
        code="dropout_noise_shape fft_size frame_shift frame_size mask",
        dim="in_spatial_dims out_spatial_dims",
        literal="dropout dropout_on_forward use_time_mask",
    ),
    "kenlm": _own(
        "returnn/tf/layers/rec.py KenLmStateLayer",
        axis="axis dropout_axis",
        code="bpe_merge_symbol dropout_noise_shape lm_file mask vocab_file vocab_unknown_label",
        literal="debug dense_output dropout dropout_on_forward input_step_offset",
    ),
    "layer_norm": _own(
        "returnn/tf/layers/basic.py LayerNormLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward epsilon",
    ),
    "length": _own("returnn/tf/layers/basic.py LengthLayer", axis="axis", literal="add_time_axis dtype sparse"),
    "linear": _own(
        "returnn/tf/layers/basic.py LinearLayer",
        axis="dropout_axis",
        code="activation bias_init dropout_noise_shape forward_weights_init grad_filter mask",
        literal="dropout dropout_on_forward use_transposed_weights with_bias",
    ),
    "loss": _own("returnn/tf/layers/basic.py LossLayer", code="loss_ target_", literal="use_error"),
    "mask_based_gevbeamforming": _own(
        "returnn/tf/layers/signal_processing.py MaskBasedGevBeamformingLayer",
        code="qralgorithm_steps",
        literal="nr_of_channels output_nan_filter postfilter_id",
    ),
    "mask_based_mvdrbeamforming": _own(
        "returnn/tf/layers/signal_processing.py MaskBasedMvdrBeamformingWithDiagLoadingLayer",
        code="qralgorithm_steps",
        literal="diag_loading_coeff nr_of_channels output_nan_filter",
    ),
    "masked_computation": _own(
        "returnn/tf/layers/rec.py MaskedComputationLayer",
        code="masked_from",
        dim="in_spatial_dim out_spatial_dim",
        layer="mask",
        net="unit",
    ),
    "math_norm": _own(
        "returnn/tf/layers/basic.py MathNormLayer",
        axis="axes axis dropout_axis",
        code="dropout_noise_shape mask p",
        literal="dropout dropout_on_forward keep_dims",
    ),
    "mel_filterbank": _own(
        "returnn/tf/layers/signal_processing.py MelFilterbankLayer",
        axis="dropout_axis",
        code="dropout_noise_shape f_max f_min mask",
        literal="dropout dropout_on_forward fft_size nr_of_filters sampling_rate",
    ),
    "merge_dims": _own(
        "returnn/tf/layers/basic.py MergeDimsLayer",
        axis="axes dropout_axis",
        code="dropout_noise_shape keep_order mask",
        literal="dropout dropout_on_forward",
    ),
    "multichannel_multiresolution_stft_layer": _own(
        "returnn/tf/layers/signal_processing.py MultiChannelMultiResolutionStftLayer",
        axis="dropout_axis",
        code="dropout_noise_shape fft_sizes frame_shift frame_sizes mask window",
        literal="dropout dropout_on_forward nr_of_channels pad_last_frame use_rfft",
    ),
    "multichannel_stft_layer": _own(
        "returnn/tf/layers/signal_processing.py MultiChannelStftLayer",
        axis="dropout_axis",
        code="dropout_noise_shape fft_size fft_sizes frame_shift frame_size frame_sizes mask window",
        literal="dropout dropout_on_forward nr_of_channels pad_last_frame use_rfft",
    ),
    "norm": _own(
        "returnn/tf/layers/basic.py NormLayer",
        axis="axes axis dropout_axis",
        code="dropout_noise_shape mask param_shape",
        literal="bias dropout dropout_on_forward epsilon scale",
    ),
    "normalize_length_scores": _own("returnn/tf/layers/segmental_model.py NormalizeLengthScoresLayer"),
    "optimal_completions": _own("returnn/tf/layers/rec.py OptimalCompletionsLayer", code="blank_idx", literal="debug"),
    "pad": _own(
        "returnn/tf/layers/basic.py PadLayer",
        axis="axes dropout_axis",
        code="dropout_noise_shape mask",
        dim="handle_dynamic_dims out_dims",
        layer="value",
        literal="dropout dropout_on_forward mode padding",
    ),
    "parametric_wiener_filter": _own(
        "returnn/tf/layers/signal_processing.py ParametricWienerFilterLayer",
        code="l_overwrite p_overwrite q_overwrite",
        layer="filter_input noise_estimation parameters",
        literal="average_parameters",
    ),
    "pool": _own(
        "returnn/tf/layers/basic.py PoolLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask pool_size strides use_channel_first",
        dim="in_spatial_dims out_spatial_dims",
        literal="dilation_rate dropout dropout_on_forward mode padding use_time_mask",
    ),
    "positional_encoding": _own(
        "returnn/tf/layers/rec.py PositionalEncodingLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        layer="offset",
        literal="add_to_input constant dropout dropout_on_forward",
    ),
    "postfix_in_time": _own(
        "returnn/tf/layers/basic.py PostfixInTimeLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        layer="postfix",
        literal="dropout dropout_on_forward repeat",
    ),
    "prefix_in_time": _own(
        "returnn/tf/layers/basic.py PrefixInTimeLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        layer="repeat size_base",
        literal="dropout dropout_on_forward prefix",
    ),
    "print": _own("returnn/tf/layers/basic.py PrintLayer", code="extra_print_args", literal="summarize"),
    "rand_int": _own(
        "returnn/tf/layers/basic.py RandIntLayer",
        code="seed",
        dim="shape sparse_dim",
        layer="maxval minval",
        literal="dtype",
    ),
    "random": _own(
        "returnn/tf/layers/basic.py RandomLayer",
        code="algorithm auto_update_state bound explicit_state maxval mean minval seed static stddev",
        dim="feature_dim shape sparse_dim",
        layers="shape_deps",
        literal="distribution dtype stop_grad",
    ),
    "random_state_init": _own("returnn/tf/layers/basic.py RandomStateInitLayer", code="algorithm seed"),
    "range": _own(
        "returnn/tf/layers/basic.py RangeLayer", code="limit", dim="out_spatial_dim", literal="delta dtype sparse start"
    ),
    "range_from_length": _own(
        "returnn/tf/layers/basic.py RangeFromLengthLayer", dim="out_spatial_dim", literal="dtype sparse"
    ),
    "range_in_axis": _own(
        "returnn/tf/layers/basic.py RangeInAxisLayer", axis="axis", literal="dtype keepdims sparse unbroadcast"
    ),
    "rec": _own(
        "returnn/tf/layers/rec.py RecLayer",
        axis="axis dropout_axis",
        code="back_prop bias_init debug direction dropout_noise_shape forward_weights_init mask max_seq_len optimize_move_layers_out recurrent_weights_init unit_opts",
        layer="initial_state max_seq_len_via",
        literal="cheating dropout dropout_on_forward include_eos input_projection unroll use_global_rec_step_offset",
        net="unit",
    ),
    "rec_last_output": _own("returnn/tf/layers/rec.py RecLastOutputLayer", code="sub_layer_name", layer="rec_layer"),
    "rec_unstack": _own("returnn/tf/layers/rec.py RecUnstackLayer", axis="axis", literal="declare_rec_time"),
    "reduce": _own(
        "returnn/tf/layers/basic.py ReduceLayer",
        axis="axes axis dropout_axis enforce_batch_dim_axis",
        code="dropout_noise_shape mask use_time_mask",
        literal="dropout dropout_on_forward keep_dims mode",
    ),
    "reduce_out": _own(
        "returnn/tf/layers/basic.py ReduceOutLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask num_pieces",
        literal="dropout dropout_on_forward mode",
    ),
    "reinterpret_data": _own(
        "returnn/tf/layers/basic.py ReinterpretDataLayer",
        axis="dropout_axis set_axes switch_axes",
        code="dropout_noise_shape mask set_dim_tags set_sparse",
        dim="increase_sparse_dim set_sparse_dim",
        layer="batch_dim_base size_base",
        literal="dropout dropout_on_forward enforce_batch_major enforce_time_major",
    ),
    "relative_positional_encoding": _own(
        "returnn/tf/layers/rec.py RelativePositionalEncodingLayer",
        axis="dropout_axis",
        code="dropout_noise_shape forward_weights_init mask query_offset",
        dim="key_value_spatial_dim query_spatial_dim",
        literal="clipping dropout dropout_on_forward fixed",
    ),
    "remove": _own("returnn/tf/layers/basic.py RemoveLayer", axis="axis", code="symbol"),
    "repeat": _own(
        "returnn/tf/layers/basic.py RepeatLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask",
        layer="repetitions",
        literal="dropout dropout_on_forward",
    ),
    "reshape": _own("returnn/tf/layers/basic.py ReshapeLayer", dim="in_dims out_dims", layers="extra_deps"),
    "resize": _own(
        "returnn/tf/layers/basic.py ResizeLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape fill_dropout fill_value mask",
        layer="factor",
        literal="dropout dropout_on_forward kind",
    ),
    "rnn_cell": _own(
        "returnn/tf/layers/rec.py RnnCellLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask unit_opts weights_init",
        layer="initial_state",
        literal="dropout dropout_on_forward unit",
    ),
    "scaled_grad": _own(
        "returnn/tf/layers/basic.py ScaledGradientLayer",
        axis="clip_max_axis dropout_axis scale_shift_by_sum_over_axis",
        code="dropout_noise_shape extra_deps mask",
        layer="scale shift",
        literal="dropout dropout_on_forward",
    ),
    "scatter_nd": _own(
        "returnn/tf/layers/basic.py ScatterNdLayer",
        axis="dropout_axis position_axis",
        code="dropout_noise_shape mask",
        dim="out_spatial_dim",
        layer="output_dim_via_time_from position",
        literal="dropout dropout_on_forward filter_invalid_indices",
    ),
    "search_sorted": _own(
        "returnn/tf/layers/basic.py SearchSortedLayer", axis="axis", code="side", layer="sorted_sequence values"
    ),
    "segment_alignment": _own(
        "returnn/tf/layers/segmental_model.py SegmentAlignmentLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask num_classes",
        literal="dropout dropout_on_forward window",
    ),
    "segment_input": _own(
        "returnn/tf/layers/segmental_model.py SegmentInputLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward window",
    ),
    "self_attention": _own(
        "returnn/tf/layers/rec.py SelfAttentionLayer",
        axis="dropout_axis",
        code="dropout_noise_shape forward_weights_init initial_state mask num_heads state_var_lengths",
        dim="total_key_dim",
        layer="key_shift",
        literal="attention_dropout attention_left_only dropout dropout_on_forward restrict_state_to_last_seq",
    ),
    "seq_len_mask": _own(
        "returnn/tf/layers/basic.py SeqLenMaskLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask mask_value",
        layer="seq_len_source start window_size window_start",
        literal="dropout dropout_on_forward",
    ),
    "shift_axis": _own(
        "returnn/tf/layers/basic.py ShiftAxisLayer",
        axis="axis dropout_axis",
        code="amount dropout_noise_shape mask",
        literal="adjust_size_info dropout dropout_on_forward pad pad_value",
    ),
    "signal_masking": _own("returnn/tf/layers/signal_processing.py SignalMaskingLayer", layer="mask signal"),
    "slice": _own(
        "returnn/tf/layers/basic.py SliceLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask slice_end slice_start slice_step",
        literal="dropout dropout_on_forward",
    ),
    "slice_nd": _own(
        "returnn/tf/layers/basic.py SliceNdLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask min_size",
        dim="out_spatial_dim",
        layer="size start",
        literal="dropout dropout_on_forward",
    ),
    "softmax": _own(
        "returnn/tf/layers/basic.py SoftmaxLayer",
        axis="dropout_axis",
        code="activation bias_init dropout_noise_shape forward_weights_init grad_filter mask",
        literal="dropout dropout_on_forward use_transposed_weights with_bias",
    ),
    "softmax_over_spatial": _own(
        "returnn/tf/layers/basic.py SoftmaxOverSpatialLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape energy_factor mask use_time_mask",
        layer="start window_size window_start",
        literal="dropout dropout_on_forward log_space",
    ),
    "source": _own("returnn/tf/layers/basic.py SourceLayer", code="data_key"),
    "sparse_softmax_cross_entropy_with_logits": _own(
        "returnn/tf/layers/basic.py SparseSoftmaxCrossEntropyWithLogitsLayer", axis="axis", layer="logits targets"
    ),
    "split": _own(
        "returnn/tf/layers/basic.py SplitLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask num_splits size_splits",
        dim="out_dims",
        literal="dropout dropout_on_forward",
    ),
    "split_batch_beam": _own(
        "returnn/tf/layers/rec.py SplitBatchBeamLayer", code="add_to_beam_scores beam_size search", dim="beam_dim"
    ),
    "split_batch_time": _own(
        "returnn/tf/layers/basic.py SplitBatchTimeLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="base",
        literal="dropout dropout_on_forward",
    ),
    "split_concatenated_multichannel": _own(
        "returnn/tf/layers/signal_processing.py SplitConcatMultiChannel",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward nr_of_channels",
    ),
    "split_dims": _own(
        "returnn/tf/layers/basic.py SplitDimsLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask pad_to_multiples",
        dim="dims",
        literal="dropout dropout_on_forward pad_value",
    ),
    "squeeze": _own(
        "returnn/tf/layers/basic.py SqueezeLayer",
        axis="axis dropout_axis enforce_batch_dim_axis",
        code="dropout_noise_shape mask",
        literal="allow_no_op dropout dropout_on_forward",
    ),
    "stack": _own("returnn/tf/layers/basic.py StackLayer", axis="axis", dim="out_spatial_dim"),
    "stft": _own(
        "returnn/tf/layers/signal_processing.py StftLayer",
        axis="dropout_axis",
        code="dropout_noise_shape fft_size frame_shift frame_size mask",
        dim="in_spatial_dims out_spatial_dims",
        literal="dropout dropout_on_forward use_time_mask",
    ),
    "subnetwork": _own(
        "returnn/tf/layers/basic.py SubnetworkLayer",
        code="dropout_noise_shape load_on_init",
        literal="concat_sources dropout",
        net="subnetwork",
    ),
    "swap_axes": _own(
        "returnn/tf/layers/basic.py SwapAxesLayer",
        axis="axis1 axis2 dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "swap_time_feature": _own(
        "returnn/tf/layers/segmental_model.py SwapTimeFeatureLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "switch": _own("returnn/tf/layers/basic.py SwitchLayer", layer="condition false_from true_from"),
    "synthetic_gradient": _own(
        "returnn/tf/layers/basic.py SyntheticGradientLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="gradient",
        literal="dropout dropout_on_forward meta_loss_scale",
    ),
    "tikhonov_regularization": _own(
        "returnn/tf/layers/basic.py TikhonovRegularizationLayer",
        axis="dropout_axis",
        code="dropout_noise_shape extra_deps mask",
        literal="dropout dropout_on_forward meta_loss_scale",
    ),
    "tile": _own(
        "returnn/tf/layers/basic.py TileLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask multiples",
        dim="out_dims",
        literal="dropout dropout_on_forward",
    ),
    "tile_features": _own(
        "returnn/tf/layers/signal_processing.py TileFeaturesLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward repetitions",
    ),
    "time_chunking": _own(
        "returnn/tf/layers/basic.py TimeChunkingLayer",
        axis="axis dropout_axis",
        code="chunk_size chunk_step dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "time_unchunking": _own(
        "returnn/tf/layers/basic.py TimeUnChunkingLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        layer="chunking_layer",
        literal="dropout dropout_on_forward",
    ),
    "top_k": _own("returnn/tf/layers/basic.py TopKLayer", axis="axis", dim="k_dim", layer="k", literal="sorted"),
    "train_flag": _own("returnn/tf/layers/basic.py TrainFlagLayer"),
    "transpose": _own(
        "returnn/tf/layers/basic.py TransposeLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask perm",
        literal="dropout dropout_on_forward",
    ),
    "transposed_conv": _own(
        "returnn/tf/layers/basic.py TransposedConvLayer",
        axis="dropout_axis",
        code="activation bias_init dropout_noise_shape filter_perm filter_size forward_weights_init mask output_padding strides",
        dim="in_spatial_dims out_spatial_dims",
        layer="bias filter",
        literal="dropout dropout_on_forward padding remove_padding use_time_mask with_bias",
    ),
    "twod_lstm": _own(
        "returnn/tf/layers/rec.py TwoDLSTMLayer",
        code="bias_init forward_weights_init pooling recurrent_weights_init unit_opts",
    ),
    "unflatten_batch": _own(
        "returnn/tf/layers/basic.py UnflattenBatchLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "unflatten_nd": _own(
        "returnn/tf/layers/basic.py UnflattenNdLayer",
        axis="dropout_axis num_axes",
        code="dropout_noise_shape mask",
        dim="out_dims",
        layers="declare_same_sizes_as sizes",
        literal="dropout dropout_on_forward",
    ),
    "unmask": _own("returnn/tf/layers/rec.py UnmaskLayer", layer="mask"),
    "unsegment_input": _own(
        "returnn/tf/layers/segmental_model.py UnsegmentInputLayer",
        axis="dropout_axis",
        code="dropout_noise_shape mask",
        literal="dropout dropout_on_forward",
    ),
    "variable": _own(
        "returnn/tf/layers/variable.py VariableLayer",
        code="init",
        dim="shape",
        layer="init_by_layer",
        literal="add_batch_axis add_time_axis dtype non_critical_for_restore param_name saveable",
    ),
    "variable_assign": _own(
        "returnn/tf/layers/variable.py VariableAssignLayer", code="op", layer="value var", layers="control_dependencies"
    ),
    "variable_read": _own(
        "returnn/tf/layers/variable.py VariableReadLayer", layer="var", layers="control_dependencies"
    ),
    "weighted_sum": _own(
        "returnn/tf/layers/basic.py WeightedSumLayer",
        axis="axes dropout_axis",
        code="dropout_noise_shape mask size",
        dim="keep_dims",
        literal="dropout dropout_on_forward padding",
    ),
    "window": _own(
        "returnn/tf/layers/basic.py WindowLayer",
        axis="axis dropout_axis",
        code="dropout_noise_shape mask window_left window_right window_size",
        dim="out_spatial_dim window_dim",
        literal="dropout dropout_on_forward padding stride",
    ),
}

#: Layer class -> option -> how RETURNN reads it.
READINGS: dict[str, dict[str, Reading]] = {cls: {**COMMON, **own} for cls, own in _OWN.items()}

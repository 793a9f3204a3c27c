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
    "out_shape": Reading("literal", f"{_BASE}._base_get_out_data_from_opts"),  # also lets all sources broadcast
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


#: The options of _ConcatInputLayer (returnn/tf/layers/basic.py), the base of most classes: it concatenates the
#: sources, then applies dropout and a mask.
_INPUTS = _options(
    "returnn/tf/layers/basic.py _ConcatInputLayer.__init__",
    literal="dropout dropout_on_forward",
    axis="dropout_axis",
    code="dropout_noise_shape mask",
)


def _concat(cites: str, **kinds: str) -> dict[str, Reading]:
    """A subclass of _ConcatInputLayer: its options, and its own as :func:`_own`."""
    return {**_INPUTS, **_own(cites, **kinds)}


_OWN: dict[str, dict[str, Reading]] = {
    ":i": _own("returnn/tf/layers/rec.py RecStepInfoLayer", code="i prev_end_flag prev_end_layer seq_lens"),
    "accumulate_mean": _concat(
        "returnn/tf/layers/basic.py AccumulateMeanLayer",
        axis="axes axis enforce_batch_dim_axis",
        code="exp_average initial_value is_prob_distribution use_time_mask",
        literal="keep_dims mode",
    ),
    "activation": _concat("returnn/tf/layers/basic.py ActivationLayer", code="activation opts"),
    "alternating_real_to_complex": _concat("returnn/tf/layers/signal_processing.py AlternatingRealToComplexLayer"),
    "apply_length_distribution": _own(
        "returnn/tf/layers/segmental_model.py ApplyLengthDistributionLayer", literal="length_model_scale"
    ),
    "batch_median_pooling": _concat(
        "returnn/tf/layers/signal_processing.py BatchMedianPoolingLayer", literal="pool_size"
    ),
    "batch_norm": _concat(
        "returnn/tf/layers/basic.py BatchNormLayer",
        code="beta_init delay_sample_update epsilon extra_deps force_sample gamma_init masked_time momentum param_version update_sample_only_in_training use_sample use_shift use_std",
    ),
    "batch_softmax": _concat("returnn/tf/layers/basic.py BatchSoftmaxLayer"),
    "boolean_mask": _own("returnn/tf/layers/basic.py BooleanMaskLayer", dim="dims", layer="mask"),
    "cast": _concat("returnn/tf/layers/basic.py CastLayer", code="extra_deps", literal="dtype"),
    "choice": _own(
        "returnn/tf/layers/rec.py ChoiceLayer",
        code="add_to_beam_scores beam_size custom_score_combine input_type search source_beam_sizes",
        layers="explicit_search_sources",
        literal="base_beam_score_scale cheating keep_beams length_normalization length_normalization_exponent prob_scale random_sample_scale scheduled_sampling",
    ),
    "choice_get_beam_scores": _own("returnn/tf/layers/rec.py ChoiceGetBeamScoresLayer"),
    "choice_get_src_beams": _own("returnn/tf/layers/rec.py ChoiceGetSrcBeamsLayer"),
    "classes_to_length_distribution": _concat(
        "returnn/tf/layers/segmental_model.py ClassesToLengthDistributionLayer", literal="scale window"
    ),
    "classes_to_length_distribution_global": _concat(
        "returnn/tf/layers/segmental_model.py ClassesToLengthDistributionGlobalLayer",
        axis="broadcast_axis",
        code="target_smoothing",
        literal="min_length weight_falloff window",
    ),
    "classes_to_segments": _concat(
        "returnn/tf/layers/segmental_model.py ClassesToSegmentsLayer", code="num_classes", literal="window"
    ),
    "combine": _own(
        "returnn/tf/layers/basic.py CombineLayer",
        code="activation allow_broadcast_all_sources eval eval_locals",
        literal="eval_for_output_loss kind with_bias",
    ),
    "combine_dims": _concat("returnn/tf/layers/basic.py CombineDimsLayer", axis="axes", code="keep_order"),
    "compare": _own(
        "returnn/tf/layers/basic.py CompareLayer", code="allow_broadcast_all_sources value", literal="kind"
    ),
    "complex_linear_projection": _concat(
        "returnn/tf/layers/signal_processing.py ComplexLinearProjectionLayer", code="clp_weights_init nr_of_filters"
    ),
    "complex_to_alternating_real": _concat("returnn/tf/layers/signal_processing.py ComplexToAlternatingRealLayer"),
    "concat": _own("returnn/tf/layers/basic.py ConcatLayer", literal="allow_broadcast"),
    "concat_attention": _concat("returnn/tf/layers/rec.py ConcatAttentionLayer", layer="base base_ctx"),
    "cond": _own("returnn/tf/layers/basic.py CondLayer", net="condition false_layer true_layer"),
    "constant": _own(
        "returnn/tf/layers/basic.py ConstantLayer",
        dim="feature_dim shape sparse_dim",
        layers="shape_deps",
        literal="dtype value with_batch_dim",
    ),
    "conv": _concat(
        "returnn/tf/layers/basic.py ConvLayer",
        code="activation auto_use_channel_first bias_init filter_perm filter_size forward_weights_init pad_seq_len_to_power with_bias",
        dim="in_spatial_dims input_expand_dims input_split_feature_dim out_spatial_dims",
        layer="bias filter",
        literal="dilation_rate groups input_add_feature_dim padding strides use_time_mask",
    ),
    "copy": _concat("returnn/tf/layers/basic.py CopyLayer", layers="extra_deps"),
    "ctc_loss": _own(
        "returnn/tf/layers/basic.py CtcLossLayer",
        layer="logits targets",
        literal="blank_index label_loop logits_normalized max_approx",
    ),
    "cum_concat": _concat("returnn/tf/layers/rec.py CumConcatLayer", axis="axis", dim="out_spatial_dim"),
    "cumsum": _concat(
        "returnn/tf/layers/basic.py CumsumLayer",
        axis="axis",
        code="additional_left_summand_per_element",
        literal="reverse",
    ),
    "dct": _concat("returnn/tf/layers/basic.py DctLayer", code="n norm", literal="type"),
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
    "dot_attention": _concat("returnn/tf/layers/rec.py DotAttentionLayer", code="energy_factor", layer="base base_ctx"),
    "dropout": _concat("returnn/tf/layers/basic.py DropoutLayer", code="extra_deps"),
    "edit_distance": _own("returnn/tf/layers/rec.py EditDistanceLayer", dim="a_spatial_dim b_spatial_dim", layer="a b"),
    "edit_distance_table": _own(
        "returnn/tf/layers/rec.py EditDistanceTableLayer", axis="axis", code="blank_idx", literal="debug"
    ),
    "elemwise_prod": _concat("returnn/tf/layers/basic.py ElemwiseProdLayer", axis="axes", code="size"),
    "eval": _own(
        "returnn/tf/layers/basic.py EvalLayer",
        code="activation allow_broadcast_all_sources eval eval_locals",
        literal="eval_for_output_loss kind with_bias",
    ),
    "expand_dims": _concat("returnn/tf/layers/basic.py ExpandDimsLayer", axis="axis", literal="dim"),
    "fast_bw": _concat(
        "returnn/tf/layers/basic.py FastBaumWelchLayer",
        code="align_target align_target_key ctc_opts input_type sprint_opts",
        layer="staircase_seq_len_source",
        literal="am_scale min_prob tdp_scale",
    ),
    "fill_unused": _concat("returnn/tf/layers/segmental_model.py FillUnusedMemoryLayer", literal="fill_value"),
    "first_t_frames_noise_estimator": _concat(
        "returnn/tf/layers/signal_processing.py NoiseEstimationByFirstTFramesLayer", code="nr_of_frames"
    ),
    "flatten_batch": _concat("returnn/tf/layers/basic.py FlattenBatchLayer", axis="axis", literal="batch_major"),
    "flatten_time": _concat("returnn/tf/layers/segmental_model.py FlattenTimeLayer"),
    "fold": _own(
        "returnn/tf/layers/basic.py FoldLayer",
        code="window_left window_right",
        dim="in_spatial_dim out_spatial_dim window_dim",
        literal="mode padding stride",
    ),
    "forced_align": _concat(
        "returnn/tf/layers/basic.py ForcedAlignmentLayer",
        code="input_type topology",
        layer="align_target",
        literal="blank_idx blank_included",
    ),
    "forward": _concat(
        "returnn/tf/layers/basic.py LinearLayer",
        code="activation bias_init forward_weights_init grad_filter",
        literal="use_transposed_weights with_bias",
    ),
    "framewise_statistics": _own(
        "returnn/tf/layers/basic.py FramewiseStatisticsLayer", code="sil_label_idx", literal="histogram_num_bins"
    ),
    "gather": _concat("returnn/tf/layers/basic.py GatherLayer", axis="axis", layer="position", literal="clip_to_valid"),
    "gather_nd": _concat("returnn/tf/layers/basic.py GatherNdLayer", layer="position"),
    "gating": _concat("returnn/tf/layers/basic.py GatingLayer", code="activation gate_activation"),
    "gauss_window_attention": _concat(
        "returnn/tf/layers/rec.py GaussWindowAttentionLayer",
        code="inner_size window_size",
        layer="base",
        literal="inner_size_step std",
    ),
    "generic_attention": _concat(
        "returnn/tf/layers/rec.py GenericAttentionLayer", layer="base weights", literal="auto_squeeze"
    ),
    "get_last_hidden_state": _own("returnn/tf/layers/rec.py GetLastHiddenStateLayer", code="combine key"),
    "get_rec_accumulated": _own("returnn/tf/layers/rec.py GetRecAccumulatedOutputLayer", code="sub_layer"),
    "global_train_step": _own("returnn/tf/layers/basic.py GlobalTrainStepLayer"),
    "gradient": _concat("returnn/tf/layers/basic.py GradientLayer", layer="x y"),
    "hdf_dump": _own(
        "returnn/tf/layers/basic.py HDFDumpLayer",
        code="filename labels",
        layers="extra",
        literal="dump_per_run dump_whole_batches extend_existing_file",
    ),
    "hidden": _concat(
        "returnn/tf/layers/basic.py LinearLayer",
        code="activation bias_init forward_weights_init grad_filter",
        literal="use_transposed_weights with_bias",
    ),
    "identity": _own("returnn/tf/layers/basic.py IdentityLayer", layers="control_dependencies"),
    "image_summary": _own("returnn/tf/layers/basic.py ImageSummaryLayer", literal="max_outputs"),
    "istft": _concat(
        "returnn/tf/layers/signal_processing.py IstftLayer",
        code="fft_size frame_shift frame_size",
        dim="in_spatial_dims out_spatial_dims",
        literal="use_time_mask",
    ),
    "kenlm": _concat(
        "returnn/tf/layers/rec.py KenLmStateLayer",
        axis="axis",
        code="bpe_merge_symbol lm_file vocab_file vocab_unknown_label",
        literal="debug dense_output input_step_offset",
    ),
    "layer_norm": _concat("returnn/tf/layers/basic.py LayerNormLayer", literal="epsilon"),
    "length": _own("returnn/tf/layers/basic.py LengthLayer", axis="axis", literal="add_time_axis dtype sparse"),
    "linear": _concat(
        "returnn/tf/layers/basic.py LinearLayer",
        code="activation bias_init forward_weights_init grad_filter",
        literal="use_transposed_weights with_bias",
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
    "math_norm": _concat("returnn/tf/layers/basic.py MathNormLayer", axis="axes axis", code="p", literal="keep_dims"),
    "mel_filterbank": _concat(
        "returnn/tf/layers/signal_processing.py MelFilterbankLayer",
        code="f_max f_min",
        literal="fft_size nr_of_filters sampling_rate",
    ),
    "merge_dims": _concat("returnn/tf/layers/basic.py MergeDimsLayer", axis="axes", code="keep_order"),
    "multichannel_multiresolution_stft_layer": _concat(
        "returnn/tf/layers/signal_processing.py MultiChannelMultiResolutionStftLayer",
        code="fft_sizes frame_shift frame_sizes window",
        literal="nr_of_channels pad_last_frame use_rfft",
    ),
    "multichannel_stft_layer": _concat(
        "returnn/tf/layers/signal_processing.py MultiChannelStftLayer",
        code="fft_size fft_sizes frame_shift frame_size frame_sizes window",
        literal="nr_of_channels pad_last_frame use_rfft",
    ),
    "norm": _concat(
        "returnn/tf/layers/basic.py NormLayer", axis="axes axis", code="param_shape", literal="bias epsilon scale"
    ),
    "normalize_length_scores": _own("returnn/tf/layers/segmental_model.py NormalizeLengthScoresLayer"),
    "optimal_completions": _own("returnn/tf/layers/rec.py OptimalCompletionsLayer", code="blank_idx", literal="debug"),
    "pad": _concat(
        "returnn/tf/layers/basic.py PadLayer",
        axis="axes",
        dim="handle_dynamic_dims out_dims",
        layer="value",
        literal="mode padding",
    ),
    "parametric_wiener_filter": _own(
        "returnn/tf/layers/signal_processing.py ParametricWienerFilterLayer",
        code="l_overwrite p_overwrite q_overwrite",
        layer="filter_input noise_estimation parameters",
        literal="average_parameters",
    ),
    "pool": _concat(
        "returnn/tf/layers/basic.py PoolLayer",
        code="pool_size strides use_channel_first",
        dim="in_spatial_dims out_spatial_dims",
        literal="dilation_rate mode padding use_time_mask",
    ),
    "positional_encoding": _concat(
        "returnn/tf/layers/rec.py PositionalEncodingLayer", axis="axis", layer="offset", literal="add_to_input constant"
    ),
    "postfix_in_time": _concat(
        "returnn/tf/layers/basic.py PostfixInTimeLayer", axis="axis", layer="postfix", literal="repeat"
    ),
    "prefix_in_time": _concat(
        "returnn/tf/layers/basic.py PrefixInTimeLayer", axis="axis", layer="repeat size_base", literal="prefix"
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
    "rec": _concat(
        "returnn/tf/layers/rec.py RecLayer",
        axis="axis",
        code="back_prop bias_init debug direction forward_weights_init max_seq_len optimize_move_layers_out recurrent_weights_init unit_opts",
        layer="initial_state max_seq_len_via",
        literal="cheating include_eos input_projection unroll use_global_rec_step_offset",
        net="unit",
    ),
    "rec_last_output": _own("returnn/tf/layers/rec.py RecLastOutputLayer", code="sub_layer_name", layer="rec_layer"),
    "rec_unstack": _own("returnn/tf/layers/rec.py RecUnstackLayer", axis="axis", literal="declare_rec_time"),
    "reduce": _concat(
        "returnn/tf/layers/basic.py ReduceLayer",
        axis="axes axis enforce_batch_dim_axis",
        code="use_time_mask",
        literal="keep_dims mode",
    ),
    "reduce_out": _concat("returnn/tf/layers/basic.py ReduceOutLayer", code="num_pieces", literal="mode"),
    "reinterpret_data": _concat(
        "returnn/tf/layers/basic.py ReinterpretDataLayer",
        axis="set_axes switch_axes",
        code="set_dim_tags set_sparse",
        dim="increase_sparse_dim set_sparse_dim",
        layer="batch_dim_base size_base",
        literal="enforce_batch_major enforce_time_major",
    ),
    "relative_positional_encoding": _concat(
        "returnn/tf/layers/rec.py RelativePositionalEncodingLayer",
        code="forward_weights_init query_offset",
        dim="key_value_spatial_dim query_spatial_dim",
        literal="clipping fixed",
    ),
    "remove": _own("returnn/tf/layers/basic.py RemoveLayer", axis="axis", code="symbol"),
    "repeat": _concat("returnn/tf/layers/basic.py RepeatLayer", axis="axis", layer="repetitions"),
    "reshape": _own("returnn/tf/layers/basic.py ReshapeLayer", dim="in_dims out_dims", layers="extra_deps"),
    "resize": _concat(
        "returnn/tf/layers/basic.py ResizeLayer",
        axis="axis",
        code="fill_dropout fill_value",
        layer="factor",
        literal="kind",
    ),
    "rnn_cell": _concat(
        "returnn/tf/layers/rec.py RnnCellLayer", code="unit_opts weights_init", layer="initial_state", literal="unit"
    ),
    "scaled_grad": _concat(
        "returnn/tf/layers/basic.py ScaledGradientLayer",
        axis="clip_max_axis scale_shift_by_sum_over_axis",
        code="extra_deps",
        layer="scale shift",
    ),
    "scatter_nd": _concat(
        "returnn/tf/layers/basic.py ScatterNdLayer",
        axis="position_axis",
        dim="out_spatial_dim",
        layer="output_dim_via_time_from position",
        literal="filter_invalid_indices",
    ),
    "search_sorted": _own(
        "returnn/tf/layers/basic.py SearchSortedLayer", axis="axis", code="side", layer="sorted_sequence values"
    ),
    "segment_alignment": _concat(
        "returnn/tf/layers/segmental_model.py SegmentAlignmentLayer", code="num_classes", literal="window"
    ),
    "segment_input": _concat("returnn/tf/layers/segmental_model.py SegmentInputLayer", literal="window"),
    "self_attention": _concat(
        "returnn/tf/layers/rec.py SelfAttentionLayer",
        code="forward_weights_init initial_state num_heads state_var_lengths",
        dim="total_key_dim",
        layer="key_shift",
        literal="attention_dropout attention_left_only restrict_state_to_last_seq",
    ),
    "seq_len_mask": _concat(
        "returnn/tf/layers/basic.py SeqLenMaskLayer",
        axis="axis",
        code="mask_value",
        layer="seq_len_source start window_size window_start",
    ),
    "shift_axis": _concat(
        "returnn/tf/layers/basic.py ShiftAxisLayer",
        axis="axis",
        code="amount",
        literal="adjust_size_info pad pad_value",
    ),
    "signal_masking": _own("returnn/tf/layers/signal_processing.py SignalMaskingLayer", layer="mask signal"),
    "slice": _concat("returnn/tf/layers/basic.py SliceLayer", axis="axis", code="slice_end slice_start slice_step"),
    "slice_nd": _concat(
        "returnn/tf/layers/basic.py SliceNdLayer",
        axis="axis",
        code="min_size",
        dim="out_spatial_dim",
        layer="size start",
    ),
    "softmax": _concat(
        "returnn/tf/layers/basic.py SoftmaxLayer",
        code="activation bias_init forward_weights_init grad_filter",
        literal="use_transposed_weights with_bias",
    ),
    "softmax_over_spatial": _concat(
        "returnn/tf/layers/basic.py SoftmaxOverSpatialLayer",
        axis="axis",
        code="energy_factor use_time_mask",
        layer="start window_size window_start",
        literal="log_space",
    ),
    "source": _own("returnn/tf/layers/basic.py SourceLayer", code="data_key"),
    "sparse_softmax_cross_entropy_with_logits": _own(
        "returnn/tf/layers/basic.py SparseSoftmaxCrossEntropyWithLogitsLayer", axis="axis", layer="logits targets"
    ),
    "split": _concat(
        "returnn/tf/layers/basic.py SplitLayer", axis="axis", code="num_splits size_splits", dim="out_dims"
    ),
    "split_batch_beam": _own(
        "returnn/tf/layers/rec.py SplitBatchBeamLayer", code="add_to_beam_scores beam_size search", dim="beam_dim"
    ),
    "split_batch_time": _concat("returnn/tf/layers/basic.py SplitBatchTimeLayer", layer="base"),
    "split_concatenated_multichannel": _concat(
        "returnn/tf/layers/signal_processing.py SplitConcatMultiChannel", literal="nr_of_channels"
    ),
    "split_dims": _concat(
        "returnn/tf/layers/basic.py SplitDimsLayer",
        axis="axis",
        code="pad_to_multiples",
        dim="dims",
        literal="pad_value",
    ),
    "squeeze": _concat(
        "returnn/tf/layers/basic.py SqueezeLayer", axis="axis enforce_batch_dim_axis", literal="allow_no_op"
    ),
    "stack": _own("returnn/tf/layers/basic.py StackLayer", axis="axis", dim="out_spatial_dim"),
    "stft": _concat(
        "returnn/tf/layers/signal_processing.py StftLayer",
        code="fft_size frame_shift frame_size",
        dim="in_spatial_dims out_spatial_dims",
        literal="use_time_mask",
    ),
    "subnetwork": _own(
        "returnn/tf/layers/basic.py SubnetworkLayer",
        code="dropout_noise_shape load_on_init",
        literal="concat_sources dropout",
        net="subnetwork",
    ),
    "swap_axes": _concat("returnn/tf/layers/basic.py SwapAxesLayer", axis="axis1 axis2"),
    "swap_time_feature": _concat("returnn/tf/layers/segmental_model.py SwapTimeFeatureLayer"),
    "switch": _own("returnn/tf/layers/basic.py SwitchLayer", layer="condition false_from true_from"),
    "synthetic_gradient": _concat(
        "returnn/tf/layers/basic.py SyntheticGradientLayer", layer="gradient", literal="meta_loss_scale"
    ),
    "tikhonov_regularization": _concat(
        "returnn/tf/layers/basic.py TikhonovRegularizationLayer", code="extra_deps", literal="meta_loss_scale"
    ),
    "tile": _concat("returnn/tf/layers/basic.py TileLayer", code="multiples", dim="out_dims"),
    "tile_features": _concat("returnn/tf/layers/signal_processing.py TileFeaturesLayer", literal="repetitions"),
    "time_chunking": _concat("returnn/tf/layers/basic.py TimeChunkingLayer", axis="axis", code="chunk_size chunk_step"),
    "time_unchunking": _concat("returnn/tf/layers/basic.py TimeUnChunkingLayer", layer="chunking_layer"),
    "top_k": _own("returnn/tf/layers/basic.py TopKLayer", axis="axis", dim="k_dim", layer="k", literal="sorted"),
    "train_flag": _own("returnn/tf/layers/basic.py TrainFlagLayer"),
    "transpose": _concat("returnn/tf/layers/basic.py TransposeLayer", code="perm"),
    "transposed_conv": _concat(
        "returnn/tf/layers/basic.py TransposedConvLayer",
        code="activation bias_init filter_perm filter_size forward_weights_init output_padding strides",
        dim="in_spatial_dims out_spatial_dims",
        layer="bias filter",
        literal="padding remove_padding use_time_mask with_bias",
    ),
    "twod_lstm": _own(
        "returnn/tf/layers/rec.py TwoDLSTMLayer",
        code="bias_init forward_weights_init pooling recurrent_weights_init unit_opts",
    ),
    "unflatten_batch": _concat("returnn/tf/layers/basic.py UnflattenBatchLayer"),
    "unflatten_nd": _concat(
        "returnn/tf/layers/basic.py UnflattenNdLayer",
        axis="num_axes",
        dim="out_dims",
        layers="declare_same_sizes_as sizes",
    ),
    "unmask": _own("returnn/tf/layers/rec.py UnmaskLayer", layer="mask"),
    "unsegment_input": _concat("returnn/tf/layers/segmental_model.py UnsegmentInputLayer"),
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
    "weighted_sum": _concat(
        "returnn/tf/layers/basic.py WeightedSumLayer", axis="axes", code="size", dim="keep_dims", literal="padding"
    ),
    "window": _concat(
        "returnn/tf/layers/basic.py WindowLayer",
        axis="axis",
        code="window_left window_right window_size",
        dim="out_spatial_dim window_dim",
        literal="padding stride",
    ),
}

#: Layer class -> option -> how RETURNN reads it.
READINGS: dict[str, dict[str, Reading]] = {cls: {**COMMON, **own} for cls, own in _OWN.items()}

"""The normalizations of the graph hash (``hash_scheme="graph"``), each a named rule, in one place.

A rule says which differences of two net dicts RETURNN cannot tell apart (same TF parameters, same initialization,
same output), so the graph hash leaves them out. Each has two tests against real RETURNN in
``tests/test_graph_rules.py``: two dicts differing only by the rule build the same model and hash alike, and a
semantic change next to it hashes differently. A change of any rule's effect on any net dict is a new
GRAPH_FORMAT_VERSION (it is in every graph hash), with a CHANGELOG entry (docs/development.md, "Changing a hash")."""

from __future__ import annotations

from typing import NamedTuple

GRAPH_FORMAT_VERSION = 6


class Rule(NamedTuple):
    name: str
    says: str  # what is normalized, and why RETURNN cannot tell the difference


RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule(
            "layer-names",
            "A layer is identified by its class, its options and the layers it reads (numbered in order of first "
            "use from the roots), not by its name; RETURNN uses a name only to find the layer, except where it is "
            "kept: the default output 'output', loss layers (their names are the score keys), layers marked "
            "is_output_layer or register_as_extern_data, layers of extra nets ('extra.search:output'), a loop's "
            "'output' and 'end', extern_data keys, parameter scopes, the name of a layer that names a TF variable "
            "after itself (a variable layer without param_name, initial_output 'var', batch_norm of param_version 0 "
            "or not given), the local name of a layer that may describe a dim by it (RETURNN takes generated dims "
            "of one description for one dim; i6_rc_jobs/_hashing/dim_naming.py, read off RETURNN: unless its options "
            "give every such dim, or an out_shape of given dims holds), and in a loop which of its layers' names "
            "sort before which: _SubnetworkRecCell "
            "constructs the layers read through 'prev:' and the outputs it needs in name order, and each draws "
            "its initializers' seeds from the loop's random generator then. Denied by default: only a layer whose "
            "class and options are all in i6_rc_jobs/_hashing/layer_options.py (read off RETURNN) loses its name; one "
            "with another option keeps it, and with a layer of another class, or a value that is no plain data (a "
            "function, a Sisyphus value other than a path), or eval or activation code that is more than sources, "
            "literals, operators and pure TF calls (i6_rc_jobs/_hashing/graph_code.py: code may name a layer it "
            "computes, or make a variable), every layer keeps its name. A dict's keys are tied to the layers they "
            "name as values are. A default that names a "
            "layer is resolved as RETURNN resolves it: no 'from' reads 'data' (older behaviour versions), a loss "
            "without 'target' the layer of the default target's name, split_batch_time without 'base' 'data'.",
        ),
        Rule(
            "parameter-scope",
            "A layer that may own parameters carries its effective TF name scope as RETURNN resolves it "
            "(nesting, name_scope '', relative and absolute, the 'rec/' of a loop or of a cell unit such as "
            "'nativelstm2' without name_scope): that is what names its "
            "variables (checkpoints, param sharing), however the dict arrives at it. A name_scope that makes a scope "
            "TF refuses (a root scope starting with '_') is refused: no spelling of it builds.",
        ),
        Rule(
            "subnetwork-namespace",
            "A subnetwork layer with at most one input and no other option (name_scope only by 'subnetwork-scope') "
            "whose scope no layer outside it has variables under is a namespace: its layers join the graph, a "
            "reference to it means its 'output', and 'data' inside it means its input (RETURNN's SubnetworkLayer "
            "copies nothing: its output is the layer 'output' of the subnetwork; it owns every variable under its "
            "scope, which decides what is trainable, so one that shares its scope stays a layer). Only in a network "
            "none of whose layers draws from a random generator (one that may own parameters, a random or dropout "
            "layer without a seed, an input or parameter dropout, eval code that may): RETURNN makes a subnetwork a "
            "network of its own, seeded by a draw from its parent's generator (TFNetwork.__init__), so it shifts the "
            "seeds of the layers built after it and gives its own layers others (initial values, dropout masks). "
            "In such a network, each layer of a subnetwork names the subnetwork it sits in, also where only its "
            "path is read (Subnetwork is made when any path into it is first read, network.py construct_layer).",
        ),
        Rule(
            "subnetwork-scope",
            "A subnetwork layer whose name_scope is a scope of its own (not '' or '/') is a namespace as well, its "
            "layers under that scope: SubnetworkLayer (returnn/tf/layers/basic.py) reads name_scope only through "
            "get_absolute_name_scope_prefix, for its layers' scope and in update_params_from_subnet. With or without "
            "a name_scope, a subnetwork under whose scope a layer outside it has variables (a loop with name_scope "
            "'' holding a module of the name of one outside it, as returnn_common makes them) stays a layer: "
            "update_params_from_subnet owns those variables too.",
        ),
        Rule(
            "subnetwork-output",
            "A subnetwork layer read as a whole in the 'from' of a layer that reads only its sources' output (see "
            "OUTPUT_READERS), outside loops, is the layer its 'output' finds in it, as if read by that path ('lstms.0' "
            "as 'lstms.0/rec' where 'output' copies 'rec'): RETURNN's SubnetworkLayer constructs only its 'output' "
            "(transform_config_dict: subnet.construct_layer('output')), in the one Subnetwork per name that "
            "construct_layer also makes for a path into it (make_subnet), and outputs that layer's output. Only for "
            "a subnetwork with no option but one source, a name_scope and an out_shape its output checks, none of "
            "whose layers is marked (its objective, maybe_construct_objective) or sets 'trainable', and under whose "
            "scope no layer outside it has variables: SubnetworkLayer owns every variable under its scope "
            "(update_params_from_subnet), which decides what is trainable.",
        ),
        Rule(
            "copy-alias",
            "A copy layer of one source with no other option but inert ones (and an out_shape only by 'out-shape') "
            "is its source: CopyLayer returns the source's output unchanged. Not where a layer shares its variables "
            "(reuse_params: a copy has none), and a copy of 'none' has no source.",
        ),
        Rule(
            "from-list",
            "'from': 'x', ['x'] and ('x',) are one input list (RETURNN reads a single name as a list of one).",
        ),
        Rule(
            "unreached",
            "A layer that nothing kept reads, that may own no parameters and whose name no kept string holds is "
            "dropped: RETURNN constructs layers from the outputs, losses and marked layers, so it is never built.",
        ),
        Rule(
            "inert-options",
            "Options that do not change what a layer computes are dropped: 'name_scope' (replaced by the parameter "
            "scope it resolves to; not a masked_computation's, which its unit takes as its own). Not 'out_shape': it is a check, but it also lets a layer broadcast its sources "
            "(LayerBase.get_out_data_from_opts), and a failed check refuses the net.",
        ),
        Rule(
            "out-shape",
            "An 'out_shape' is hashed, but a copy alias ('copy-alias') or a namespace subnetwork "
            "('subnetwork-namespace') may carry one if it is the one of the layer whose output it passes on (the same "
            "dims): the same check on the same output, and a single source broadcasts nothing. So may any subnetwork "
            "with a net dict, whose 'output' layer checks the same dims: SubnetworkLayer.get_out_data_from_opts "
            "outputs a copy of that layer's output, and it takes no sources it could broadcast. The dims of an "
            "out_shape are hashed as their same_as base: verify_out_shape matches them by RETURNN's Dim equality, "
            "which takes a copy for its base.",
        ),
        Rule(
            "unset-options",
            "Options at a value RETURNN treats as not given are dropped: with a loss, 'loss_scale' 1.0 (LayerBase "
            "applies a scale only if it is not 1.0) and 'loss_opts' None or {}; without a loss, either at None.",
        ),
        Rule(
            "value-spellings",
            "Values RETURNN makes the same of: a constant layer's scalar value and dtype as the tensor it makes "
            "(dtype given, or where it is None bool/int32/float32 from the value's type; 0 in float32 is 0.0, an int only if a "
            "double holds it exactly: else TF rounds it once and the respelling twice), and an initial state "
            "0, 0.0 or 'zeros' (1, 1.0 or 'ones'), as RnnCellLayer.get_rec_initial_state_inner reads it.",
        ),
        Rule(
            "scalar-operands",
            "A binary operation of a layer and a float number is one node whichever way it is spelled: an eval "
            "'source(0) * 0.5' (also +, -, /, //, %, ** and tf.maximum/tf.minimum, either side) and a combine of "
            "the layer with a constant layer of that float (no shape, dtype float32) apply the same TF op to the same "
            "float32 scalar (returnn_common b0f6e44 switched the first for the second in 2022-05). Only where the layer "
            "is proven float32 (float32 extern data, or a float32 constant, cast, variable or random, through layers "
            "that keep their sources' dtype): an eval keeps its source's dtype, a combine with a float32 constant "
            "fails on float64 or float16. Not inside a loop "
            "of a net whose layers draw from a random generator: which layers RETURNN moves out of a loop, and so "
            "the order in which layers draw their seeds, depends on how they are spelled.",
        ),
        Rule(
            "empty-shape-deps",
            "A constant or random layer's 'shape_deps' [] or () is dropped: their transform_config_dict "
            "(returnn/tf/layers/basic.py) maps it item by item to an empty list of layers, and __init__, "
            "get_dep_layers and get_out_data_from_opts take the default () alike (an empty beam combination, no "
            "dependency).",
        ),
        Rule(
            "extern-shape-deps",
            "A constant or random layer's 'shape_deps' is a list whichever way it is spelled (transform_config_dict "
            "makes a str or tuple one), and outside loops the extern data in it ('data', 'data:<key>' of a key of "
            "the serializer's extern_data that no layer registers with register_as_extern_data, and that a layer of "
            "the graph reads as a source: else the dependency alone makes the network use that data, "
            "get_used_data_keys) is dropped, then an empty list as none: such a dependency only orders construction "
            "(extern data exist before any layer), "
            "gives no beam (SearchBeam.get_combined_beam of none; extern data carry no beam, registered data may) "
            "and makes no dim (their sizes exist with the data). returnn_common wrote 'shape_deps': ['data:data'] on "
            "its constants from 2022-08-24. Not in a net with a net dict nested in an option (its layers might "
            "register).",
        ),
        Rule(
            "static-random",
            "A random layer with static=True and a shape of dims only owns no parameters: RandomLayer.__init__ "
            "(returnn/tf/layers/basic.py) then draws from a _RndGeneratorStaticSeed, a constant state made from the "
            "seed (no add_param, no variable; explicit_state beside it is refused), so its name is not hashed, while "
            "every option (seed, distribution, shape, dtype, static, ...) is. An int in the shape would make a dim "
            "named after the layer ('<name>:dim0', auto-generated dims of one description are equal), so such a "
            "layer keeps its scope. A seed not given is drawn in construction order, as dropout's.",
        ),
        Rule(
            "loops",
            "A layer inside a loop (a 'rec' layer with a dict unit) carries its loop's number; 'prev:x' stays "
            "marked as the previous frame of x, the loop's per-frame input ('data:source') is marked as such, "
            "another data key ('data' too) as that extern data's frame (the rec cell's extern data), and a layer "
            "inside read from outside ('loop/x') is marked as stacked over the loop.",
        ),
    )
}

#: Rule "layer-names", its references. Options that LayerBase.transform_config_dict (returnn/tf/layers/base.py)
#: resolves with get_layer for every layer class: "from" (each name but "none"), "target" ("layer:x" is x; else a
#: layer of that name, else the extern_data key), "initial_output" (but its keywords), "state" (every leaf) and
#: "reuse_params" (ReuseParams.from_config_dict: the str, "reuse_layer", and in "map" each str, "reuse_layer" and
#: "layer_output"). A name in a reference becomes the token of the layer it finds; a reference that finds nothing
#: stays as it is, tied to every layer named in it (see OTHER strings below).
COMMON_REFERENCE_OPTIONS = frozenset({"from", "target", "initial_output", "state", "reuse_params"})

#: Per layer class: the further options its transform_config_dict (or a base class's) resolves with get_layer, read
#: off the pinned RETURNN (returnn/tf/layers/*.py; tests/test_graph_soundness.py checks each entry against it). Every
#: string, list item and dict value of them is a layer name.
CLASS_REFERENCE_OPTIONS: dict[str, frozenset[str]] = {
    cls: frozenset(options)
    for cls, options in {
        "concat_attention": {"base", "base_ctx"},  # AttentionBaseLayer, GlobalAttentionContextBaseLayer
        "dot_attention": {"base", "base_ctx"},
        "gauss_window_attention": {"base"},
        "generic_attention": {"base", "weights"},
        "boolean_mask": {"mask"},
        "choice": {"explicit_search_sources"},
        "constant": {"shape_deps"},
        "conv": {"filter", "bias"},
        "transposed_conv": {"filter", "bias"},
        "copy": {"extra_deps"},  # CopyLayer and its subclasses
        "reshape": {"extra_deps"},
        "ctc_loss": {"logits", "targets"},
        "sparse_softmax_cross_entropy_with_logits": {"logits", "targets"},
        "edit_distance": {"a", "b"},
        "fast_bw": {"staircase_seq_len_source"},
        "forced_align": {"align_target"},
        "gather": {"position"},
        "gather_nd": {"position"},
        "scatter_nd": {"position", "output_dim_via_time_from"},
        "gradient": {"x", "y"},
        "hdf_dump": {"extra"},
        "identity": {"control_dependencies"},
        "variable_read": {"control_dependencies", "var"},
        "variable_assign": {"control_dependencies", "var", "value"},
        "variable": {"init_by_layer"},
        "masked_computation": {"mask"},
        "unmask": {"mask"},
        "signal_masking": {"mask", "signal"},
        "pad": {"value"},
        "parametric_wiener_filter": {"filter_input", "noise_estimation", "parameters"},
        "positional_encoding": {"offset"},
        "postfix_in_time": {"postfix"},
        "prefix_in_time": {"repeat", "size_base"},
        "rand_int": {"maxval", "minval"},
        "random": {"shape_deps"},
        "rec_last_output": {"rec_layer"},
        "rec": {"max_seq_len_via", "initial_state"},  # initial_state: RnnCellLayer.transform_initial_state
        "rnn_cell": {"initial_state"},
        "reinterpret_data": {"size_base", "batch_dim_base"},
        "repeat": {"repetitions"},
        "resize": {"factor"},
        "scaled_grad": {"scale", "shift"},
        "search_sorted": {"sorted_sequence", "values"},
        "self_attention": {"key_shift"},
        "seq_len_mask": {"seq_len_source", "start", "window_start", "window_size"},
        "slice_nd": {"start", "size"},
        "softmax_over_spatial": {"start", "window_start", "window_size"},
        "split_batch_time": {"base"},
        "switch": {"condition", "true_from", "false_from"},  # a number in true_from/false_from stays a number
        "synthetic_gradient": {"gradient"},
        "time_unchunking": {"chunking_layer"},
        "top_k": {"k"},
        "unflatten_nd": {"sizes", "declare_same_sizes_as"},
    }.items()
}

#: Strings a reference option reads as keywords, never as layer names: "from": "none" (LayerBase skips it),
#: LayerBase's initial_output keywords, RnnCellLayer.transform_initial_state's.
KEYWORDS: dict[str, frozenset[str]] = {
    "from": frozenset({"none"}),
    "initial_output": frozenset({"zeros", "ones", "var", "keep_over_epoch", "keep_over_epoch_no_init", "apply(0)"}),
    "initial_state": frozenset({"zeros", "ones", "var", "keep_over_epoch", "keep_over_epoch_no_init", "placeholder"}),
}

#: Options whose strings RETURNN only compares with its own keywords or parses with its own grammar (no get_layer,
#: no eval): layer and loss class names, op kinds and modes, dtypes, a variable's TF name, a random distribution (a
#: rec or rnn_cell "unit" too where it is a str, a cell's name). Not axis strings: RETURNN matches them against dim
#: descriptions, which it makes of layer names ("<layer>:window"), so they are OTHER strings. Their strings stay as they are, and name no
#: layer (returnn_common names layers after what they do: a layer "add" beside "kind": "add"). An "activation" is
#: code (get_activation_function evals it) when it holds "(": then it is an OTHER string.
#:
#: Every other string (OTHER: code such as "eval", "max_seq_len" or an initializer, options this graph does not
#: know) stays as it is, tied to the layer it finds as a name and to every layer whose name occurs in it.
LITERAL_OPTIONS = frozenset(
    {
        "class",
        "kind",
        "mode",
        "activation",
        "distribution",
        "dtype",
        "padding",
        "param_name",
        "loss",
    }
)

#: Rule "unset-options": option -> (the values that mean "not given" on a layer with a loss, on one without),
#: compared with their type (True is no 1.0), as LayerBase.transform_config_dict reads them: with a loss it scales
#: only by a loss_scale other than 1.0 (None is a scale) and takes loss_opts None or {} as none; without one it
#: drops a None of either and refuses any other value.
UNSET_VALUES: dict[str, tuple[tuple, tuple]] = {"loss_scale": ((1.0,), (None,)), "loss_opts": ((None, {}), (None,))}

#: Rule "value-spellings": the classes whose ``initial_state`` RnnCellLayer reads (numbers and "zeros"/"ones").
INITIAL_STATE_CLASSES = frozenset({"rec", "rnn_cell"})

#: Rule "scalar-operands": eval operators and functions -> the combine kind that applies the same op.
SCALAR_OPERATORS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow"}
SCALAR_FUNCTIONS = {"tf.maximum": "maximum", "tf.minimum": "minimum"}

#: Rules "empty-shape-deps" and "extern-shape-deps": the classes whose transform_config_dict resolves "shape_deps"
#: item by item and whose __init__ and get_out_data_from_opts default it to () (tests/test_graph_soundness.py checks
#: them).
SHAPE_DEPS_CLASSES = frozenset({"constant", "random"})

#: Options dropped by the rule "inert-options": "name_scope" (resolved into the parameter scope). Not "out_shape"
#: (rule "out-shape"), not "shape_deps": RandomLayer and ConstantLayer resolve it as layers, whose dims they take (a
#: reference, see CLASS_REFERENCE_OPTIONS).
INERT_OPTIONS = frozenset({"name_scope"})

#: Rule "inert-options": the classes that pass their "name_scope" on to a layer dict they hold, for which it is more
#: than a spelling of their own scope (MaskedComputationLayer: ``layer_desc.setdefault("name_scope",
#: self.name_scope)``, which moves a cell unit's variables out of "rec/"); theirs is hashed as it is.
NAME_SCOPE_PASSING_CLASSES = frozenset({"masked_computation"})

#: Rule "layer-names", defaults that name a layer. The classes whose transform_config_dict (or a base's) defaults
#: "from" to none (``d.setdefault("from", [])``); any other class without "from" reads "data"
#: (LayerBase.transform_config_dict: ``d.pop("from", ["data"])``, refused from behaviour version 1 on).
SOURCELESS_CLASSES = frozenset(
    {
        ":i",
        "choice_get_beam_scores",
        "choice_get_src_beams",
        "constant",
        "ctc_loss",
        "decide_keep_beam",
        "edit_distance",
        "generic_attention",
        "global_train_step",
        "gradient",
        "masked_computation",
        "parametric_wiener_filter",
        "rand_int",
        "random",
        "random_state_init",
        "range",
        "rec_last_output",
        "search_sorted",
        "signal_masking",
        "source",
        "sparse_softmax_cross_entropy_with_logits",
        "switch",
        "train_flag",
        "variable",
        "variable_assign",
        "variable_read",
    }
)
#: Other reference options with a default name, per class (SplitBatchTimeLayer: ``d.get("base", "data")``).
DEFAULT_REFERENCES: dict[str, dict[str, str]] = {"split_batch_time": {"base": "data"}}

#: Layer classes whose code (the class and its bases below LayerBase, in returnn/tf/layers/*.py) creates no TF
#: variable: no add_param, get_variable, tf.Variable, var_creation_scope, RNN cell or random Generator (RandomLayer
#: owns its generator state, a variable named after the layer, so it is not here, but see rule "static-random");
#: tests/test_graph_soundness.py checks each against the pinned RETURNN. Every other class counts as owning
#: parameters (rule "parameter-scope"), and is never dropped (rule "unreached"). A layer of these classes owns
#: parameters all the same with an option of VARIABLE_OPTIONS.
PARAMETER_FREE_CLASSES = frozenset(
    {
        "activation",
        "combine",  # but with_bias, see VARIABLE_OPTIONS
        "compare",
        "concat",
        "constant",
        "copy",
        "cum_concat",
        "cumsum",
        "dot",
        "dropout",
        "eval",  # a CombineLayer: with_bias, as combine
        "expand_dims",
        "gather",
        "get_last_hidden_state",
        "length",
        "merge_dims",
        "pad",
        "pool",
        "range",
        "range_from_length",
        "range_in_axis",
        "reduce",
        "reinterpret_data",
        "rec_unstack",
        "reshape",
        "slice",
        "slice_nd",
        "softmax_over_spatial",
        "sparse_softmax_cross_entropy_with_logits",
        "split",
        "split_dims",
        "squeeze",
        "switch",
        "transpose",
        "window",
    }
)

#: Options with which a layer of any class creates TF variables (named after its scope): LayerBase's "batch_norm"
#: (LayerBase.batch_norm, any value but False or None), "initial_output": "var" (LayerBase.get_rec_initial_output),
#: CombineLayer's "with_bias" (any value but False or None).
VARIABLE_OPTIONS: dict[str, tuple] = {"batch_norm": (False, None), "with_bias": (False, None)}
VARIABLE_KEYWORDS: dict[str, str] = {"initial_output": "var"}

#: Rule "subnetwork-namespace": layers that draw from their network's random generator (numpy, seeded from its parent's
#: when a subnetwork is made: TFNetwork.__init__, returnn/tf/network.py) besides those that may own parameters
#: (their initializers draw): these classes without an explicit "seed" (RandomLayer, RandIntLayer,
#: RandomStateInitLayer, ResizeLayer's random mode, DropoutLayer), these options of any class (the input dropout of
#: _ConcatInputLayer and SourceLayer, LayerBase's param_dropout and param_variational_noise), and eval code that is
#: not a str free of "random" and "seed".
RANDOM_DRAWING_CLASSES = frozenset({"random", "rand_int", "random_state_init", "resize", "dropout"})
RANDOM_DRAWING_OPTIONS = frozenset({"dropout", "param_dropout", "param_variational_noise"})

#: Rule "subnetwork-output": classes whose layers read nothing of a source layer but its output: DotLayer
#: (``self.sources[i].output``) and RecLayer, only of a cell unit (a str) and without initial_state (which reads the
#: sources' layers in RnnCellLayer.get_rec_initial_state); not CopyLayer (output_before_activation, rec_vars_outputs),
#: LinearLayer (whether a source is a CopyLayer) and others that read more.
OUTPUT_READERS = frozenset({"dot", "rec"})

#: Rule "parameter-scope": classes whose variables sit under "rec/" in their scope unless name_scope is given
#: (RecLayer and RnnCellLayer.get_absolute_name_scope_prefix), for a loop's body as for a cell unit ("lstm", ...).
REC_SCOPE_CLASSES = frozenset({"rec", "rnn_cell"})

#: Options of a layer that RETURNN reads its name for (rule "layer-names"): the layer is kept with its path.
MARKING_OPTIONS = ("loss", "is_output_layer", "register_as_extern_data")

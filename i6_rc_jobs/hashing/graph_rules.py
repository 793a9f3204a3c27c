"""The normalizations of the graph hash (``hash_scheme="graph"``), each a named rule, in one place.

A rule says which differences of two net dicts RETURNN cannot tell apart (same TF parameters, same initialization,
same output), so the graph hash leaves them out. Each has two tests against real RETURNN in
``tests/test_graph_rules.py``: two dicts differing only by the rule build the same model and hash alike, and a
semantic change next to it hashes differently. A change of any rule's effect on any net dict is a new
GRAPH_FORMAT_VERSION (it is in every graph hash), with a CHANGELOG entry."""

from __future__ import annotations

from typing import NamedTuple

GRAPH_FORMAT_VERSION = 1


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
            "'output' and 'end', extern_data keys, and parameter scopes.",
        ),
        Rule(
            "parameter-scope",
            "A layer that may own parameters carries its effective TF name scope as RETURNN resolves it "
            "(nesting, name_scope '', relative and absolute, the 'rec/' of a loop): that is what names its "
            "variables (checkpoints, param sharing), however the dict arrives at it.",
        ),
        Rule(
            "subnetwork-namespace",
            "A subnetwork layer with at most one input and no other option is a namespace: its layers join the "
            "graph, a reference to it means its 'output', and 'data' inside it means its input (RETURNN's "
            "SubnetworkLayer copies nothing: its output is the layer 'output' of the subnetwork).",
        ),
        Rule(
            "copy-alias",
            "A copy layer of one source with no other option but inert ones is its source: CopyLayer returns the "
            "source's output unchanged.",
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
            "Options that do not change what a layer computes are dropped: 'out_shape' (a check that raises if the "
            "output does not have that shape), 'shape_deps' (layers to construct first, for their dims) and "
            "'name_scope' (replaced by the parameter scope it resolves to).",
        ),
        Rule(
            "unset-options",
            "Options at a value RETURNN treats as not given are dropped: 'loss_scale' 1.0 (LayerBase applies a scale "
            "only if it is not 1.0) or None, 'loss_opts' None or {}.",
        ),
        Rule(
            "value-spellings",
            "Values RETURNN makes the same of: a constant layer's scalar value and dtype as the tensor it makes "
            "(dtype given, or bool/int32/float32 from the value's type; 0 in float32 is 0.0), and an initial state "
            "0, 0.0 or 'zeros' (1, 1.0 or 'ones'), as RnnCellLayer.get_rec_initial_state_inner reads it.",
        ),
        Rule(
            "scalar-operands",
            "A binary operation of a layer and a float number is one node whichever way it is spelled: an eval "
            "'source(0) * 0.5' (also +, -, /, //, %, ** and tf.maximum/tf.minimum, either side) and a combine of "
            "the layer with a constant layer of that float (no shape, dtype float32) apply the same TF op to the same "
            "float32 scalar (returnn_common b0f6e44 switched the first for the second in 2022-05).",
        ),
        Rule(
            "loops",
            "A layer inside a loop (a 'rec' layer with a dict unit) carries its loop's number; 'prev:x' stays "
            "marked as the previous frame of x, the loop's per-frame input ('data', 'data:source') is marked as "
            "such, and a layer inside read from outside ('loop/x') is marked as stacked over the loop.",
        ),
    )
}

#: Options that hold layer names (RETURNN resolves them with get_layer). A name elsewhere that finds a layer is
#: kept as it is, and keeps that layer.
REFERENCE_OPTIONS = frozenset(
    {
        "from",
        "init_by_layer",
        "initial_output",
        "initial_state",
        "logits",
        "targets",
        "position",
        "filter",
        "bias",
        "layer_output",
        "size_base",
        "weights",
        "sequence_lengths",
        "state",
        "condition",
        "explicit_search_sources",
        "target_layer",
        "reuse_params",
    }
)

#: Options whose strings RETURNN never reads as layer names (kinds, modes, code, axis strings, extern_data keys):
#: their strings stay as they are, even where one equals a layer's name (returnn_common names layers after what they
#: do: a layer "add" beside ``"kind": "add"``).
LITERAL_OPTIONS = frozenset(
    {
        "class",
        "kind",
        "mode",
        "activation",
        "distribution",
        "dtype",
        "padding",
        "eval",
        "unit",
        "param_name",
        "loss",
        "key",
        "axis",
        "axes",
        "dropout_axis",
        "target",
        "opts",
    }
)

#: Rule "unset-options": option -> the values that mean "not given" (compared with their type: True is no 1.0).
UNSET_VALUES: dict[str, tuple] = {"loss_scale": (1.0, None), "loss_opts": (None, {})}

#: Rule "value-spellings": the classes whose ``initial_state`` RnnCellLayer reads (numbers and "zeros"/"ones").
INITIAL_STATE_CLASSES = frozenset({"rec", "rnn_cell"})

#: Rule "scalar-operands": eval operators and functions -> the combine kind that applies the same op.
SCALAR_OPERATORS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow"}
SCALAR_FUNCTIONS = {"tf.maximum": "maximum", "tf.minimum": "minimum"}

#: Options dropped by the rule "inert-options".
INERT_OPTIONS = frozenset({"out_shape", "shape_deps", "name_scope"})

#: Layer classes that never create TF variables (RETURNN's layers without params or reuse_params); every other class
#: counts as owning parameters (rule "parameter-scope"), and is never dropped (rule "unreached").
PARAMETER_FREE_CLASSES = frozenset(
    {
        "activation",
        "combine",
        "compare",
        "concat",
        "constant",
        "copy",
        "cum_concat",
        "cumsum",
        "dot",
        "dropout",
        "eval",
        "expand_dims",
        "gather",
        "get_last_hidden_state",
        "length",
        "merge_dims",
        "pad",
        "pool",
        "random",
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

#: Options of a layer that RETURNN reads its name for (rule "layer-names"): the layer is kept with its path.
MARKING_OPTIONS = ("loss", "is_output_layer", "register_as_extern_data")

"""The graph hash never hides a change RETURNN makes: pairs of net dicts that RETURNN builds into other models (other
outputs, TF variables or losses, judged by i6_rc_jobs/_verify/semantics.py) hash differently with ``hash_scheme="graph"``,
for each way a graph can miss what RETURNN does (references taken as plain values, names resolved otherwise than
RETURNN resolves them, options wrongly taken as inert), and the tables of i6_rc_jobs/_hashing/graph_rules.py hold
against the pinned RETURNN's code, so that a RETURNN update that invalidates an entry fails here."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from typing import Any, Optional

import pytest
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._hashing import graph_rules
from i6_rc_jobs._verify.semantics import same_model

time_dim = Dim(None, name="time", kind=Dim.Types.Spatial)
in_dim = Dim(5, name="in", kind=Dim.Types.Feature)
hidden_dim = Dim(7, name="hidden", kind=Dim.Types.Feature)
sliced_dim = Dim(None, name="sliced", kind=Dim.Types.Spatial)
loop_dim = Dim(None, name="loop", kind=Dim.Types.Spatial)
EXTERN_DATA = {
    "data": {"dim_tags": [batch_dim, time_dim, in_dim]},
    "classes": {"dim_tags": [batch_dim, time_dim], "sparse_dim": hidden_dim, "dtype": "int32"},
}

Net = dict[str, Any]


def act(source: Any, activation: str = "relu") -> dict:
    return {"class": "activation", "activation": activation, "from": source}


def linear(source: Any, **options: Any) -> dict:
    return {"class": "linear", "from": source, "out_dim": hidden_dim, **options}


def add(*sources: str, **options: Any) -> dict:
    return {"class": "combine", "kind": "add", "from": list(sources), **options}


def loop(unit: Net, source: str = "ff") -> dict:
    return {"class": "rec", "from": source, "axis": time_dim, "unit": unit}


def swapped(x: str, y: str) -> tuple[dict, dict]:
    """Two layers "x" and "y" of data, relu and tanh: swapping their contents and the order of their readers keeps
    every layer token a graph gives them, so only how a name is read tells the two nets apart."""
    return {x: act("data", "relu"), y: act("data", "tanh")}, {x: act("data", "tanh"), y: act("data", "relu")}


def _pair_loss_target() -> tuple[Net, Net]:
    def net(activation: str) -> Net:
        return {
            "ff": linear("data"),
            "t": act("ff", activation),
            "output": {"class": "copy", "from": "ff", "loss": "mse", "target": "layer:t"},
        }

    return net("relu"), net("tanh")


def _pair_code_names() -> tuple[Net, Net]:
    code = "source(0) + source(1) + self.network.get_layer('x').output.placeholder"
    a, b = swapped("x", "y")
    return (
        {**a, "output": {"class": "eval", "from": ["x", "y"], "eval": code}},
        {**b, "output": {"class": "eval", "from": ["y", "x"], "eval": code}},
    )


def _pair_code_names_a_namespace() -> tuple[Net, Net]:
    """As _pair_code_names, with "x" and "y" subnetworks that the graph flattens into namespaces: the code's "x"
    is x's output layer. The code holds no other layer's name (not the word "output")."""
    a, b = swapped("x", "y")
    code = "source(0) + source(1) + getattr(self.network.get_layer('x'), 'out' + 'put').placeholder"

    def namespaces(net: Net) -> Net:
        return {
            name: {"class": "subnetwork", "from": "data", "subnetwork": {"output": desc}} for name, desc in net.items()
        }

    return (
        {**namespaces(a), "output": {"class": "eval", "from": ["x", "y"], "eval": code}},
        {**namespaces(b), "output": {"class": "eval", "from": ["y", "x"], "eval": code}},
    )


def _pair_code_names_odd() -> tuple[Net, Net]:
    """As _pair_code_names, with names that code holds as no word ("x-1" splits into "x" and "1")."""
    a, b = swapped("x-1", "y-1")
    code = "source(0) + source(1) + getattr(self.network.get_layer('x-1'), 'out' + 'put').placeholder"
    return (
        {**a, "output": {"class": "eval", "from": ["x-1", "y-1"], "eval": code}},
        {**b, "output": {"class": "eval", "from": ["y-1", "x-1"], "eval": code}},
    )


def _pair_max_seq_len() -> tuple[Net, Net]:
    def net(x: dict, y: dict, order: list[str]) -> Net:
        unit = {
            "i": {"class": "copy", "from": "base:kept"},
            "output": add("prev:output", "i"),
            "top": {"class": "reduce", "mode": "max", "axis": in_dim, "from": "output"},
            "end": {"class": "compare", "kind": "greater", "from": "top", "value": 99.0},
        }
        return {
            "x": x,
            "y": y,
            "rx": {"class": "reduce", "mode": "max", "axis": "T", "from": "x"},
            "ry": {"class": "reduce", "mode": "max", "axis": "T", "from": "y"},
            "kept": add(*order, is_output_layer=True),
            "output": {
                "class": "rec",
                "from": [],
                "axis": loop_dim,
                "max_seq_len": "max_len_from('base:x')",
                "unit": unit,
            },
        }

    full = act("data")
    short = {"class": "slice", "from": "data", "axis": time_dim, "slice_start": 3, "out_dim": sliced_dim}
    return net(full, short, ["rx", "ry"]), net(short, full, ["ry", "rx"])


def _pair_concat_sources() -> tuple[Net, Net]:
    a, b = swapped("x", "y")
    sub = {
        "class": "subnetwork",
        "concat_sources": False,
        "subnetwork": {"output": {"class": "copy", "from": "data:x"}},
    }
    return {**a, "output": {**sub, "from": ["x", "y"]}}, {**b, "output": {**sub, "from": ["y", "x"]}}


def _pair_layer_named_data() -> tuple[Net, Net]:
    return (
        {"data": act("data:data", "relu"), "output": {"class": "copy", "from": "data"}},
        {"data": act("data:data", "tanh"), "output": {"class": "copy", "from": "data"}},
    )


def _pair_from_none() -> tuple[Net, Net]:
    ff = linear("data")
    return (
        {"ff": ff, "none": act("ff"), "output": add("ff", "none")},
        {"ff": ff, "other": act("ff"), "output": add("ff", "other")},
    )


def _pair_initial_state_keyword() -> tuple[Net, Net]:
    def net(name: str) -> Net:
        return {
            "ff": linear("data"),
            name: {"class": "reduce", "mode": "max", "axis": time_dim, "from": "ff"},
            "output": {"class": "rec", "unit": "gru", "from": "data", "out_dim": hidden_dim, "initial_state": name},
        }

    return net("ones"), net("init")


def _pair_subnetwork_from_prev() -> tuple[Net, Net]:
    def net(prev: str) -> Net:
        sub = {"class": "subnetwork", "from": prev, "subnetwork": {"output": act("data", "tanh")}}
        unit = {"acc": add("data:source", "prev:acc"), "sub": sub, "output": add("acc", "sub")}
        return {"ff": linear("data"), "output": loop(unit)}

    return net("prev:acc"), net("prev:output")


def _pair_prev_of_alias() -> tuple[Net, Net]:
    def net(prev: str) -> Net:
        unit = {
            "x": add("data:source", "prev:x", initial_output="ones"),
            "c": {"class": "copy", "from": "x"},
            "output": add("x", prev),
        }
        return {"ff": linear("data"), "output": loop(unit)}

    return net("prev:c"), net("prev:x")


def _pair_shape_deps() -> tuple[Net, Net]:
    def net(start: int) -> Net:
        return {
            "sliced": {"class": "slice", "from": "data", "axis": time_dim, "slice_start": start, "out_dim": sliced_dim},
            "output": {"class": "constant", "value": 1.0, "shape": [batch_dim, sliced_dim], "shape_deps": ["sliced"]},
        }

    return net(1), net(2)


def _pair_random_state() -> tuple[Net, Net]:
    def net(name: str) -> Net:
        noise = {"class": "random", "shape": [hidden_dim], "distribution": "uniform", "minval": 0.0, "maxval": 1.0}
        return {"ff": linear("data"), name: noise, "output": add("ff", name)}

    return net("noise"), net("other")


def _pair_cell_unit_scope() -> tuple[Net, Net]:
    lstm = {"class": "rec", "unit": "standardlstm", "from": "data", "out_dim": hidden_dim}
    return {"lstm": lstm, "output": {"class": "copy", "from": "lstm"}}, {
        "x": {**lstm, "name_scope": "lstm"},
        "output": {"class": "copy", "from": "x"},
    }


def _pair_loss_scale_none() -> tuple[Net, Net]:
    loss = {"class": "softmax", "from": "data", "out_dim": hidden_dim, "loss": "ce", "target": "classes"}
    return {"sm": loss, "output": {"class": "copy", "from": "sm"}}, {
        "sm": {**loss, "loss_scale": None},
        "output": {"class": "copy", "from": "sm"},
    }


def _pair_loop_data() -> tuple[Net, Net]:
    def net(source: str) -> Net:
        return {"ff": act("data", "tanh"), "output": loop({"output": linear(source)})}

    return net("data:source"), net("data")


def _pair_shape_deps_data_read_nowhere_else() -> tuple[Net, Net]:
    def net(**deps: Any) -> Net:
        const = {"class": "constant", "value": 2.0, "with_batch_dim": True, **deps}
        return {"c": const, "output": add("data", "c")}

    return net(shape_deps=["data:classes"]), net()  # the first uses data "classes": the engine feeds it


def _pair_constant_falsy_dtype() -> tuple[Net, Net]:
    def net(dtype: Any) -> Net:
        const = {"class": "constant", "value": 2.0, "dtype": dtype}
        return {"c": const, "output": {"class": "combine", "kind": "mul", "from": ["data", "c"]}}

    return net(None), net("")  # RETURNN infers a dtype for None only: "" is no dtype TF knows


def _pair_code_computes_a_name() -> tuple[Net, Net]:
    """As _pair_code_names, with a name the code computes: no search of its words finds "p1"."""
    code = "source(0) + source(1) + self.network.get_layer('p' + '1').output.placeholder"
    a, b = swapped("p1", "q1")
    return (
        {**a, "output": {"class": "eval", "from": ["p1", "q1"], "eval": code}},
        {**b, "output": {"class": "eval", "from": ["q1", "p1"], "eval": code}},
    )


def _pair_code_makes_a_variable() -> tuple[Net, Net]:
    """Eval code that makes a TF variable: it is named after the eval layer (the checkpoint's names differ)."""
    code = "source(0) + tf.compat.v1.get_variable('w', shape=(), initializer=tf.compat.v1.zeros_initializer())"

    def net(name: str) -> Net:
        return {name: {"class": "eval", "from": "data", "eval": code}, "output": {"class": "copy", "from": name}}

    return net("e1"), net("e2")


def _pair_activation_code_computes_a_name() -> tuple[Net, Net]:
    """An activation with a call in it is code as well (get_activation_function evals ``lambda x: <code>``), and may
    make a variable named after its layer."""
    code = "x + tf.compat.v1.get_variable('w', shape=(), initializer=tf.compat.v1.ones_initializer())"

    def net(name: str) -> Net:
        return {name: act("data", code), "output": {"class": "copy", "from": name}}

    return net("a1"), net("a2")


def _pair_local_name_describes_a_dim() -> tuple[Net, Net]:
    """A range_from_length describes its new dim by its local name (``"<name>_input_len"``), and RETURNN takes two
    generated dims of one description for one dim: one called ``x`` in a namespace subnetwork lines up with the root
    ``x``'s, called ``y`` it is an axis of its own, which the combine adds as an outer sum. Nothing in either net has a
    parameter, code, or the name in a string."""

    def net(inner: str) -> Net:
        block = {
            "l2": add("base:len", "base:len"),  # a length of its own: the root l2's is tagged with x's dim already
            inner: {"class": "range_from_length", "from": "l2"},
            "output": {"class": "copy", "from": inner},
        }
        return {
            "len": {"class": "length", "from": "data", "axis": time_dim},
            "l2": add("len", "len"),
            "x": {"class": "range_from_length", "from": "l2"},
            "block": {"class": "subnetwork", "from": "data", "subnetwork": block},
            "output": add("x", "block", "len", allow_broadcast_all_sources=True),
        }

    return net("x"), net("y")


def _pair_masked_computation_name_scope() -> tuple[Net, Net]:
    """A masked_computation's name_scope, even its own name, is passed on to its unit (MaskedComputationLayer), where
    it moves a cell unit's variables out of ``rec/``: other checkpoint names, other initial values."""
    masked_dim = Dim(None, name="masked", kind=Dim.Types.Spatial)

    def net(**options: Any) -> Net:
        unit = {"class": "rec", "from": "data", "out_dim": hidden_dim, "unit": "lstm"}
        masked = {"class": "masked_computation", "from": "data", "mask": "mask", "unit": unit, **options}
        return {
            "red": {"class": "reduce", "mode": "sum", "axis": in_dim, "from": "data"},
            "zero": {"class": "constant", "value": 0.0},
            "mask": {"class": "compare", "from": ["red", "zero"], "kind": "greater"},
            "output": {**masked, "in_spatial_dim": time_dim, "out_spatial_dim": masked_dim},
        }

    return net(), net(name_scope="output")


#: What each pair shows, and the pair: RETURNN builds other models of them.
PAIRS = {
    "masked-computation-name-scope": _pair_masked_computation_name_scope,
    "local-name-describes-a-dim": _pair_local_name_describes_a_dim,
    "eval-code-computes-a-name": _pair_code_computes_a_name,
    "eval-code-makes-a-variable": _pair_code_makes_a_variable,
    "activation-code-makes-a-variable": _pair_activation_code_computes_a_name,
    "shape-deps-data-read-nowhere-else": _pair_shape_deps_data_read_nowhere_else,
    "loss-target-layer": _pair_loss_target,
    "names-in-eval-code": _pair_code_names,
    "namespace-names-in-eval-code": _pair_code_names_a_namespace,
    "odd-names-in-eval-code": _pair_code_names_odd,
    "names-in-max-seq-len": _pair_max_seq_len,
    "concat-sources-data-key": _pair_concat_sources,
    "layer-named-data": _pair_layer_named_data,
    "from-none": _pair_from_none,
    "initial-state-keyword": _pair_initial_state_keyword,
    "subnetwork-from-prev": _pair_subnetwork_from_prev,
    "prev-of-copy-alias": _pair_prev_of_alias,
    "shape-deps": _pair_shape_deps,
    "random-state-variable": _pair_random_state,
    "cell-unit-rec-scope": _pair_cell_unit_scope,
    "loss-scale-none-with-a-loss": _pair_loss_scale_none,
    "data-in-a-loop-is-extern-data": _pair_loop_data,
}


def serializer(net: Net, scheme: str = "dict") -> ReturnnCommonSerializer:
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme=scheme)


def test_a_falsy_dtype_of_a_constant_is_no_dtype_to_the_graph_hash():
    """RETURNN infers a constant's dtype from its value where the dtype is None, not where it is ``""`` (TF knows no
    such dtype: the net does not build); rule "value-spellings" infers it for None only."""
    builds, fails = _pair_constant_falsy_dtype()
    assert same_model(serializer(builds).get(), serializer(builds).get()) == []
    with pytest.raises(AttributeError, match="'str' object has no attribute 'is_integer'"):  # in tf.constant
        same_model(serializer(fails).get(), serializer(fails).get())
    assert serializer(builds, "graph")._sis_hash() != serializer(fails, "graph")._sis_hash()


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_returnn_tells_the_pair_apart_and_so_does_the_graph_hash(name: str):
    a, b = PAIRS[name]()
    assert same_model(serializer(a).get(), serializer(b).get()) != []
    assert serializer(a, "graph")._sis_hash() != serializer(b, "graph")._sis_hash()


def _trainable(net: Net) -> list[str]:
    from i6_rc_jobs._verify.returnn_check import network_in_new_graph
    from i6_rc_jobs._verify.semantics import load_config

    config = load_config(serializer(net).get())
    with network_in_new_graph(config, config.typed_value("network"), train_flag=True) as network:
        return sorted(variable.name for variable in network.get_trainable_params())


def test_a_subnetwork_with_a_name_scope_is_no_namespace():
    """RETURNN's SubnetworkLayer owns the variables under its scope: with name_scope "" it makes a cell's variables
    trainable that without it are not (the same variables, the same output; another training)."""
    variable = {"class": "variable", "shape": [in_dim, hidden_dim], "init": "glorot_uniform"}
    lstm = {"class": "rec", "unit": "standardlstm", "from": "dot", "out_dim": hidden_dim, "name_scope": ""}
    dot = {"class": "dot", "from": ["data", "w"], "reduce": in_dim}
    scoped = {
        "class": "subnetwork",
        "name_scope": "",
        "subnetwork": {"w": variable, "output": {"class": "copy", "from": "w"}},
    }
    a = {"w": variable, "dot": dot, "lstm": lstm, "output": {"class": "copy", "from": "lstm"}}
    b = {**a, "w": scoped}
    assert _trainable(a) != _trainable(b)
    assert serializer(a, "graph")._sis_hash() != serializer(b, "graph")._sis_hash()


def test_a_huge_int_in_a_float_constant_is_refused_with_its_path():
    """TF cannot make it (``ValueError: Can't convert Python sequence with out-of-range integer``)."""
    net = {"c": {"class": "constant", "value": 10**400, "dtype": "float32"}, "output": {"class": "copy", "from": "c"}}
    with pytest.raises(
        SerializationError, match=r"^network\['c'\]\['value'\]: an int of 401 digits in dtype 'float32'"
    ):
        serializer(net, "graph")._sis_hash()


# The tables against the pinned RETURNN's code.


def _layer_classes() -> dict[str, type]:
    from returnn.tf.layers.basic import _LayerClassDict, get_layer_class

    get_layer_class("copy")  # registers every layer class
    return dict(_LayerClassDict)


def _transform_sources(cls: type) -> list[str]:
    """The source of every transform_config_dict the class runs (its own and its bases')."""
    return [
        inspect.getsource(base.transform_config_dict) for base in cls.__mro__ if "transform_config_dict" in vars(base)
    ]


_RESOLVERS = re.compile(
    r"get_layer\(|map_structure\(get_layer|transform_source_name\(|transform_initial_state\(|ReuseParams\.from_config_dict\("
)


def _resolves(cls: type, option: str) -> bool:
    """Whether a transform_config_dict of ``cls`` reads ``option`` within 4 lines of a call resolving layers."""
    for source in _transform_sources(cls):
        lines = source.splitlines()
        for i, line in enumerate(lines):
            if re.search(rf"""["']{option}["']""", line) and any(
                _RESOLVERS.search(near) for near in lines[max(0, i - 4) : i + 5] if "def " not in near
            ):
                return True
    return False


def test_every_reference_option_is_resolved_as_layers_by_returnn():
    classes = _layer_classes()
    from returnn.tf.layers.base import LayerBase

    for option in graph_rules.COMMON_REFERENCE_OPTIONS:
        assert _resolves(LayerBase, option), option
    for name, options in graph_rules.CLASS_REFERENCE_OPTIONS.items():
        for option in options:
            assert _resolves(classes[name], option), (name, option)


#: Layer classes whose code names a dim after the layer, but not an auto-generated one (RETURNN compares it by
#: identity, not by its description): boolean_mask's ``Dim(Data(name=f"{name}:mask"))``.
_NAMED_NOT_GENERATED = frozenset({"boolean_mask"})
_NAMES_A_DIM = re.compile(
    r"""(Dim\(|description=)[^\n]*(%\s*\(?\s*(self\.)?name\b|\{(self\.)?name\}|["']\s*\+\s*(self\.)?name\b"""
    r"""|(self\.)?name\s*\+\s*["'])"""
)


def test_every_class_whose_code_describes_a_dim_by_the_layer_s_name_keeps_it():
    """The table of i6_rc_jobs/_hashing/dim_naming.py holds every layer class of the pinned RETURNN whose code (its
    own or a base's, LayerBase's generic paths aside) makes a dim described by the layer's name: a RETURNN that adds
    one fails here."""
    from returnn.tf.layers.base import LayerBase

    from i6_rc_jobs._hashing.dim_naming import CLASSES

    sources: dict[tuple[str, str], str] = {}  # (module, class name) -> the class's code, each module parsed once
    classes = _layer_classes()
    for module in {base.__module__ for cls in classes.values() for base in cls.__mro__ if issubclass(base, LayerBase)}:
        text = inspect.getsource(sys.modules[module])
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef):
                sources[module, node.name] = ast.get_source_segment(text, node) or ""
    found = set()
    for name, cls in classes.items():
        bases = [base for base in cls.__mro__ if base is not LayerBase and issubclass(base, LayerBase)]
        if any(_NAMES_A_DIM.search(sources[base.__module__, base.__name__]) for base in bases):
            found.add(name)
    assert "window" in found and "range_from_length" in found  # the search finds what it looks for
    assert found - _NAMED_NOT_GENERATED - set(CLASSES) == set()


def test_keywords_are_returnns():
    from returnn.tf.layers.base import LayerBase
    from returnn.tf.layers.rec import RnnCellLayer

    sources = {
        "from": inspect.getsource(LayerBase.transform_config_dict),
        "initial_output": inspect.getsource(LayerBase.transform_config_dict),
        "initial_state": inspect.getsource(RnnCellLayer.transform_initial_state),
    }
    for option, keywords in graph_rules.KEYWORDS.items():
        for keyword in keywords:
            assert re.search(rf"""["']{re.escape(keyword)}["']""", sources[option]), (option, keyword)


_VARIABLES = re.compile(r"add_param|get_variable|tf\.Variable|var_creation_scope|_get_cell|add_weight|Generator")


@pytest.mark.slow
def test_parameter_free_classes_create_no_variables_in_returnn():
    """A class is parameter-free if neither it nor a base below LayerBase creates variables, except under an option
    of VARIABLE_OPTIONS (CombineLayer's ``if with_bias:``); LayerBase's own variables come from those options."""
    from returnn.tf.layers.base import LayerBase

    for name in graph_rules.PARAMETER_FREE_CLASSES:
        for base in _layer_classes()[name].__mro__:
            if base in LayerBase.__mro__:
                continue
            source = _without_guarded_blocks(inspect.getsource(base))
            assert not _VARIABLES.search(source), (name, base.__name__, _VARIABLES.search(source).group())
    layer_base = inspect.getsource(LayerBase.__init__) + inspect.getsource(LayerBase.post_init)
    assert "batch_norm" in layer_base and "self.batch_norm(" in inspect.getsource(LayerBase.post_init)
    assert "get_variable" in inspect.getsource(LayerBase.get_rec_initial_output)


def _without_guarded_blocks(source: str) -> str:
    """The source without the blocks under ``if <option>:`` for the options of VARIABLE_OPTIONS."""
    lines, out, guard = source.splitlines(), [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if guard is not None and (not line.strip() or indent > guard):
            continue
        guard = None
        stripped = line.strip()
        if any(stripped == f"if {option}:" for option in graph_rules.VARIABLE_OPTIONS):
            guard = indent
            continue
        out.append(line)
    return "\n".join(out)


def test_rec_scope_classes_are_those_returnn_puts_under_rec():
    prefixed = {
        name
        for name, cls in _layer_classes().items()
        if "get_absolute_name_scope_prefix" in vars(cls)
        and '"rec/"' in inspect.getsource(cls.get_absolute_name_scope_prefix)
    }
    assert prefixed == graph_rules.REC_SCOPE_CLASSES


def test_inert_options_are_only_resolved_into_the_scope():
    """name_scope is read only for the scope; out_shape is not inert: besides its check, it lets sources broadcast."""
    from returnn.tf.layers.base import LayerBase

    assert graph_rules.INERT_OPTIONS == {"name_scope"}
    assert "out_shape is not None" in inspect.getsource(LayerBase._base_get_out_data_from_opts)
    for name in ("random", "constant"):
        assert _resolves(_layer_classes()[name], "shape_deps")


#: Every line of RETURNN's layers and network code that reads "shape_deps" (but docstrings): each treats [] and the
#: default () alike (rule "empty-shape-deps").
_SHAPE_DEPS_READS = {
    "shape_deps=(),",
    "self.shape_deps = shape_deps",
    "deps += self.shape_deps",
    "return super(ConstantLayer, self).get_dep_layers() + list(self.shape_deps)",
    'if "shape_deps" in d:',
    'extra_deps = d["shape_deps"]',
    'd["shape_deps"] = [get_layer(src_name) for src_name in extra_deps]',
    'cls, name, shape, dtype="float32", sparse_dim=None, feature_dim=None, shape_deps=(), **kwargs',
    "out.beam = SearchBeam.get_combined_beam(out.beam, *[dep.output.beam for dep in shape_deps if dep])",
}


def test_empty_shape_deps_are_returnns_default():
    """Rule "empty-shape-deps": the classes that take shape_deps are SHAPE_DEPS_CLASSES, with the default () in
    __init__ and get_out_data_from_opts, and no code reads it otherwise than item by item."""
    import pathlib

    import returnn.tf

    classes = _layer_classes()
    taking = {name for name, cls in classes.items() if "shape_deps" in inspect.signature(cls.__init__).parameters}
    assert taking == graph_rules.SHAPE_DEPS_CLASSES
    for name in taking:
        for method in (classes[name].__init__, classes[name].get_out_data_from_opts):
            assert inspect.signature(method).parameters["shape_deps"].default == (), (name, method)
    root = pathlib.Path(returnn.tf.__file__).parent
    reads = {
        line.strip()
        for path in [root / "network.py", *sorted((root / "layers").glob("*.py"))]
        for line in path.read_text().splitlines()
        if "shape_deps" in line and ":param" not in line
    }
    assert reads == _SHAPE_DEPS_READS


#: What OUTPUT_READERS read of a source layer (rule "subnetwork-output"): the attribute after each expression that
#: holds one in DotLayer's and RecLayer's code ("sources[0].output", "src1.output", "dep.output").
_SOURCE_ATTRIBUTE = re.compile(r"\b(?:sources\[\d\]|src\d|dep)\.(\w+)")


def test_output_readers_read_nothing_of_a_source_but_its_output():
    """Rule "subnetwork-output": DotLayer and RecLayer read only ``.output`` of their source layers (or concatenate
    the outputs, get_concat_sources_data_template); RecLayer hands its source layers on only with initial_state,
    which the rule excludes. A RETURNN that reads more of them fails here."""
    from returnn.tf.layers.basic import DotLayer
    from returnn.tf.layers.rec import RecLayer

    classes = _layer_classes()
    assert {name: classes[name] for name in graph_rules.OUTPUT_READERS} == {"dot": DotLayer, "rec": RecLayer}
    for cls in (DotLayer, RecLayer):
        lines = inspect.getsource(cls).splitlines()
        assert {found for line in lines for found in _SOURCE_ATTRIBUTE.findall(line)} == {"output"}, cls
        handed_on = [i for i, line in enumerate(lines) if re.search(r"\w=(?:self\.)?sources\s*(?:,|\)|$)", line)]
        for i in handed_on:
            assert "initial_state" in "\n".join(lines[max(0, i - 12) : i]), (cls, lines[i])
    assert len([line for line in inspect.getsource(RecLayer).splitlines() if "sources=self.sources" in line]) == 1


def test_a_static_random_layer_creates_no_variable():
    """Rule "static-random": with static=True, RandomLayer draws from a constant state (its branch creates no
    variable, and the generator it makes overrides _create_variable with a plain tensor), and RETURNN builds such a
    layer without any variable; an int in the shape names a dim after the layer."""
    from returnn.tf.layers.basic import RandomLayer

    from i6_rc_jobs._verify.semantics import fingerprint

    source = inspect.getsource(RandomLayer.__init__)
    static = source[source.index("else:  # static is True") : source.index("else:  # state is not None")]
    assert "_RndGeneratorStaticSeed(" in static
    assert not re.search(r"add_param|get_variable|tf\.Variable|var_creation_scope|from_seed|from_state", static)
    custom = source[source.index("class _RndGeneratorCustomState") : source.index("class _RndGeneratorStaticSeed")]
    assert "def _create_variable" in custom and not re.search(r"add_param|get_variable|tf\.Variable", custom)
    assert '"%s:dim%i" % (name, i)' in inspect.getsource(RandomLayer.get_out_data_from_opts)
    noise = {"class": "random", "shape": [in_dim], "distribution": "normal", "static": True}
    net = {"noise": noise, "output": add("data", "noise")}
    assert fingerprint(serializer(net).get()).params == {}


@pytest.mark.parametrize("name_scope", ["sub", None])
def test_a_subnetwork_sharing_its_scope_is_no_namespace(name_scope: Optional[str]):
    """Rule "subnetwork-scope" only for a scope of its own, with a name_scope or without (a layer named "sub"): a
    layer outside under the subnetwork's scope would be owned by SubnetworkLayer too (its trainability), so that
    subnetwork stays a layer. (The variables are random layers of explicit seeds: a layer that draws from a random
    generator makes every subnetwork a layer, see rule "subnetwork-namespace".)"""
    variable = {"class": "random", "shape": [in_dim], "distribution": "uniform", "static": False, "seed": 3}
    inner = {"v": variable, "output": {"class": "copy", "from": "v"}}
    own = {"class": "subnetwork", "from": [], "subnetwork": inner}
    if name_scope is not None:
        own["name_scope"] = name_scope
    name = "s" if name_scope is not None else "sub"
    flat = {"v": {**variable, "name_scope": "/sub/v"}, "output": add("data", "w", "v")}
    for outside, flattened in (("/other/w", True), ("/sub/w", False)):
        w = {**variable, "name_scope": outside, "trainable": False}
        a = {"w": w, name: own, "output": add("data", "w", name)}
        same = serializer(a, "graph")._sis_hash() == serializer({**flat, "w": w}, "graph")._sis_hash()
        assert same is flattened, outside


def test_a_scalar_operation_of_a_float64_source_is_no_combine_with_a_float32_constant():
    """Rule "scalar-operands" holds for a float32 source only: an eval multiplies a float64 tensor by 0.5 in float64,
    while a combine with a float32 constant fails. Of a float32 source, the two spellings still hash alike."""

    def net(dtype: str, spelling: str) -> Net:
        cast = {"class": "cast", "from": "data", "dtype": dtype}
        if spelling == "eval":
            return {"c": cast, "output": {"class": "eval", "from": "c", "eval": "source(0) * 0.5"}}
        half = {"class": "constant", "value": 0.5}
        return {"c": cast, "half": half, "output": {"class": "combine", "kind": "mul", "from": ["c", "half"]}}

    builds, fails = net("float64", "eval"), net("float64", "combine")
    assert same_model(serializer(builds).get(), serializer(builds).get()) == []
    with pytest.raises(AssertionError):  # copy_compatible_to: "self.dtype == data.dtype"
        same_model(serializer(fails).get(), serializer(fails).get())
    assert serializer(builds, "graph")._sis_hash() != serializer(fails, "graph")._sis_hash()
    same = [serializer(net("float32", spelling), "graph")._sis_hash() for spelling in ("eval", "combine")]
    assert same[0] == same[1]


def _refused_reuse_of_a_copy() -> tuple[Net, Net]:
    """reuse_params of a copy alias: RETURNN shares the variables of the layer named, and a copy has none."""
    shared = {"class": "linear", "from": "data", "out_dim": hidden_dim}
    a = {"ff": shared, "output": {**shared, "reuse_params": "ff"}}
    return a, {"ff": shared, "alias": {"class": "copy", "from": "ff"}, "output": {**shared, "reuse_params": "alias"}}


def _refused_copy_of_none() -> tuple[Net, Net]:
    """A copy of "none" (a layer of that name renamed): "none" in "from" is no source to RETURNN."""
    return (
        {"ff": act("data"), "output": {"class": "copy", "from": "ff"}},
        {"none": act("data"), "output": {"class": "copy", "from": "none"}},
    )


def _refused_dim_tags_key() -> tuple[Net, Net]:
    """``set_dim_tags`` keyed by ``"stag:x1:window"``, the dim window ``x1`` describes by its name: with the two
    windows' names swapped, the key picks the window of 2 for a dim of 3, which RETURNN refuses."""
    new = Dim(3, name="new", kind=Dim.Types.Spatial)

    def window(source: str, size: int) -> dict:
        return {"class": "window", "from": source, "window_size": size, "window_left": size - 1, "window_right": 0}

    def net(inner: str, outer: str) -> Net:
        return {
            inner: window("data", 3),
            outer: window(inner, 2),
            "tagged": {"class": "reinterpret_data", "from": outer, "set_dim_tags": {"stag:x1:window": new}},
            "first": {"class": "gather", "from": "tagged", "axis": new, "position": 0},
            "output": {"class": "reduce", "mode": "sum", "axis": "dim:2", "from": "first"},
        }

    return net("x1", "x2"), net("x2", "x1")


@pytest.mark.parametrize("make", [_refused_reuse_of_a_copy, _refused_copy_of_none, _refused_dim_tags_key])
def test_a_net_returnn_refuses_hashes_apart_from_the_one_it_builds(make):
    """Rules that take a spelling for another (a copy for its source) hold only where RETURNN builds both."""
    builds, refused = make()
    assert same_model(serializer(builds).get(), serializer(builds).get()) == []
    with pytest.raises(AssertionError):
        same_model(serializer(refused).get(), serializer(refused).get())
    assert serializer(builds, "graph")._sis_hash() != serializer(refused, "graph")._sis_hash()


def test_a_name_scope_tf_refuses_is_refused_with_its_path():
    """TF refuses a root name scope that starts with "_" (which a layer's name becomes ".95." in): the graph hash
    cannot take it for the scope of another spelling."""
    net = {"output": {"class": "linear", "from": "data", "out_dim": hidden_dim, "name_scope": "_block"}}
    with pytest.raises(ValueError, match="not a valid root scope name"):
        same_model(serializer(net).get(), serializer(net).get())
    with pytest.raises(SerializationError, match=r"network\['output'\]\['name_scope'\].*TF refuses"):
        serializer(net, "graph")._sis_hash()

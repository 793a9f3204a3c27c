"""The computation graph of a net dict, which ``hash_scheme="graph"`` hashes instead of the dict itself.

Every normalization here is one of the named rules of :mod:`.graph_rules` (the comments name them). The graph of a
network is its roots (the layers RETURNN reads by name, and the layers that may own parameters, by their TF scope)
and its layers as a list, numbered in order of first use: breadth first from the roots, through each layer's options
in sorted order. A reference becomes a token naming that number, so a layer's name is nowhere unless RETURNN reads
it. Dims stay DimRefs: the canonical form numbers them as for the dict scheme."""

from __future__ import annotations

from typing import Any, Optional, Union

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase
from sisyphus.job_path import AbstractPath

from i6_rc_jobs._serialization.refs import DimRef, MarkedRef
from i6_rc_jobs._serialization.values import wrapper_code
from i6_rc_jobs._hashing.dim_naming import NAMES_OTHERS, names_dims
from i6_rc_jobs._hashing.graph_code import code_read_completely, is_code
from i6_rc_jobs._hashing.graph_names import NameResolver
from i6_rc_jobs._hashing.graph_rules import (
    CLASS_REFERENCE_OPTIONS,
    COMMON_REFERENCE_OPTIONS,
    DEFAULT_REFERENCES,
    INERT_OPTIONS,
    KEYWORDS,
    LITERAL_OPTIONS,
    MARKING_OPTIONS,
    NAME_SCOPE_PASSING_CLASSES,
    SHAPE_DEPS_CLASSES,
    SOURCELESS_CLASSES,
    UNSET_VALUES,
)
from i6_rc_jobs._hashing.graph_scopes import (
    MAX_DEPTH,
    Layer,
    Net,
    is_layer,
    is_net,
    is_unset,
    draws_random,
    keep_shared_scopes,
    loop_layers,
    names_variables,
    no_shape_deps,
    parse,
    passes_output_on,
    reads_outputs_only,
    same_out_shape,
    single_source,
    sorted_items,
    under_scope,
)
from i6_rc_jobs._hashing.graph_spellings import (
    COMBINE_OPTIONS,
    DTYPE_CLASSES,
    FLOAT32_KEEPING,
    FLOAT_MODES,
    EVAL_OPTIONS,
    RESPELLED,
    SCALAR_CLASSES,
    SCALAR_KINDS,
    Scalar,
    constant_value,
    respell,
    scalar_eval,
)
from i6_rc_jobs._hashing.layer_options import READINGS
from i6_rc_jobs._hashing.tokens import Tagged, Token

#: The options that mark a layer as read by its name (see Graph._roots).
_MARKING_KEYS = frozenset(MARKING_OPTIONS)
#: Values that every option takes as they are (Graph._value returns them unchanged), whatever its key.
_LEAVES = frozenset({bool, int, float, type(None), DimRef})
#: The dims of an out_shape, which _value takes as they are.
_DIMS = frozenset({DimRef, MarkedRef})
#: The default target of a loss without one, if extern_data names no other (returnn/tf/network.py ExternData).
_DEFAULT_TARGET = "classes"


_FROM_KEYWORDS = KEYWORDS["from"]

#: How Graph._node takes an option, by key (one lookup for the checks of most keys): skipped (rule "inert-options"),
#: as it is (Graph._option returns a literal option's value unchanged), or by the checks in _node; any other key by
#: Graph._option.
_SKIP, _LITERAL, _CHECKED = "skip", "literal", "checked"
_HANDLING = (
    {key: _LITERAL for key in LITERAL_OPTIONS if key != "activation"}  # activation: code if it holds "("
    | {key: _CHECKED for key in (*UNSET_VALUES, "shape_deps", "from", "unit", "subnetwork", "out_shape")}
    | {key: _SKIP for key in INERT_OPTIONS}
)


def _same_bases(dims: set) -> Optional[set]:
    """Rule "out-shape": the dims of an out_shape as the dims their same_as copies are copies of (RETURNN's Dim
    equality, by which verify_out_shape matches the output's dims, takes a copy for its base); None if it holds
    anything but DimRefs."""
    bases = set()
    for dim in dims:
        if type(dim) is not DimRef:
            return None
        while dim.copy_of is not None:
            dim = dim.copy_of
        bases.add(dim)
    return bases


class Graph(NameResolver):
    """The graph of one net dict: :attr:`form` (what is hashed, with DimRefs still in it) and :attr:`names` (the
    path in the dict of each numbered layer, for hash-diff)."""

    def __init__(
        self,
        network: dict,
        where: str,
        extern_keys: frozenset[str] = frozenset(),
        float32_keys: frozenset[str] = frozenset(),
    ):
        """``extern_keys``: the keys of the extern_data the network is run with (rule "extern-shape-deps");
        ``float32_keys``: those of float32 data (rule "scalar-operands")."""
        self._float32_keys = float32_keys
        self._float32: dict[str, bool] = {}  # rule "scalar-operands": layer path -> whether proven float32
        self._where = where
        self._nested_nets = 0  # net dicts nested in options (see _nested)
        self._extern_deps: list[dict[str, Any]] = []  # nodes whose "shape_deps" may name extern data
        self._root = Net("root", None, None, where)
        # every layer in parse order (a layer before its body), and in its place each flattened subnetwork (rule
        # "subnetwork-scope" decides which of them stay flattened, see keep_shared_scopes)
        parsed: list[Union[Layer, Net]] = []
        subs: list[tuple[Net, Layer, int, int]] = []  # (subnetwork, its flattened layer, its layers' range)
        parse(network, self._root, "", 0, parsed, subs)
        self._layers = keep_shared_scopes(parsed, subs)
        self._namespaces = [flat.name for sub, flat, _, _ in subs if sub.kind == "sub"]  # for _ties
        self._seeded = any(draws_random(layer) for layer in self._layers)  # rules "subnetwork-namespace", "scalar-..."
        self._order: list[Layer] = []
        self.names: list[str] = []
        # for _ties, made when a string first needs them (many nets have none): every name, those of other
        # characters than a plain name's, and once a string holds a name: a plain name -> the layers of that name,
        # and the layers of names with other characters; the ties of each string met
        self._all_names: Optional[tuple[frozenset[str], list[str]]] = None
        self._names: Optional[dict[str, list[tuple[str, Layer]]]] = None
        self._odd_names: list[tuple[str, Layer]] = []
        self._tied: dict[str, list[tuple[str, Token]]] = {}
        # the extern_data keys a loss without target may read as its default target, as layers of that name
        self._target_keys = sorted(extern_keys | {_DEFAULT_TARGET})
        self._unread = False  # a layer of a class not in READINGS, or a value that may read any layer, was met
        self._passing: dict[str, bool] = {}  # rule "subnetwork-output": path -> whether it passes its output on
        self._owners: Optional[list[tuple[str, str]]] = None  # (scope, path) of each layer that may own variables
        self._scopes: list[str] = []  # their scopes, in that order
        roots = self._roots()
        other = self._other(self._root, "")  # before the layers are made: names in it may number layers
        layers: list[dict] = []
        while True:  # the layers reached, and what they reach, until none is left
            if self._unread and "every layer by name" not in roots:  # rule "layer-names": denied by default
                roots["every layer by name"] = {layer.path: self._token(layer) for layer in self._layers}
            if len(layers) == len(self._order):
                break
            layers.append(self._node(self._order[len(layers)]))
        for layer, node in zip(self._order, layers):  # rule "layer-names": which names sort before which in a loop
            if layer.unit is not None and layer.unit.kind == "loop":
                node["@name order"] = [item.token for _, item in loop_layers(layer.unit) if item.token is not None]
        self._drop_extern_deps(extern_keys, layers)
        self.form: dict[str, Any] = {"roots": roots, "layers": layers}
        if other:
            self.form["other entries"] = other

    def _roots(self) -> dict[str, Any]:
        """Rule "layer-names": what RETURNN reads by name (the default output, losses by score key, marked layers),
        then every layer that may own parameters, by its TF scope (rule "parameter-scope")."""
        named: list[tuple[str, Layer]] = []
        scoped: list[tuple[str, str, Layer]] = []
        for layer in self._layers:
            if ":" in layer.path or not _MARKING_KEYS.isdisjoint(layer.desc):
                named.append((f"marked {layer.path}", layer))
            if layer.owns_parameters:
                scoped.append((layer.prefix, repr(layer.desc.get("param_name")), layer))
        roots: dict[str, Any] = {}
        output = self._resolve("output", self._root)
        if output is not None:
            roots["output"] = output
        for key, layer in sorted(named, key=lambda item: item[0]):
            roots[key] = self._token(layer)
        scopes = sorted(scoped, key=lambda item: (item[0], item[1], item[2].path))
        roots["parameters"] = [self._token(layer) for _, _, layer in scopes]
        return roots

    # Nodes.

    def _node(self, layer: Layer) -> dict[str, Any]:
        desc = layer.desc
        if desc["class"] in SCALAR_CLASSES:
            desc = self._scalar_operation(layer) or desc
        node: dict[str, Any] = {}
        readings = READINGS.get(desc["class"])
        if readings is None:  # rule "layer-names": a class this graph cannot read may read any layer by name
            self._unread = True
        unknown = False
        for key in sorted(desc):
            if readings is not None and key not in readings:
                unknown = True
            handling = _HANDLING.get(key)
            if handling is None:
                node[key] = self._option(layer, key, desc[key])
                continue
            if handling is _SKIP:  # rule "inert-options"
                if key == "name_scope" and desc["class"] in NAME_SCOPE_PASSING_CLASSES:
                    node[key] = desc[key]
                continue
            if handling is _LITERAL:
                value = desc[key]
                node[key] = value if type(value) is str or type(value) in _LEAVES else self._option(layer, key, value)
                continue
            if layer.unit is not None and key in ("unit", "subnetwork"):  # the body: its layers are nodes, see below
                continue
            if key in UNSET_VALUES and is_unset(desc[key], UNSET_VALUES[key][not desc.get("loss")]):  # "unset-options"
                continue
            if key == "shape_deps" and no_shape_deps(desc):  # rule "empty-shape-deps"
                continue
            value = desc[key]
            if key == "out_shape" and layer.unit is not None and layer.unit.kind == "subnet":
                if same_out_shape(desc, desc["subnetwork"].get("output")):  # rule "out-shape": the output's check
                    continue
            if key == "out_shape" and type(value) is set:
                bases = _same_bases(value)  # rule "out-shape"
                if bases is not None:
                    node[key] = bases
                    continue
            if key == "from":  # rules "from-list" and "subnetwork-output"; a reference option of every class (_option)
                value = [value] if type(value) is str else list(value) if type(value) is tuple else value
                if type(value) is list and reads_outputs_only(layer):
                    value = [self._output_read(item, layer.net) if type(item) is str else item for item in value]
                node[key] = self._references(value, layer.net, _FROM_KEYWORDS, layer.prefix)
                continue
            if key == "shape_deps" and desc["class"] in SHAPE_DEPS_CLASSES and type(value) in (str, list, tuple):
                value = [value] if type(value) is str else list(value)  # rule "extern-shape-deps"
                if layer.net.loop is None:
                    self._extern_deps.append(node)
            node[key] = self._option(layer, key, value)
        self._defaults(layer, desc, node)
        if node["class"] in RESPELLED:
            respell(node, layer)
        if layer.owns_parameters:
            node["@scope"] = layer.scope
        if names_variables(desc):  # rule "layer-names": a TF variable is named after the layer
            node["@variable name"] = layer.name
        if names_dims(desc):  # rule "layer-names": a dim is described by the layer's name (which lines up axes)
            node["@dim name"] = layer.name
            self._unread |= desc["class"] in NAMES_OTHERS  # or by another layer's
        loop = layer.net.loop
        if loop is not None:
            node["@loop"] = self._token(loop)
        if layer.unit is not None:  # RETURNN reads a loop body's "output" and "end", a subnetwork's "output"
            is_loop = layer.unit.kind == "loop"
            node["@unit" if is_loop else "@subnetwork"] = {
                name: found
                for name in (("output", "end") if is_loop else ("output",))
                if name in layer.unit.layers and (found := self._resolve(name, layer.unit)) is not None
            }
            other = self._other(layer.unit, layer.prefix)
            if other:
                node["@unit other entries" if is_loop else "@subnetwork other entries"] = other
        if layer.net.kind == "nested" or unknown:  # rule "layer-names": an option this graph cannot read keeps it
            node["@name"] = layer.path
        return node

    def _output_read(self, name: str, net: Net) -> Union[str, Token]:
        """Rule "subnetwork-output": the token of the layer that a subnetwork read by ``name`` outputs, for each
        subnetwork on the way that passes its output layer on and nothing more (see passes_output_on); else
        ``name``."""
        layer, inner = self._plain(name, net), None
        for _ in range(MAX_DEPTH):
            if layer is None or layer.unit is None or not self._passes_output_on(layer):
                break
            output = self._plain("output", layer.unit)
            if output is None or not output.path.startswith(layer.path + "/"):  # none, or a layer outside it
                break
            layer = inner = output
        return name if inner is None else self._token(inner)

    def _passes_output_on(self, layer: Layer) -> bool:
        """Rule "subnetwork-output": see passes_output_on; whether a layer outside it has variables under its scope
        is looked up once per subnetwork."""
        passes = self._passing.get(layer.path)
        if passes is None:
            passes = self._passing[layer.path] = passes_output_on(layer) and not self._shares_scope(layer)
        return passes

    def _shares_scope(self, layer: Layer) -> bool:
        """Whether a layer outside ``layer`` may own variables under its scope."""
        if self._owners is None:
            self._owners = sorted((other.scope, other.path) for other in self._layers if other.owns_parameters)
            self._scopes = [scope for scope, _ in self._owners]
        inside = layer.path + "/"
        return any(
            path != layer.path and not path.startswith(inside)
            for path in (self._owners[i][1] for i in under_scope(self._scopes, layer.prefix))
        )

    def _defaults(self, layer: Layer, desc: dict, node: dict[str, Any]) -> None:
        """Rule "layer-names": the layers that RETURNN reads by a default name (none written), as "@default ..."
        entries, so that they differ from the same names written out (which later behaviour versions require)."""
        cls, net = desc["class"], layer.net
        if "from" not in desc and cls not in SOURCELESS_CLASSES:
            node["@default from"] = self._references(["data"], net, frozenset(), layer.prefix)
        for key, name in DEFAULT_REFERENCES.get(cls, {}).items():
            if key not in desc:
                node[f"@default {key}"] = self._references(name, net, frozenset(), layer.prefix)
        if desc.get("loss") and "target" not in desc:  # the default target, if a layer has its name
            targets = {
                key: self._resolve(key, net) for key in self._target_keys if type(self._lookup(key, net)) is tuple
            }
            if targets:
                node["@default target"] = targets

    def _drop_extern_deps(self, extern_keys: frozenset[str], nodes: list[dict[str, Any]]) -> None:
        """Rule "extern-shape-deps": the extern data in the "shape_deps" of a constant or random layer outside loops
        is dropped, and "shape_deps" if nothing is left. Only data of ``extern_keys`` that no layer registers
        (register_as_extern_data may bring a beam) and that a layer of the graph reads as a source (else the
        dependency alone makes the network use that data: the engine feeds and batches by it), and only where every
        layer is known (no nested net dict)."""
        if not self._extern_deps or self._nested_nets:
            return
        registered = [
            layer.desc["register_as_extern_data"] for layer in self._layers if "register_as_extern_data" in layer.desc
        ]
        read = {
            source[1]
            for node in nodes
            for key in ("from", "@default from")
            for source in node.get(key, ())
            if type(source) is Tagged and source[0] == "@data"
        }
        keys = (extern_keys & read) - {key for key in registered if type(key) is str}
        for node in self._extern_deps:
            deps = [
                dep for dep in node["shape_deps"] if not (type(dep) is Tagged and dep[0] == "@data" and dep[1] in keys)
            ]
            if deps:
                node["shape_deps"] = deps
            else:
                del node["shape_deps"]

    def _scalar_operation(self, layer: Layer) -> Optional[dict[str, Any]]:
        """Rule "scalar-operands": an eval or combine layer that applies a binary op to one layer and a float, as the
        combine of that layer with the float (a Scalar in "from"); None for any other layer of these classes."""
        desc = layer.desc
        if layer.net.loop is not None and self._seeded:  # a loop may build the two spellings apart: another seed order
            return None
        options = desc.keys() - INERT_OPTIONS - {"out_shape"}  # kept as it is: the same check of the same output
        checked = {"out_shape": desc["out_shape"]} if "out_shape" in desc else {}
        if desc["class"] == "eval":
            found, sources = _scalar_eval_of(desc), single_source(desc)
            if found is None or "from" not in desc or not sources or len(sources) != 1:
                return None
            if not self._is_float32(sources[0], layer.net):
                return None
            kind, number, first = found
            pair = [sources[0], Scalar(number)]
            return {"class": "combine", "kind": kind, "from": pair if first else pair[::-1], **checked}
        operands: Any = desc.get("from")
        if type(operands) not in (list, tuple) or len(operands) != 2 or options != COMBINE_OPTIONS:
            return None
        if type(operands[0]) is not str or type(operands[1]) is not str:
            return None
        if type(desc["kind"]) is not str or desc["kind"] not in SCALAR_KINDS:
            return None
        numbers = [self._float_constant(operand, layer.net) for operand in operands]
        if (numbers[0] is None) == (numbers[1] is None):
            return None
        if not self._is_float32(operands[numbers[0] is not None], layer.net):
            return None
        return {
            "class": "combine",
            "kind": desc["kind"],
            "from": [operand if number is None else Scalar(number) for operand, number in zip(operands, numbers)],
            **checked,
        }

    def _is_float32(self, text: str, net: Net, depth: int = 0) -> bool:
        """Rule "scalar-operands": whether what the name ``text`` read in ``net`` finds is proven float32: extern
        data of a float32 key, a float32 constant, cast, variable or random layer, or a layer of a class that keeps
        its sources' dtype (FLOAT32_KEEPING) all of whose sources are (a float operand is float32 only next to a
        float32 tensor: with float64 or float16 data the eval spelling builds and the combine spelling fails)."""
        found = self._lookup(text, net)
        if type(found) is Tagged:
            return found[0] == "@data" and found[1] in self._float32_keys
        if found is None or found[3] or depth > MAX_DEPTH:  # a previous frame: its initial output
            return False
        if found[2] and found[0].desc["class"] != "split":  # a sub-layer: a split's parts have its dtype
            return False
        layer = found[0]
        known = self._float32.get(layer.path)
        if known is None:
            self._float32[layer.path] = False  # a cycle proves nothing
            known = self._float32[layer.path] = self._proves_float32(layer, depth)
        return known

    def _proves_float32(self, layer: Layer, depth: int) -> bool:
        desc = layer.desc
        cls = desc["class"]
        if "out_type" in desc or not code_read_completely(desc, "activation"):
            return False
        if layer.unit is not None:  # a subnetwork's output, or a loop's (its frames stacked)
            return self._is_float32("output", layer.unit, depth + 1)
        if cls in DTYPE_CLASSES:
            spelled = constant_value(desc, layer) if cls == "constant" else (desc.get("dtype", "float32"), None)
            return spelled is not None and spelled[1 if cls == "constant" else 0] == "float32"
        if cls not in FLOAT32_KEEPING or "dtype" in desc or (cls == "reduce" and desc.get("mode") not in FLOAT_MODES):
            return False
        if (cls == "eval" or "eval" in desc) and _scalar_eval_of(desc) is None:  # its float takes its source's dtype
            return False
        sources: Any = desc.get("from", "data")
        sources = [sources] if type(sources) is str else sources
        return (
            type(sources) in (list, tuple)
            and len(sources) > 0
            and all(type(name) is str and self._is_float32(name, layer.net, depth + 1) for name in sources)
        )

    def _float_constant(self, text: str, net: Net) -> Optional[float]:
        """The float of a scalar float32 constant layer that ``text`` finds (without numbering it), else None."""
        layer = self._plain(text, net)
        if layer is None:
            return None
        desc = layer.desc
        if desc["class"] != "constant":
            return None
        others = desc.keys() - INERT_OPTIONS - {"class", "value", "dtype"}
        if "out_shape" in others and type(desc["out_shape"]) in (set, frozenset, list, tuple) and not desc["out_shape"]:
            others.discard("out_shape")  # a scalar's check, which it passes
        if others and not (others == {"shape_deps"} and no_shape_deps(desc)):
            return None
        spelled = constant_value(desc, layer)
        return spelled[0] if spelled is not None and spelled[1] == "float32" and type(spelled[0]) is float else None

    def _option(self, layer: Layer, key: str, value: Any) -> Any:
        """An option of a layer as RETURNN reads it: a literal as it is, a reference with its names resolved (rule
        "layer-names"), anything else with the layers it could name tied to it."""
        if type(value) in _LEAVES:
            return value
        cls, net = layer.desc["class"], layer.net
        if is_code(key, value):
            self._read_code(layer.desc, key, value)
            if key == "activation":  # get_activation_function evals it
                return self._value(value, net, layer.prefix)
        if (key in LITERAL_OPTIONS or key == "unit") and type(value) is str:  # "unit": a cell's name
            return value
        if key == "target":
            return self._target(value, net, layer.prefix)
        if key == "reuse_params":
            return self._reuse_params(value, net, layer.prefix)
        if key in COMMON_REFERENCE_OPTIONS or key in CLASS_REFERENCE_OPTIONS.get(cls, ()):
            if key == "initial_output" and type(value) is not str:
                return self._value(value, net, layer.prefix)  # LayerBase resolves only a str
            return self._references(value, net, KEYWORDS.get(key, frozenset()), layer.prefix)
        return self._value(value, net, layer.prefix)

    def _read_code(self, desc: dict, key: str, code: Any) -> None:
        """Rule "layer-names": eval or activation code that the graph cannot read completely (see graph_code) may
        name any layer, or make variables named after its own: every layer keeps its name. A callable is denied by
        _value."""
        if type(code) is str or isinstance(code, CodeWrapper):
            self._unread |= not code_read_completely(desc, key)

    def _references(self, value: Any, net: Net, keywords: frozenset[str], prefix: str) -> Any:
        """A reference option: each str in it (also in lists and as dict values) is a layer name, but keywords; a
        name that finds nothing stays as any other string."""
        cls = type(value)
        if cls is str:
            if value in keywords:
                return value
            found = self._resolve(value, net)
            return found if found is not None else self._value(value, net, prefix)
        if cls is list or cls is tuple:
            out = []
            for item in value:  # mostly names ("from"): looked up here, without a call per item
                found = self._resolve(item, net) if type(item) is str and item not in keywords else None
                out.append(found if found is not None else self._references(item, net, keywords, prefix))
            return out if cls is list else tuple(out)
        if cls is dict and not is_net(value) and not is_layer(value):
            return self._keyed(
                {key: self._references(item, net, keywords, prefix) for key, item in sorted_items(value)}, net
            )
        return self._value(value, net, prefix)

    def _target(self, value: Any, net: Net, prefix: str) -> Any:
        """LayerBase's "target": "layer:x" is the layer x; else a layer of that name if there is one (also as
        "data:<target>"), else the extern_data key, which stays as it is."""
        if type(value) in (list, tuple):
            return type(value)(self._target(item, net, prefix) for item in value)
        if type(value) is not str:
            return self._value(value, net, prefix)
        name = value[len("layer:") :] if value.startswith("layer:") else value
        found = self._resolve(name, net)
        if found is None and name is value:
            found = self._resolve("data:" + value, net)
            if type(found) is Tagged and found[0] == "@data":
                return value
        return found if found is not None else self._value(value, net, prefix)

    def _reuse_params(self, value: Any, net: Net, prefix: str) -> Any:
        """ReuseParams.from_config_dict: a str is the layer to share with; in a dict, "reuse_layer" and "map" (each
        str, and "reuse_layer" and "layer_output" of each dict in it) are layer names; all else is any value."""

        def layer(name: Any) -> Any:  # the layer whose variables are shared: a copy alias is a copy, no variables
            found = self._resolve(name, net, aliases=False) if type(name) is str else None
            return found if found is not None else self._references(name, net, frozenset(), prefix)

        def layers(value: dict, keys: tuple[str, ...]) -> dict:
            return {
                key: layer(item) if key in keys else self._value(item, net, prefix) for key, item in sorted_items(value)
            }

        if type(value) is str:
            return layer(value)
        if type(value) is not dict or type(value.get("map", {})) is not dict:
            return self._value(value, net, prefix)
        out = layers({key: item for key, item in value.items() if key != "map"}, ("reuse_layer",))
        if "map" in value:
            out["map"] = {
                key: layers(item, ("reuse_layer", "layer_output")) if type(item) is dict else layer(item)
                for key, item in sorted_items(value["map"])
            }
        return out

    def _value(self, value: Any, net: Net, prefix: str) -> Any:
        """A value of which this graph cannot prove what RETURNN does with it: as it is, each string in it tied to
        the layer it finds as a name and to every layer whose name occurs in it (code such as an eval may name
        layers anywhere in it), so that which layers those are counts. A net dict nested in a value is a scope of
        its own, with names."""
        cls = type(value)
        if cls is Scalar:  # rule "scalar-operands": a float in place of a source
            return value.token
        if cls is str:
            found = self._resolve(value, net)
            ties = self._ties(value)
            return value if found is None and not ties else Tagged(("@named", value, found, ties))
        if cls is dict:
            if is_net(value) or is_layer(value):
                return self._nested(value if is_net(value) else {"layer": value}, net, prefix)
            return self._keyed({key: self._value(item, net, prefix) for key, item in sorted_items(value)}, net)
        if cls is list or cls is tuple:
            out = [self._value(item, net, prefix) for item in value]
            return out if cls is list else tuple(out)
        if cls in _DIMS:
            return value
        if cls is set or cls is frozenset:  # mostly an out_shape: dims only
            if all(type(item) in _DIMS for item in value):
                return value
            return cls(_hashable(self._value(item, net, prefix)) for item in value)
        if isinstance(value, CodeWrapper) and type(value.code) is str:  # code: tied as a str is
            ties = self._ties(wrapper_code(value))
            return Tagged(("@code", value, ties)) if ties else value
        if callable(value) or (isinstance(value, (CodeWrapper, DelayedBase)) and not isinstance(value, AbstractPath)):
            self._unread = True  # a function, a Sisyphus value: what it reads is unknown here (rule "layer-names")
        return value

    def _keyed(self, items: dict, net: Net) -> Any:
        """A dict's keys are values too (``set_dim_tags={"stag:x:window": ...}`` picks the dim named after layer x):
        the dict, with the layers each str key finds or holds tied to it, if any."""
        ties = []
        for key in items:
            if type(key) is str:
                found, tied = self._resolve(key, net), self._ties(key)
                if found is not None or tied:
                    ties.append((key, found, tied))
        return Tagged(("@keyed", items, ties)) if ties else items

    def _nested(self, network: dict, net: Net, prefix: str) -> Tagged:
        """A net dict in an option other than a subnetwork's or a loop's (e.g. a cond layer's branches): its layers
        join the graph with their names, and the option lists them by name."""
        self._nested_nets += 1
        nested = Net("nested", net, None, f"{self._where} (a net dict in an option of {net.path or 'it'})")
        nested.path = net.path
        parsed: list[Union[Layer, Net]] = []
        parse(network, nested, prefix, 1, parsed, [])
        # every layer, also those of a subnetwork in it (a cond's branch is one), by its path: all of them may run
        numbers = {item.path: self._token(item) for item in parsed if type(item) is Layer}
        return Tagged(("@nested", numbers, self._other(nested, prefix)))

    def _other(self, net: Net, prefix: str) -> dict[str, Any]:
        """Entries of a net dict that are no layer (RETURNN ignores some, e.g. "#..." keys; all are kept)."""
        if not net.other:  # most scopes
            return {}
        return {key: self._value(value, net, prefix) for key, value in sorted_items(net.other)}


def _hashable(value: Any) -> Any:
    """A set element's form as a set can hold it: the lists a string's ties make (its form in a set only, so that
    no other hash moves) as tuples."""
    if type(value) is Tagged:
        return Tagged(tuple(map(_hashable, value)))
    if type(value) is list:
        return tuple(map(_hashable, value))
    return value


def _scalar_eval_of(desc: dict[str, Any]) -> Optional[tuple[str, float, bool]]:
    """Rule "scalar-operands": the scalar operation (:func:`scalar_eval`) of an eval layer that does nothing else (no
    options but its code and sources, besides those that change nothing), else None."""
    options = desc.keys() - INERT_OPTIONS - {"out_shape"}
    if desc["class"] != "eval" or not options <= EVAL_OPTIONS or type(desc.get("eval")) is not str:
        return None
    return scalar_eval(desc["eval"])

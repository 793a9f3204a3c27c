"""The scopes of a net dict as the graph hash parses them: its layers, each with its path, its TF name scope prefix and
its body (a loop's or a subnetwork's), and the readings of a layer description those need."""

from __future__ import annotations

import bisect
import re
from typing import Any, Optional, Union

from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef
from i6_rc_jobs._hashing.graph_code import code_read_completely
from i6_rc_jobs._hashing.graph_rules import (
    INERT_OPTIONS,
    KEYWORDS,
    MARKING_OPTIONS,
    OUTPUT_READERS,
    PARAMETER_FREE_CLASSES,
    RANDOM_DRAWING_CLASSES,
    RANDOM_DRAWING_OPTIONS,
    REC_SCOPE_CLASSES,
    SHAPE_DEPS_CLASSES,
    VARIABLE_KEYWORDS,
    VARIABLE_OPTIONS,
)
from i6_rc_jobs._hashing.tokens import Token

#: Rule "subnetwork-output": options of a layer in a subnetwork that make the subnetwork layer more than its output.
_MARKED_KEYS = frozenset(MARKING_OPTIONS) | {"trainable"}
#: Nested subnetworks deeper than this are refused (each level is a scope; RETURNN itself recurses per level).
MAX_DEPTH = 200


class Layer:
    """One layer of the dict: its name in its scope, its path in the graph, its description and its effective TF
    name scope prefix."""

    __slots__ = ("name", "path", "desc", "net", "prefix", "scope", "unit", "alias_of", "owns_parameters", "token")

    def __init__(self, name: str, desc: dict, net: Net, prefix: str, unit: Optional[Net] = None):
        self.name, self.path, self.desc, self.net, self.prefix = name, net.path + name, desc, net, prefix
        cls = desc["class"]
        # Rule "parameter-scope": the prefix of its variables (a cell unit's under "rec/" without name_scope).
        rec = cls in REC_SCOPE_CLASSES and desc.get("name_scope") is None
        self.scope = prefix + "rec/" if rec else prefix
        self.unit = unit  # its body: a loop's (rec with a dict unit), a subnetwork's with options
        self.alias_of = _alias_source(desc) if cls == "copy" else None
        self.owns_parameters = _owns_parameters(desc, unit)
        self.token: Optional[Token] = None  # its reference in the graph, once numbered (see NameResolver._token)

    @property
    def where(self) -> str:
        """Where it sits in the serializer's dicts (for errors only: made when asked)."""
        return f"{self.net.where}[{self.name!r}]"


#: The options by which a layer of any class may create TF variables (see _owns_parameters).
_VARIABLE_KEYS = frozenset(VARIABLE_OPTIONS) | frozenset(VARIABLE_KEYWORDS)


def _owns_parameters(desc: dict, unit: Optional[Net]) -> bool:
    """Whether the layer may create TF variables: by its class, or by an option any class reads (looked at only if
    the layer has one of those options, as few do: this runs for every layer)."""
    if unit is None and desc["class"] not in PARAMETER_FREE_CLASSES and not _static_random(desc):
        return True
    if _VARIABLE_KEYS.isdisjoint(desc):
        return False
    return any(key in desc and not is_unset(desc[key], unset) for key, unset in VARIABLE_OPTIONS.items()) or any(
        desc.get(key) == keyword for key, keyword in VARIABLE_KEYWORDS.items()
    )


class Net:
    """A network scope: the root ("root"), a subnetwork flattened into the graph ("sub"), the body of a loop ("loop")
    or of a subnetwork with options of its own ("subnet"), or a net dict nested in some other option, kept with its
    names ("nested")."""

    def __init__(self, kind: str, parent: Optional[Net], owner: Optional[Layer], where: str, sources: Any = None):
        self.kind, self.parent, self.owner, self.where, self.sources = kind, parent, owner, where, sources
        self.layers: dict[str, Union[Layer, Net]] = {}  # a flattened subnetwork is its Net
        self.path: str = "" if owner is None else owner.path + "/"
        self.other: dict[str, Any] = {}  # entries that are no layer description
        self.found: dict[str, Any] = {}  # name -> what NameResolver._find finds for it here
        # the innermost loop this scope sits in
        self.loop: Optional[Layer] = owner if kind == "loop" else None if parent is None else parent.loop


def names_variables(desc: dict) -> bool:
    """Rule "layer-names": whether the layer puts its name into a TF variable's name beyond its scope: a variable
    layer without param_name (VariableLayer: ``get_variable(name=param_name or self.name)``), ``initial_output: "var"``
    (LayerBase.get_rec_initial_output: ``init_<name>_var``, in its loop's scope), batch norm of param_version 0, or
    not given (LayerBase.batch_norm: ``<name>_<output name>_mean``; the default follows the config's behavior
    version)."""
    if desc["class"] == "variable" and desc.get("param_name") is None:
        return True
    if desc.get("initial_output") == "var":
        return True
    norm = desc.get("batch_norm")
    if norm is None or norm is False:
        return False
    return not (type(norm) is dict and type(norm.get("param_version")) is int and norm["param_version"] in (1, 2))


def loop_layers(unit: Net) -> list[tuple[str, Layer]]:
    """The layers of a loop's body by their names in it (``sub/x`` for a flattened subnetwork's), in name order: the
    order in which RETURNN's rec cell constructs those it constructs by name (_SubnetworkRecCell: the layers read
    through ``prev:``, the outputs it needs), each drawing its seeds from the loop's random generator then."""
    found: list[tuple[str, Layer]] = []
    pending: list[tuple[str, Net]] = [("", unit)]
    while pending:
        prefix, net = pending.pop()
        for name, item in net.layers.items():
            if isinstance(item, Net):
                pending.append((f"{prefix}{name}/", item))
            else:
                found.append((prefix + name, item))
    return sorted(found, key=lambda pair: pair[0])


def is_layer(desc: Any) -> bool:
    return type(desc) is dict and type(desc.get("class")) is str


def is_net(value: Any) -> bool:
    return type(value) is dict and bool(value) and all(type(k) is str and is_layer(v) for k, v in value.items())


def _is_body(value: Any) -> bool:
    """A net dict as a loop's or subnetwork's body: layers, and notes under "#..." keys (RETURNN skips those)."""
    if type(value) is not dict:
        return False
    layers = False
    for key, item in value.items():  # a loop, not all() and any(): every layer of a model passes here
        if type(key) is not str:
            return False
        if type(item) is dict and type(item.get("class")) is str:  # is_layer
            layers = True
        elif not key.startswith("#"):
            return False
    return layers


def _out_shape_key(value: Any) -> Optional[frozenset]:
    """The dims an out_shape checks (by identity, as RETURNN compares its dims; marked dims by mark), or None if it
    holds anything else."""
    if type(value) not in (set, frozenset, list, tuple):
        return None
    keys: set[Any] = set()
    for item in value:
        if type(item) is DimRef:
            keys.add(id(item))
        elif type(item) is MarkedRef:
            keys.add((item.marker, id(item.dim)))
        else:
            return None
    return frozenset(keys)


def same_out_shape(desc: dict, source: Any) -> bool:
    """Rule "out-shape": whether a layer that outputs what ``source`` (a layer description) outputs checks nothing
    more: it has no out_shape, or the one ``source`` checks already (the same dims)."""
    if "out_shape" not in desc:
        return True
    key = _out_shape_key(desc["out_shape"])
    return key is not None and key == _checked_dims(source)


def _checked_dims(source: Any) -> Optional[frozenset]:
    """The dims whose check the output of ``source`` (a layer description) passed: its out_shape's, or for a
    subnetwork without one, those of its "output" layer (SubnetworkLayer outputs a copy of that layer's output);
    None if nothing is known to be checked."""
    for _ in range(MAX_DEPTH):
        if not is_layer(source):
            return None
        if "out_shape" in source:
            return _out_shape_key(source["out_shape"])
        body = source.get("subnetwork")
        if source["class"] != "subnetwork" or not _is_body(body):
            return None
        source = body.get("output")
    return None


def sorted_items(value: dict) -> list[tuple[Any, Any]]:
    """Items in key order where keys are all str (as the canonical form orders them), so that layers are numbered
    whatever the dict's order; else in the dict's order."""
    if all(type(key) is str for key in value):
        return sorted(value.items(), key=lambda item: item[0])
    return list(value.items())


def _static_random(desc: dict) -> bool:
    """Rule "static-random": a random layer that creates no variable (static=True) and makes no dim named after
    itself (no int in its shape)."""
    if desc["class"] != "random":
        return False
    shape: Any = desc.get("shape")
    return desc.get("static") is True and type(shape) in (list, tuple) and all(type(dim) is DimRef for dim in shape)


def no_shape_deps(desc: dict) -> bool:
    """Rule "empty-shape-deps": a constant or random layer's "shape_deps" is [] or ()."""
    deps = desc.get("shape_deps")
    return desc["class"] in SHAPE_DEPS_CLASSES and type(deps) in (list, tuple) and not deps


def is_unset(value: Any, unset: tuple) -> bool:
    """Whether ``value`` is one of the ``unset`` values, of the same kind (numbers as numbers, not bools)."""
    for candidate in unset:
        if candidate is None and value is None:
            return True
        if type(candidate) is bool and value is candidate:
            return True
        if type(candidate) is float and type(value) in (int, float) and value == candidate:
            return True
        if type(candidate) is dict and type(value) is dict and value == candidate:
            return True
    return False


def single_source(desc: dict) -> Optional[tuple[str, ...]]:
    """The sources of a layer as a tuple of at most one name, or None if it has more or they are not names."""
    sources = desc.get("from", ())
    if type(sources) is str:
        return (sources,)
    if type(sources) in (list, tuple) and len(sources) <= 1 and all(type(s) is str for s in sources):
        return tuple(sources)
    return None


#: Per layer class: the option that may hold the layer's own net dict (see body_option).
_BODY_OPTIONS = {"rec": "unit", "subnetwork": "subnetwork"}


def body_option(desc: dict) -> Optional[str]:
    """The option that holds the layer's own net dict, for a layer of a class in _BODY_OPTIONS: a loop's "unit" (a
    rec layer with a dict unit), a subnetwork's "subnetwork"; None if it has none."""
    key = _BODY_OPTIONS[desc["class"]]
    return key if _is_body(desc.get(key)) else None


def _flattens(desc: dict) -> bool:
    """Rule "subnetwork-namespace": whether a subnetwork layer (with a net dict, see body_option) may be only a
    namespace: with a name_scope only if it is a scope of its own (rule "subnetwork-scope"), with an out_shape only
    if its output layer checks the same (rule "out-shape"). Graph then keeps it a layer if a
    layer outside it has variables under its scope: RETURNN's SubnetworkLayer owns every variable under its scope,
    so it decides which of those are trainable."""
    name_scope = desc.get("name_scope")
    return (
        set(desc) - INERT_OPTIONS <= {"class", "subnetwork", "from", "out_shape"}
        and same_out_shape(desc, desc["subnetwork"].get("output"))
        and (name_scope is None or (type(name_scope) is str and name_scope.strip("/") != ""))
        and single_source(desc) is not None
    )


def reads_outputs_only(layer: Layer) -> bool:
    """Rule "subnetwork-output": whether the layer reads nothing of its sources but their output (DotLayer; RecLayer of
    a cell unit without initial_state, through input_data), outside loops."""
    desc = layer.desc
    if desc["class"] not in OUTPUT_READERS or layer.net.loop is not None:
        return False
    return desc["class"] != "rec" or (type(desc.get("unit")) is str and "initial_state" not in desc)


def passes_output_on(layer: Layer) -> bool:
    """Rule "subnetwork-output": whether a subnetwork layer outside loops makes nothing but its output layer when it is
    read as a whole: no option but one source, a name_scope and an out_shape its output checks, and no layer in it
    (at any depth) that is marked or sets "trainable". Whether a layer outside it has variables under its scope is
    left to the caller."""
    desc = layer.desc
    if layer.net.loop is not None or layer.unit is None or layer.unit.kind != "subnet" or desc["class"] != "subnetwork":
        return False
    if not set(desc) - INERT_OPTIONS <= {"class", "subnetwork", "from", "out_shape"} or single_source(desc) is None:
        return False
    if not same_out_shape(desc, desc["subnetwork"].get("output")):
        return False
    return not _holds_marked(desc["subnetwork"], 0)


def _holds_marked(value: Any, depth: int) -> bool:
    """Whether a layer description in ``value`` (a dict, list or tuple; at any depth) has a marking option or
    "trainable"."""
    if depth > MAX_DEPTH:
        return True
    if type(value) is dict:
        if is_layer(value) and not _MARKED_KEYS.isdisjoint(value):
            return True
        value = value.values()
    return any(_holds_marked(item, depth + 1) for item in value if type(item) in _CONTAINERS)


#: The values _holds_marked looks into (all else holds no layer description).
_CONTAINERS = frozenset({dict, list, tuple})


def _alias_source(desc: dict) -> Optional[str]:
    """Rule "copy-alias": the source of a copy layer of one layer with no other effective option (an out_shape only
    if it is the source's, see NameResolver._find), else None."""
    if not desc.keys() - INERT_OPTIONS <= {"class", "from", "out_shape"}:
        return None
    sources = single_source(desc)
    if sources is None or len(sources) != 1 or sources[0].startswith("prev:") or sources[0] in KEYWORDS["from"]:
        return None  # "none" is no source
    return sources[0]


_PLAIN_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9._]*")  # what get_valid_scope_name_from_str keeps as it is
_TF_SCOPE = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*")  # a root name scope TF takes (tf.name_scope)


def _scope_prefix(net_prefix: str, name: str, name_scope: Any) -> str:
    """Rule "parameter-scope": the TF name scope prefix of a layer, as RETURNN's
    ``LayerBase.get_base_absolute_name_scope_prefix`` makes it (with its valid-scope-name spelling of the name)."""
    if name_scope is None:
        return net_prefix + _valid_scope_name(name) + "/"
    if type(name_scope) is not str:
        raise SerializationError(f"name_scope {name_scope!r} is not a str")
    if name_scope == "":
        return net_prefix
    if name_scope == "/":
        return ""
    prefix = name_scope[1:] + "/" if name_scope.startswith("/") else net_prefix + name_scope + "/"
    if not _TF_SCOPE.fullmatch(prefix):  # else two spellings of a scope TF refuses would hash alike
        raise SerializationError(f"name_scope {name_scope!r} makes the TF name scope {prefix!r}, which TF refuses")
    return prefix


def _valid_scope_name(name: str) -> str:
    """RETURNN's ``get_valid_scope_name_from_str``: what a layer name becomes in TF names."""
    if _PLAIN_NAME.fullmatch(name):
        return name
    name = "".join(c for c in name if ord(c) < 128)
    for c in ":(){}&+-*'\" ,":
        name = name.replace(c, "__")
    if name[:1] in ("_", "-", "\\", "/"):
        name = f".{ord(name[0])}." + name[1:]
    return name


def parse(network: dict, net: Net, prefix: str, depth: int, layers: list, subs: list) -> None:
    """The layers of ``network`` into ``net``, under the TF scope ``prefix``, each also appended to ``layers``
    (each flattened subnetwork too, before its layers), and to ``subs`` each flattened subnetwork, its layer and
    the range of its layers in ``layers``."""
    if depth > MAX_DEPTH:
        raise SerializationError(f"subnetworks nested deeper than {MAX_DEPTH}").at(net.where)
    for name, desc in network.items():
        if type(name) is not str or not is_layer(desc):
            net.other[name] = desc
            continue
        name_scope = desc.get("name_scope")
        if name_scope is None and _PLAIN_NAME.fullmatch(name):  # most layers (see _scope_prefix)
            layer_prefix = prefix + name + "/"
        else:
            try:
                layer_prefix = _scope_prefix(prefix, name, name_scope)
            except SerializationError as e:
                e.at(f"{net.where}[{name!r}]['name_scope']")
                raise
        body = body_option(desc) if desc["class"] in _BODY_OPTIONS else None
        if body is None:
            net.layers[name] = layer = Layer(name, desc, net, layer_prefix)
            layers.append(layer)
            continue
        if body == "subnetwork" and _flattens(desc):
            owner = Layer(name, desc, net, layer_prefix)
            net.layers[name] = sub = Net("sub", net, owner, f"{owner.where}['subnetwork']", single_source(desc))
            layers.append(sub)
            start = len(layers)
            parse(desc["subnetwork"], sub, layer_prefix, depth + 1, layers, subs)
            subs.append((sub, owner, start, len(layers)))
            continue
        kind = "loop" if body == "unit" else "subnet"  # a subnetwork with options
        unit = Net(kind, net, None, f"{net.where}[{name!r}][{body!r}]")
        layer = Layer(name, desc, net, layer_prefix, unit)
        unit.owner = layer
        unit.path = layer.path + "/"
        if kind == "loop":
            unit.loop = layer
        net.layers[name] = layer
        layers.append(layer)
        parse(desc[body], unit, layer.scope, depth + 1, layers, subs)


def draws_random(layer: Layer) -> bool:
    """Rule "subnetwork-namespace": whether the layer may draw from its network's random generator (code that the
    graph does not read completely may, see graph_code)."""
    desc = layer.desc
    if not RANDOM_DRAWING_OPTIONS.isdisjoint(desc):
        return True
    if desc["class"] in RANDOM_DRAWING_CLASSES:  # a variable of a random layer is initialized by its own seed
        return desc.get("seed") is None
    if layer.owns_parameters:
        return True
    return not (code_read_completely(desc, "activation") and code_read_completely(desc, "eval"))


def under_scope(scopes: list[str], prefix: str) -> range:
    """The indices of the sorted ``scopes`` under the scope ``prefix``: those of a prefix that ends with "/" sort from
    it to the prefix with that "/" made "0" (the next character); every scope is under ""."""
    end = bisect.bisect_left(scopes, prefix[:-1] + "0") if prefix else len(scopes)
    return range(bisect.bisect_left(scopes, prefix), end)


def keep_shared_scopes(parsed: list[Union[Layer, Net]], subs: list[tuple[Net, Layer, int, int]]) -> list[Layer]:
    """Rule "subnetwork-scope": a flattened subnetwork under whose scope a layer outside it has variables
    (SubnetworkLayer would own those too) is a layer with its body, as a subnetwork with options. Returns the
    layers of ``parsed``, each such subnetwork in its place as its layer."""
    owners = sorted(
        (layer.scope, i) for i, layer in enumerate(parsed) if type(layer) is Layer and layer.owns_parameters
    )
    scopes = [scope for scope, _ in owners]
    seeded = any(type(layer) is Layer and draws_random(layer) for layer in parsed)  # rule "subnetwork-namespace"
    for sub, flat, start, end in subs:
        if not seeded and all(start <= owners[i][1] < end for i in under_scope(scopes, flat.prefix)):
            continue
        sub.kind, sub.sources = "subnet", None
        sub.owner = parsed[start - 1] = Layer(flat.name, flat.desc, flat.net, flat.prefix, sub)
        flat.net.layers[flat.name] = sub.owner
    return [item for item in parsed if isinstance(item, Layer)]

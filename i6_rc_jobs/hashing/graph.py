"""The computation graph of a net dict, which ``hash_scheme="graph"`` hashes instead of the dict itself.

Every normalization here is one of the named rules of :mod:`.graph_rules` (the comments name them). The graph of a
network is its roots (the layers RETURNN reads by name, and the layers that may own parameters, by their TF scope)
and its layers as a list, numbered in order of first use: breadth first from the roots, through each layer's options
in sorted order. A reference becomes a token naming that number, so a layer's name is nowhere unless RETURNN reads
it. Dims stay DimRefs: the canonical form numbers them as for the dict scheme."""

from __future__ import annotations

import bisect
import re
from typing import Any, Optional, Union

from ..serialization.errors import SerializationError
from ..serialization.refs import DimRef
from .canonical import Tagged, Token
from .graph_rules import (
    CLASS_REFERENCE_OPTIONS,
    COMMON_REFERENCE_OPTIONS,
    INERT_OPTIONS,
    INITIAL_STATE_CLASSES,
    KEYWORDS,
    LITERAL_OPTIONS,
    MARKING_OPTIONS,
    PARAMETER_FREE_CLASSES,
    REC_SCOPE_CLASSES,
    SCALAR_FUNCTIONS,
    SCALAR_OPERATORS,
    SHAPE_DEPS_CLASSES,
    UNSET_VALUES,
    VARIABLE_KEYWORDS,
    VARIABLE_OPTIONS,
)

_UNSEEN = object()  # a name not looked up yet (None is what a name that finds nothing finds)

#: Nested subnetworks deeper than this are refused (each level is a scope; RETURNN itself recurses per level).
MAX_DEPTH = 200


class _Layer:
    """One layer of the dict: its name in its scope, its path in the graph, its description and its effective TF
    name scope prefix."""

    __slots__ = ("name", "path", "desc", "net", "prefix", "scope", "unit", "alias_of", "owns_parameters", "token")

    def __init__(self, name: str, desc: dict, net: _Net, prefix: str, unit: Optional[_Net] = None):
        self.name, self.path, self.desc, self.net, self.prefix = name, net.path + name, desc, net, prefix
        cls = desc["class"]
        # Rule "parameter-scope": the prefix of its variables (a cell unit's under "rec/" without name_scope).
        rec = cls in REC_SCOPE_CLASSES and desc.get("name_scope") is None
        self.scope = prefix + "rec/" if rec else prefix
        self.unit = unit  # its body: a loop's (rec with a dict unit), a subnetwork's with options
        self.alias_of = _alias_source(desc) if cls == "copy" else None
        self.owns_parameters = _owns_parameters(desc, unit)
        self.token: Optional[Token] = None  # its reference in the graph, once numbered (see Graph._token)

    @property
    def where(self) -> str:
        """Where it sits in the serializer's dicts (for errors only: made when asked)."""
        return f"{self.net.where}[{self.name!r}]"


#: The options by which a layer of any class may create TF variables (see _owns_parameters).
_VARIABLE_KEYS = frozenset(VARIABLE_OPTIONS) | frozenset(VARIABLE_KEYWORDS)
#: The options that mark a layer as read by its name (see Graph._roots).
_MARKING_KEYS = frozenset(MARKING_OPTIONS)
#: Values that every option takes as they are (Graph._value returns them unchanged), whatever its key.
_LEAVES = frozenset({bool, int, float, type(None), DimRef})


def _owns_parameters(desc: dict, unit: Optional[_Net]) -> bool:
    """Whether the layer may create TF variables: by its class, or by an option any class reads (looked at only if
    the layer has one of those options, as few do: this runs for every layer)."""
    if unit is None and desc["class"] not in PARAMETER_FREE_CLASSES and not _static_random(desc):
        return True
    if _VARIABLE_KEYS.isdisjoint(desc):
        return False
    return any(key in desc and not _unset(desc[key], unset) for key, unset in VARIABLE_OPTIONS.items()) or any(
        desc.get(key) == keyword for key, keyword in VARIABLE_KEYWORDS.items()
    )


class _Net:
    """A network scope: the root ("root"), a subnetwork flattened into the graph ("sub"), the body of a loop ("loop")
    or of a subnetwork with options of its own ("subnet"), or a net dict nested in some other option, kept with its
    names ("nested")."""

    def __init__(self, kind: str, parent: Optional[_Net], owner: Optional[_Layer], where: str, sources: Any = None):
        self.kind, self.parent, self.owner, self.where, self.sources = kind, parent, owner, where, sources
        self.layers: dict[str, Union[_Layer, _Net]] = {}  # a flattened subnetwork is its _Net
        self.path: str = "" if owner is None else owner.path + "/"
        self.other: dict[str, Any] = {}  # entries that are no layer description
        self.found: dict[str, Any] = {}  # name -> what Graph._find finds for it here
        # the innermost loop this scope sits in
        self.loop: Optional[_Layer] = owner if kind == "loop" else None if parent is None else parent.loop


def _is_layer(desc: Any) -> bool:
    return type(desc) is dict and type(desc.get("class")) is str


def _is_net(value: Any) -> bool:
    return type(value) is dict and bool(value) and all(type(k) is str and _is_layer(v) for k, v in value.items())


def _sorted_items(value: dict) -> list[tuple[Any, Any]]:
    """Items in key order where keys are all str (as the canonical form orders them), so that layers are numbered
    whatever the dict's order; else in the dict's order."""
    if all(type(key) is str for key in value):
        return sorted(value.items(), key=lambda item: item[0])
    return list(value.items())


def _static_random(desc: dict) -> bool:
    """Rule "static-random": a random layer that creates no variable (static=True) and makes no dim named after
    itself (no int in its shape)."""
    shape: Any = desc.get("shape")
    return (
        desc["class"] == "random"
        and desc.get("static") is True
        and type(shape) in (list, tuple)
        and all(type(dim) is DimRef for dim in shape)
    )


def _no_shape_deps(desc: dict) -> bool:
    """Rule "empty-shape-deps": a constant or random layer's "shape_deps" is [] or ()."""
    deps = desc.get("shape_deps")
    return desc["class"] in SHAPE_DEPS_CLASSES and type(deps) in (list, tuple) and not deps


def _unset(value: Any, unset: tuple) -> bool:
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


def _respell(node: dict[str, Any], layer: _Layer) -> None:
    """Rule "value-spellings", on the options of a node of a class in _RESPELLED (in place)."""
    if node["class"] == "constant":
        spelled = _constant(node, layer)
        if spelled is not None:
            node["value"], node["dtype"] = spelled
    if node["class"] in INITIAL_STATE_CLASSES and "initial_state" in node:
        node["initial_state"] = _initial_state(node["initial_state"])


#: The classes whose options rule "value-spellings" respells (see _respell).
_RESPELLED = frozenset({"constant"}) | INITIAL_STATE_CLASSES


def _constant(desc: dict[str, Any], layer: _Layer) -> Optional[tuple[Any, Any]]:
    """A constant layer's (``desc`` of ``layer``) scalar value and dtype as the tensor RETURNN makes (rule
    "value-spellings"): the dtype given or inferred from the value's type, an int in a float dtype as the float it
    becomes; None for values that are no bool, int or float. An int too large for any float is refused (TF cannot
    make it: ValueError)."""
    value = desc.get("value", 0.0)  # ConstantLayer's default
    if type(value) not in (bool, int, float):
        return None
    dtype = desc.get("dtype") or {bool: "bool", int: "int32", float: "float32"}[type(value)]
    if type(dtype) is str and dtype.startswith("float") and type(value) is int:
        try:
            value = float(value)  # tf.constant(0, dtype=float32) is 0.0
        except OverflowError:
            raise SerializationError(
                f"an int of {len(str(abs(value)))} digits in dtype {dtype!r}: too large for a float, TF cannot make "
                "this constant (give a float, e.g. float('inf'), or an int dtype)"
            ).at(f"{layer.where}['value']") from None
    return value, dtype


def _initial_state(value: Any) -> Any:
    """An initial state as RnnCellLayer reads it: 0, 0.0 and "zeros" are zeros, 1, 1.0 and "ones" ones (also per
    state in a dict, list or tuple); layers and anything else as they are."""
    if type(value) in (int, float) and value in (0, 1):
        return ("zeros", "ones")[int(value)]
    if type(value) is dict:
        return {key: _initial_state(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_initial_state(item) for item in value)
    return value


class _Scalar:
    """A float operand of a binary op (rule "scalar-operands"), in place of a source name."""

    __slots__ = ("token",)

    def __init__(self, number: float):
        self.token = Tagged(("@scalar", number))


_KINDS = frozenset(SCALAR_OPERATORS.values()) | frozenset(SCALAR_FUNCTIONS.values())
_FROM_KEYWORDS = KEYWORDS["from"]
_SCALAR_CLASSES = frozenset({"eval", "combine"})  # the classes of the layers rule "scalar-operands" looks at
_EVAL_OPTIONS = frozenset({"class", "eval", "from"})  # their effective options, if the rule applies
_COMBINE_OPTIONS = frozenset({"class", "kind", "from"})

#: How Graph._node takes an option, by key (one lookup for the checks of most keys): skipped (rule "inert-options"),
#: as it is (Graph._option returns a literal option's value unchanged), or by the checks in _node; any other key by
#: Graph._option.
_SKIP, _LITERAL, _CHECKED = "skip", "literal", "checked"
_HANDLING = (
    {key: _LITERAL for key in LITERAL_OPTIONS if key != "activation"}  # activation: code if it holds "("
    | {key: _CHECKED for key in (*UNSET_VALUES, "shape_deps", "from", "unit", "subnetwork")}
    | {key: _SKIP for key in INERT_OPTIONS}
)
_UNSIGNED = r"(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)"  # as str(float) writes a finite float
_FLOAT = rf"-?{_UNSIGNED}"  # as the right operand; on the left "-2.0 ** x" would be -(2.0 ** x)
_OPERATOR = "|".join(re.escape(op) for op in sorted(SCALAR_OPERATORS, key=len, reverse=True))
_FUNCTION = "|".join(re.escape(fn) for fn in SCALAR_FUNCTIONS)
_SCALAR_EVALS = (  # (pattern, the kinds of its op, whether the source is the first operand)
    (re.compile(rf"source\(0\) (?P<op>{_OPERATOR}) (?P<number>{_FLOAT})"), SCALAR_OPERATORS, True),
    (re.compile(rf"(?P<number>{_UNSIGNED}) (?P<op>{_OPERATOR}) source\(0\)"), SCALAR_OPERATORS, False),
    (re.compile(rf"(?P<op>{_FUNCTION})\(source\(0\), (?P<number>{_FLOAT})\)"), SCALAR_FUNCTIONS, True),
    (re.compile(rf"(?P<op>{_FUNCTION})\((?P<number>{_FLOAT}), source\(0\)\)"), SCALAR_FUNCTIONS, False),
)


def _scalar_eval(code: str) -> Optional[tuple[str, float, bool]]:
    """(combine kind, the float, whether the source is the first operand) of eval code that applies one binary op to
    its source and a float literal, as returnn_common writes it; else None."""
    for pattern, kinds, first in _SCALAR_EVALS:
        found = pattern.fullmatch(code)
        if found is not None:
            return kinds[found.group("op")], float(found.group("number")), first
    return None


def _single_source(desc: dict) -> Optional[tuple[str, ...]]:
    """The sources of a layer as a tuple of at most one name, or None if it has more or they are not names."""
    sources = desc.get("from", ())
    if type(sources) is str:
        return (sources,)
    if type(sources) in (list, tuple) and len(sources) <= 1 and all(type(s) is str for s in sources):
        return tuple(sources)
    return None


#: Per layer class: the option that may hold the layer's own net dict (see _body).
_BODY_OPTIONS = {"rec": "unit", "subnetwork": "subnetwork"}


def _body(desc: dict) -> Optional[str]:
    """The option that holds the layer's own net dict, for a layer of a class in _BODY_OPTIONS: a loop's "unit" (a
    rec layer with a dict unit), a subnetwork's "subnetwork"; None if it has none."""
    key = _BODY_OPTIONS[desc["class"]]
    return key if _is_net(desc.get(key)) else None


def _flattens(desc: dict) -> bool:
    """Rule "subnetwork-namespace": whether a subnetwork layer (with a net dict, see _body) may be only a namespace:
    with a name_scope only if it is a scope of its own (rule "subnetwork-scope"). Graph then keeps it a layer if a
    layer outside it has variables under its scope: RETURNN's SubnetworkLayer owns every variable under its scope,
    so it decides which of those are trainable."""
    name_scope = desc.get("name_scope")
    return (
        set(desc) - INERT_OPTIONS <= {"class", "subnetwork", "from"}
        and (name_scope is None or (type(name_scope) is str and name_scope.strip("/") != ""))
        and _single_source(desc) is not None
    )


def _alias_source(desc: dict) -> Optional[str]:
    """Rule "copy-alias": the source of a copy layer of one layer with no other effective option, else None."""
    if not desc.keys() - INERT_OPTIONS <= {"class", "from"}:
        return None
    sources = _single_source(desc)
    if sources is None or len(sources) != 1 or sources[0].startswith("prev:"):
        return None
    return sources[0]


_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.]+")  # a name that code holds as a word: split at anything else
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9_]+")
_DOTTED_SPLIT = re.compile(r"[^A-Za-z0-9_.]+")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9._]*")  # what get_valid_scope_name_from_str keeps as it is


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
    if name_scope.startswith("/"):
        return name_scope[1:] + "/"
    return net_prefix + name_scope + "/"


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


class Graph:
    """The graph of one net dict: :attr:`form` (what is hashed, with DimRefs still in it) and :attr:`names` (the
    path in the dict of each numbered layer, for hash-diff)."""

    def __init__(self, network: dict, where: str, extern_keys: frozenset[str] = frozenset()):
        """``extern_keys``: the keys of the extern_data the network is run with (rule "extern-shape-deps")."""
        self._where = where
        self._nested_nets = 0  # net dicts nested in options (see _nested)
        self._extern_deps: list[dict[str, Any]] = []  # nodes whose "shape_deps" may name extern data
        self._root = _Net("root", None, None, where)
        # every layer in parse order (a layer before its body), and in its place each flattened subnetwork (rule
        # "subnetwork-scope" decides which of them stay flattened, see _keep_shared_scopes)
        parsed: list[Union[_Layer, _Net]] = []
        self._subs: list[tuple[_Net, _Layer, int, int]] = []  # (subnetwork, its flattened layer, its layers' range)
        self._parse(network, self._root, "", 0, parsed, self._subs)
        self._layers = self._keep_shared_scopes(parsed)
        self._order: list[_Layer] = []
        self.names: list[str] = []
        # for _ties, made when a string first needs them (many nets have none): a plain name -> the layers of that
        # name, and the layers of names with other characters
        self._names: Optional[dict[str, list[tuple[str, _Layer]]]] = None
        self._odd_names: list[tuple[str, _Layer]] = []
        roots = self._roots()
        other = self._other(self._root, "")  # before the layers are made: names in it may number layers
        layers: list[dict] = []
        while len(layers) < len(self._order):  # the layers reached, and what they reach, until none is left
            layers.append(self._node(self._order[len(layers)]))
        self._drop_extern_deps(extern_keys)
        self.form: dict[str, Any] = {"roots": roots, "layers": layers}
        if other:
            self.form["other entries"] = other

    # Parsing: scopes and prefixes.

    def _parse(self, network: dict, net: _Net, prefix: str, depth: int, layers: list, subs: list) -> None:
        """The layers of ``network`` into ``net``, under the TF scope ``prefix``, each also appended to ``layers``
        (each flattened subnetwork too, before its layers), and to ``subs`` each flattened subnetwork, its layer and
        the range of its layers in ``layers``."""
        if depth > MAX_DEPTH:
            raise SerializationError(f"subnetworks nested deeper than {MAX_DEPTH}").at(net.where)
        for name, desc in network.items():
            if type(name) is not str or not _is_layer(desc):
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
            body = _body(desc) if desc["class"] in _BODY_OPTIONS else None
            if body is None:
                net.layers[name] = layer = _Layer(name, desc, net, layer_prefix)
                layers.append(layer)
                continue
            if body == "subnetwork" and _flattens(desc):
                owner = _Layer(name, desc, net, layer_prefix)
                net.layers[name] = sub = _Net("sub", net, owner, f"{owner.where}['subnetwork']", _single_source(desc))
                layers.append(sub)
                start = len(layers)
                self._parse(desc["subnetwork"], sub, layer_prefix, depth + 1, layers, subs)
                subs.append((sub, owner, start, len(layers)))
                continue
            kind = "loop" if body == "unit" else "subnet"  # a subnetwork with options
            unit = _Net(kind, net, None, f"{net.where}[{name!r}][{body!r}]")
            layer = _Layer(name, desc, net, layer_prefix, unit)
            unit.owner = layer
            unit.path = layer.path + "/"
            if kind == "loop":
                unit.loop = layer
            net.layers[name] = layer
            layers.append(layer)
            self._parse(desc[body], unit, layer.scope, depth + 1, layers, subs)

    def _keep_shared_scopes(self, parsed: list[Union[_Layer, _Net]]) -> list[_Layer]:
        """Rule "subnetwork-scope": a flattened subnetwork under whose scope a layer outside it has variables
        (SubnetworkLayer would own those too) is a layer with its body, as a subnetwork with options. Returns the
        layers of ``parsed``, each such subnetwork in its place as its layer."""
        owners = sorted(
            (layer.scope, i) for i, layer in enumerate(parsed) if type(layer) is _Layer and layer.owns_parameters
        )
        scopes = [scope for scope, _ in owners]
        for sub, flat, start, end in self._subs:
            prefix = flat.prefix  # ends with "/": the scopes under it sort from prefix to prefix[:-1] + "0"
            found = range(bisect.bisect_left(scopes, prefix), bisect.bisect_left(scopes, prefix[:-1] + "0"))
            if all(start <= owners[i][1] < end for i in found):
                continue
            sub.kind, sub.sources = "subnet", None
            sub.owner = parsed[start - 1] = _Layer(flat.name, flat.desc, flat.net, flat.prefix, sub)
            flat.net.layers[flat.name] = sub.owner
        return [item for item in parsed if isinstance(item, _Layer)]

    def _index(self, net: _Net, names: dict[str, list[tuple[str, _Layer]]]) -> None:
        """Every layer by its name, into ``names`` if a plain name, for the strings that may name it (:meth:`_ties`);
        a namespace by its output."""
        for name, item in net.layers.items():
            if isinstance(item, _Net):
                self._index(item, names)
                found = self._lookup("output", item)
                if found is None or type(found) is Tagged:
                    continue
                layer = found[0]
            else:
                layer = item
                if item.unit is not None:
                    self._index(item.unit, names)
            if _PLAIN_WORD.fullmatch(name):
                names.setdefault(name, []).append((name, layer))
            else:
                self._odd_names.append((name, layer))

    # Resolving names.

    def _resolve(self, text: str, net: _Net) -> Any:
        """What the name ``text`` read in ``net`` refers to: a token (a layer's number, marked prev/stacked/loop
        input) or an extern_data key (Tagged), or None if it finds nothing."""
        target = self._lookup(text, net)
        if target is None or isinstance(target, Tagged):
            return target
        layer, stacked, sub, prev = target
        token = layer.token or self._token(layer)
        if prev or stacked:
            token = Token(f"{prev or 'stacked'}:{token.text}")
        return token if not sub else Tagged(("@sub-layer", token, sub))

    def _lookup(self, text: str, net: _Net) -> Any:
        """:meth:`_find` of a name read in ``net``, once per name and scope (a name is looked up for its layer's
        node, for the strings that may name it and for scalar operands): a name finds the same each time."""
        found = net.found.get(text, _UNSEEN)
        if found is _UNSEEN:
            found = net.found[text] = self._find(text, net, 0)
        return found

    def _find(self, text: str, net: _Net, hops: int, prev: str = "") -> Any:
        """(layer, stacked, sub-layer path, prev mark) or a Tagged (extern data, a loop's or subnetwork's input) for
        ``text`` in ``net``, as RETURNN's get_layer finds it: ``base:`` and ``prev:`` in any order (one ``prev:``),
        then a layer of that name (also one named "data"), then "data"/"data:key", following namespaces and
        aliases. A path into a layer that is no namespace nor loop (``split/0``) is that layer's sub-layer. The
        previous frame of a copy alias or a namespace is their own (their initial output), not their source's."""
        if hops > MAX_DEPTH:
            return None  # a cycle of aliases: RETURNN cannot build it either; the name stays as it is
        if ":" not in text and "/" not in text:  # most names: a layer here, no alias
            item = net.layers.get(text)
            if type(item) is _Layer and item.alias_of is None:
                return self._prev(item, False, "", prev)
        while True:
            if text.startswith("base:"):
                if net.parent is None:
                    return None
                net, text = net.parent, text[len("base:") :]
            elif text.startswith("prev:"):
                if prev:
                    return None  # RETURNN: multiple 'prev:' prefixes are not allowed
                prev, text = "prev", text[len("prev:") :]
            else:
                break
        head, _, rest = text.partition("/")
        item = net.layers.get(head)
        if item is None and (text == "data" or text.startswith("data:")):
            return self._data(text, net, hops, prev)
        stacked = False
        while rest and item is not None:
            if isinstance(item, _Net):
                head, _, rest = rest.partition("/")
                item = item.layers.get(head)
            elif item.unit is None:
                return self._prev(item, stacked, rest, prev)
            else:
                head, _, rest = rest.partition("/")
                stacked = stacked or item.unit.kind == "loop"
                item = item.unit.layers.get(head)
        if isinstance(item, _Net):  # rule "subnetwork-namespace": the subnetwork's output
            found = self._find("output", item, hops + 1)
            if found is None or type(found) is Tagged or found[3]:
                return None
            return self._prev(found[0], found[1] or stacked, found[2], "prev-of-subnetwork" if prev else "")
        if item is None:
            return None
        if item.alias_of is not None and not prev:  # rule "copy-alias"
            found = self._find(item.alias_of, item.net, hops + 1)
            if found is not None and type(found) is not Tagged:
                return found[0], found[1] or stacked, found[2], found[3]
            if found is not None and not stacked:
                return found
        return self._prev(item, stacked, "", prev)

    @staticmethod
    def _prev(layer: _Layer, stacked: bool, sub: str, prev: str) -> Optional[tuple[_Layer, bool, str, str]]:
        """The target, if ``prev`` can apply to it (a layer in the loop the name is read in)."""
        if prev and (stacked or layer.net.loop is None):
            return None
        return layer, stacked, sub, prev

    def _data(self, text: str, net: _Net, hops: int, prev: str) -> Any:
        """ "data" or "data:key" read in ``net`` (where no layer has that name), as RETURNN's Subnetwork.get_data
        and the rec cell resolve it."""
        key = "data" if text == "data" else text[len("data:") :]
        if net.kind == "sub":  # rule "subnetwork-namespace": "data" is the input; other keys are the parent's
            assert net.parent is not None  # every scope but the root has a parent
            if key == "data":
                return self._find(net.sources[0], net.parent, hops + 1, prev) if net.sources else None
            return self._data(text, net.parent, hops, prev)
        if net.kind == "loop":  # rule "loops": "data:source" is the per-frame input, other keys extern data's frame
            assert net.owner is not None  # a loop body has its layer
            loop = self._token(net.owner)
            if key == "source":
                return Tagged(("@prev-loop-input" if prev else "@loop-input", loop))
            return Tagged(("@prev-loop-data" if prev else "@loop-data", loop, key))
        if net.kind == "subnet":
            return self._subnetwork_data(key, text, net, hops, prev)
        if net.kind == "nested" or prev:
            return None
        return Tagged(("@data", key))

    def _subnetwork_data(self, key: str, text: str, net: _Net, hops: int, prev: str) -> Any:
        """Subnetwork.get_data: with concat_sources (the default) "data" is the owner's sources concatenated; without,
        "data:<i>", "data:<source name>" and "data" (the first) are that source, as the owner's i-th "from" (which
        its node hashes); any other key is the parent's. A concat_sources whose truth this cannot tell ties both."""
        if prev:
            return None
        assert net.owner is not None  # a subnetwork with options has its layer
        owner = self._token(net.owner)
        concat = net.owner.desc.get("concat_sources", True)
        sources = net.owner.desc.get("from", "data")
        sources = list(sources) if type(sources) in (list, tuple) else [sources]
        if type(concat) not in (bool, int, float, str, type(None)):
            return Tagged(
                (
                    "@either",
                    self._subnetwork_data_as(True, key, text, net, hops, owner, sources),
                    self._subnetwork_data_as(False, key, text, net, hops, owner, sources),
                )
            )
        return self._subnetwork_data_as(bool(concat), key, text, net, hops, owner, sources)

    def _subnetwork_data_as(
        self, concat: bool, key: str, text: str, net: _Net, hops: int, owner: Token, sources: list
    ) -> Any:
        if concat and key == "data":
            return Tagged(("@subnetwork-input", owner))
        if not concat:
            for i, source in enumerate(sources):
                if key == source or key == str(i) or (key == "data" and i == 0):
                    return Tagged(("@subnetwork-input", owner, i))
        assert net.parent is not None  # every scope but the root has a parent
        return self._data(text, net.parent, hops, "")

    def _token(self, layer: _Layer) -> Token:
        """The token of a reference to the layer, one for all its references (thousands in a model); it numbers the
        layer on first use, which makes it a node of the graph."""
        if layer.token is None:
            layer.token = Token(f"layer#{len(self._order)}")
            self._order.append(layer)
            self.names.append(layer.path)
        return layer.token

    # Roots.

    def _roots(self) -> dict[str, Any]:
        """Rule "layer-names": what RETURNN reads by name (the default output, losses by score key, marked layers),
        then every layer that may own parameters, by its TF scope (rule "parameter-scope")."""
        named: list[tuple[str, _Layer]] = []
        scoped: list[tuple[str, str, _Layer]] = []
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

    def _node(self, layer: _Layer) -> dict[str, Any]:
        desc = layer.desc
        if desc["class"] in _SCALAR_CLASSES:
            desc = self._scalar_operation(layer) or desc
        node: dict[str, Any] = {}
        for key in sorted(desc):
            handling = _HANDLING.get(key)
            if handling is None:
                node[key] = self._option(layer, key, desc[key])
                continue
            if handling is _SKIP:  # rule "inert-options"
                continue
            if handling is _LITERAL:
                node[key] = desc[key]
                continue
            if layer.unit is not None and key in ("unit", "subnetwork"):  # the body: its layers are nodes, see below
                continue
            if key in UNSET_VALUES and _unset(desc[key], UNSET_VALUES[key][not desc.get("loss")]):  # "unset-options"
                continue
            if key == "shape_deps" and _no_shape_deps(desc):  # rule "empty-shape-deps"
                continue
            value = desc[key]
            if key == "from":  # rule "from-list"; "from" is a reference option of every class (see _option)
                value = [value] if type(value) is str else list(value) if type(value) is tuple else value
                node[key] = self._references(value, layer.net, _FROM_KEYWORDS, layer.prefix)
                continue
            if key == "shape_deps" and desc["class"] in SHAPE_DEPS_CLASSES and type(value) in (str, list, tuple):
                value = [value] if type(value) is str else list(value)  # rule "extern-shape-deps"
                if layer.net.loop is None:
                    self._extern_deps.append(node)
            node[key] = self._option(layer, key, value)
        if node["class"] in _RESPELLED:
            _respell(node, layer)
        if layer.owns_parameters:
            node["@scope"] = layer.scope
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
        if layer.net.kind == "nested":
            node["@name"] = layer.path
        return node

    def _drop_extern_deps(self, extern_keys: frozenset[str]) -> None:
        """Rule "extern-shape-deps": the extern data in the "shape_deps" of a constant or random layer outside loops
        is dropped, and "shape_deps" if nothing is left. Only data of ``extern_keys`` that no layer registers
        (register_as_extern_data may bring a beam), and only where every layer is known (no nested net dict)."""
        if not self._extern_deps or self._nested_nets:
            return
        registered = (layer.desc.get("register_as_extern_data") for layer in self._layers)
        keys = extern_keys - {key for key in registered if type(key) is str}
        for node in self._extern_deps:
            deps = [
                dep for dep in node["shape_deps"] if not (type(dep) is Tagged and dep[0] == "@data" and dep[1] in keys)
            ]
            if deps:
                node["shape_deps"] = deps
            else:
                del node["shape_deps"]

    def _scalar_operation(self, layer: _Layer) -> Optional[dict[str, Any]]:
        """Rule "scalar-operands": an eval or combine layer that applies a binary op to one layer and a float, as the
        combine of that layer with the float (a _Scalar in "from"); None for any other layer of these classes."""
        desc = layer.desc
        options = desc.keys() - INERT_OPTIONS
        if desc["class"] == "eval":
            sources = _single_source(desc)
            if options != _EVAL_OPTIONS or not sources or len(sources) != 1 or type(desc["eval"]) is not str:
                return None
            found = _scalar_eval(desc["eval"])
            if found is None:
                return None
            kind, number, first = found
            pair = [sources[0], _Scalar(number)]
            return {"class": "combine", "kind": kind, "from": pair if first else pair[::-1]}
        operands: Any = desc.get("from")
        if type(operands) not in (list, tuple) or len(operands) != 2 or options != _COMBINE_OPTIONS:
            return None
        if type(operands[0]) is not str or type(operands[1]) is not str:
            return None
        if type(desc["kind"]) is not str or desc["kind"] not in _KINDS:
            return None
        numbers = [self._float_constant(operand, layer.net) for operand in operands]
        if (numbers[0] is None) == (numbers[1] is None):
            return None
        return {
            "class": "combine",
            "kind": desc["kind"],
            "from": [operand if number is None else _Scalar(number) for operand, number in zip(operands, numbers)],
        }

    def _float_constant(self, text: str, net: _Net) -> Optional[float]:
        """The float of a scalar float32 constant layer that ``text`` finds (without numbering it), else None."""
        found = self._lookup(text, net)
        if found is None or type(found) is Tagged or found[1] or found[2] or found[3]:
            return None
        desc = found[0].desc
        if desc["class"] != "constant":
            return None
        others = desc.keys() - INERT_OPTIONS - {"class", "value", "dtype"}
        if others and not (others == {"shape_deps"} and _no_shape_deps(desc)):
            return None
        spelled = _constant(desc, found[0])
        return spelled[0] if spelled is not None and spelled[1] == "float32" and type(spelled[0]) is float else None

    def _option(self, layer: _Layer, key: str, value: Any) -> Any:
        """An option of a layer as RETURNN reads it: a literal as it is, a reference with its names resolved (rule
        "layer-names"), anything else with the layers it could name tied to it."""
        if type(value) in _LEAVES:
            return value
        cls, net = layer.desc["class"], layer.net
        if key == "activation" and type(value) is str and "(" in value:  # code (get_activation_function evals it)
            return self._value(value, net, layer.prefix)
        if key in LITERAL_OPTIONS:
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

    def _references(self, value: Any, net: _Net, keywords: frozenset[str], prefix: str) -> Any:
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
        if cls is dict and not _is_net(value) and not _is_layer(value):
            return {key: self._references(item, net, keywords, prefix) for key, item in _sorted_items(value)}
        return self._value(value, net, prefix)

    def _target(self, value: Any, net: _Net, prefix: str) -> Any:
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

    def _reuse_params(self, value: Any, net: _Net, prefix: str) -> Any:
        """ReuseParams.from_config_dict: a str is the layer to share with; in a dict, "reuse_layer" and "map" (each
        str, and "reuse_layer" and "layer_output" of each dict in it) are layer names; all else is any value."""

        def layers(value: dict, keys: tuple[str, ...]) -> dict:
            return {
                key: self._references(item, net, frozenset(), prefix) if key in keys else self._value(item, net, prefix)
                for key, item in _sorted_items(value)
            }

        if type(value) is str:
            return self._references(value, net, frozenset(), prefix)
        if type(value) is not dict or type(value.get("map", {})) is not dict:
            return self._value(value, net, prefix)
        out = layers({key: item for key, item in value.items() if key != "map"}, ("reuse_layer",))
        if "map" in value:
            out["map"] = {
                key: (
                    layers(item, ("reuse_layer", "layer_output"))
                    if type(item) is dict
                    else self._references(item, net, frozenset(), prefix)
                )
                for key, item in _sorted_items(value["map"])
            }
        return out

    def _value(self, value: Any, net: _Net, prefix: str) -> Any:
        """A value of which this graph cannot prove what RETURNN does with it: as it is, each string in it tied to
        the layer it finds as a name and to every layer whose name occurs in it (code such as an eval may name
        layers anywhere in it), so that which layers those are counts. A net dict nested in a value is a scope of
        its own, with names."""
        cls = type(value)
        if cls is _Scalar:  # rule "scalar-operands": a float in place of a source
            return value.token
        if cls is str:
            found = self._resolve(value, net)
            ties = self._ties(value)
            return value if found is None and not ties else Tagged(("@named", value, found, ties))
        if cls is dict:
            if _is_net(value) or _is_layer(value):
                return self._nested(value if _is_net(value) else {"layer": value}, net, prefix)
            return {key: self._value(item, net, prefix) for key, item in _sorted_items(value)}
        if cls is list or cls is tuple:
            out = [self._value(item, net, prefix) for item in value]
            return out if cls is list else tuple(out)
        return value

    def _ties(self, text: str) -> list[tuple[str, Token]]:
        """Every layer whose name occurs in ``text``: as a word (split at what no plain name holds), or for names
        with other characters, anywhere; by name and path (numbers in that order)."""
        names = self._names
        if names is None:
            names = self._names = {}
            self._index(self._root, names)
        words = set(_WORD_SPLIT.split(text)) | set(_DOTTED_SPLIT.split(text))
        found = [(name, layer.path, layer) for word in words for name, layer in names.get(word, ())]
        found.extend((name, layer.path, layer) for name, layer in self._odd_names if name in text)
        return [(name, self._token(layer)) for name, _, layer in sorted(found, key=lambda f: f[:2])]

    def _nested(self, network: dict, net: _Net, prefix: str) -> Tagged:
        """A net dict in an option other than a subnetwork's or a loop's (e.g. a cond layer's branches): its layers
        join the graph with their names, and the option lists them by name."""
        self._nested_nets += 1
        nested = _Net("nested", net, None, f"{self._where} (a net dict in an option of {net.path or 'it'})")
        nested.path = net.path
        self._parse(network, nested, prefix, 1, [], [])
        numbers = {name: self._token(item) for name, item in _sorted_items(nested.layers) if type(item) is _Layer}
        return Tagged(("@nested", numbers, self._other(nested, prefix)))

    def _other(self, net: _Net, prefix: str) -> dict[str, Any]:
        """Entries of a net dict that are no layer (RETURNN ignores some, e.g. "#..." keys; all are kept)."""
        return {key: self._value(value, net, prefix) for key, value in _sorted_items(net.other)}

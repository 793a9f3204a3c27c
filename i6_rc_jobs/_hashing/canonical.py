"""The canonical form of a serializer's dicts, which its Sisyphus hash is made of and hash-diff compares.

Dims become tokens by index of first occurrence in a canonical traversal (sections in a fixed order, dict keys
sorted as Sisyphus sorts dicts, set elements in a canonical order), kind, static size and derivation (op with the
tokens of its inputs), never by description or variable name. Everything else keeps its value and its type."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence, assert_never


from sisyphus.hash import sis_hash_helper

from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.kinds import kind_of
from i6_rc_jobs._serialization.numpy_values import loaded_numpy
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef, derived_shape, literal_code
from i6_rc_jobs._serialization.values import imported_source, key_step, refuse, walk_guarded
from i6_rc_jobs._hashing.descriptions import DescriptionReadings
from i6_rc_jobs._hashing.tokens import (
    AS_IS_TYPES,
    GLOBAL_ORDER,
    GLOBAL_TOKENS,
    DimToken,
    SetForm,
    Tagged,
    Token,
    code_token,
    imported_token,
    numpy_token,
)
from i6_rc_jobs._hashing.walks import dims_in


def _first(pair: tuple) -> Any:
    return pair[0]


class Canonicalizer:
    """Turns the hashed sections into canonical form, numbering dims in order of first occurrence.

    ``choices`` says which item goes first at each tie (set elements or dict keys alike in everything, whose dims
    also occur elsewhere): :func:`canonical` searches them; ``ties`` records how many items each tie met had."""

    def __init__(self, choices: tuple[int, ...] = (), refuse_ties: bool = False):
        self.index: dict[int, int] = {}  # id(DimRef) -> index
        self.definitions: list[str] = []  # index -> definition
        self.ties: list[int] = []
        self._choices = choices
        self._refuse_ties = refuse_ties
        self._later: list[DimToken] = []  # index -> the token of its later occurrences
        self._profiles: Optional[dict[int, tuple[str, ...]]] = None
        self._sections: list[tuple[str, Any]] = []
        self._unhashed: dict[int, tuple[str, ...]] = {}
        self._readings: Optional[DescriptionReadings] = None
        self._shapes: dict[int, tuple] = {}  # id(DimRef) -> (kind, size), computed once per hash (refs.derived_shape)
        self._copy_aliases: dict[tuple, DimRef] = {}  # (id(base), kind, match_priority, keeps_op) -> the copy

    def sections(
        self,
        sections: list[tuple[str, Any]],
        unhashed: Sequence[tuple[str, Any]] = (),
        readings: Optional[DescriptionReadings] = None,
    ) -> dict[str, Any]:
        """Canonical form of named top-level values, in the given order. Dims that also occur in the ``unhashed``
        sections say where (which of them are the data's dims stays in the hash), and ``readings`` adds what RETURNN
        reads of descriptions."""
        self._sections = sections
        self._readings = readings
        self._unhashed = occurrence_paths(unhashed, _Probe(Canonicalizer()), self._alias)  # before numbering
        form = {name: walk_guarded(self._value, value, name) for name, value in sections}
        if readings is not None:
            outside = sorted(
                (self._unhashed[id(dim)], extras)
                for dim in dims_in(value for _, value in unhashed)
                if id(dim) not in self.index and (extras := readings.extras(dim))
            )
            if outside:  # e.g. the data's time dim, read by a layer as "stag:time", with extern_data unhashed
                form["<descriptions read in unhashed parts>"] = outside
        return form

    def _alias(self, ref: DimRef) -> DimRef:
        """The dim the hash takes ``ref`` for: a copy whose description no axis string reads is its base if it
        differs from it only by that description (and keeps the base's derivation, if the base has one), else one
        copy per base, kind, match_priority and keeps_op (descriptions are cosmetic; the written code keeps them for
        axis strings)."""
        base = ref.copy_of
        if base is None or ref.auto_generated or ref.op_of is not None:  # hashed as they are: auto-generated copies
            return ref  # are matched by their descriptions, and op_of is a derivation of the copy's own
        if ref.description is not None and self._readings and self._readings.extras(ref):
            return ref
        alike = ref.kind == base.kind and ref.match_priority == base.match_priority and not base.auto_generated
        if alike and (ref.keeps_op or base.op is None):
            return base
        key = (id(base), ref.kind, ref.match_priority, ref.keeps_op)
        alias = self._copy_aliases.get(key)
        if alias is None:  # copies alike are one variable in the written code too, unless edits made them two
            alias = DimRef(
                "hashed_copy_dim",
                kind=ref.kind,
                copy_of=base,
                match_priority=ref.match_priority,
                keeps_op=ref.keeps_op,
            )
            self._copy_aliases[key] = alias
        return alias

    def _dependencies(self, ref: DimRef) -> list[DimRef]:
        return [self._alias(dep) for dep in ref.dependencies()]

    def describe_dim(self, index: int) -> str:
        return f"dim#{index} {self.definitions[index]}"

    def local_definition(self, ref: DimRef) -> str:
        """The definition of a numbered dim with the dims it is made of as ``<#k>`` (their indices), never spelled
        out: what the dim is, wherever it first occurs (hash-diff matches the dims of two forms by it)."""

        def name_of(dep: DimRef) -> str:
            return GLOBAL_TOKENS[dep.global_name].code if dep.global_name is not None else f"<#{self.index[id(dep)]}>"

        return self._definition(ref, name_of)

    def _value(self, value: Any) -> Any:
        cls = type(value)
        if cls is Token:  # the canonical form's own values (the graph scheme's form holds them), no serializer's
            return value
        if cls is Tagged:
            return Tagged(self._items(value))
        kind = kind_of(value)
        match kind:
            case "dict":
                return self._dict(value)
            case "dim_ref":
                return self._dim(value)
            case "set" | "frozenset":
                codes = self._numbered(value)  # most out_shape sets
                if codes is None:
                    codes = [repr(form) for form in self._in_order(value, self._set_element)]
                return SetForm(cls.__name__, codes)
            case "list":
                return self._items(value)
            case "tuple":
                return tuple(self._items(value))
            case "str" | "int" | "float" | "plain" | "complex":
                return value
            case "marked_ref":
                return Tagged((value.marker, self._dim(value.dim)))
            case "namedtuple":
                return Tagged((f"{cls.__module__}.{cls.__qualname__}", *self._items(value)))
            case "partial_ref":
                func, args, keywords = self._items(value)
                return Tagged(("functools.partial", func, args, keywords))
            case "named_ref":
                return imported_token(*value)
            case "content_ref":  # the owner's hash (the code it runs), the reference's dims by index
                return Tagged(("by-content", self._value(value.owner), self._value(value.reference)))
            case "delayed" | "i6_core_object":  # (i6_core's objects are Sisyphus values)
                return Token(f"sisyphus {sis_hash_helper(value).hex()}")
            case (
                "wrapper"
                | "numpy"
                | "imported"
                | "content_owner"
                | "raw_dim"
                | "raw_marked_dim"
                | "dict_subclass"
                | "partial"
                | "module"
                | "other"
            ):
                if hasattr(value, "_sis_hash"):  # a code hash (a ContentRef's owner; Sisyphus hashes functions by name)
                    return Token(f"own-hash {value._sis_hash().hex()}")
                if kind == "wrapper":
                    return code_token(value)
                if kind == "numpy":
                    return numpy_token(value, loaded_numpy())
                if kind == "imported":
                    return imported_token(*imported_source(value))
                refuse(value)
            case _:
                assert_never(kind)

    def _numbered(self, items) -> Optional[list[str]]:
        """The codes of set elements in canonical order if all are globals or numbered dims, else None."""
        index, later = self.index, self._later
        keyed = []
        for item in items:
            if type(item) is not DimRef:
                return None
            if item.global_name is not None:
                keyed.append((GLOBAL_ORDER[item.global_name], GLOBAL_TOKENS[item.global_name].code))
                continue
            i = index.get(id(item))
            if i is None:
                return None
            keyed.append((i, later[i].code))
        keyed.sort(key=_first)
        return [code for _, code in keyed]

    # The two loops below are the hot path of hashing: leaves and tokens are taken as they are, without a call.

    def _dict(self, value: dict) -> dict:
        try:
            pairs = sorted(value.items())  # str keys are distinct: values are never compared
        except (TypeError, ValueError):  # dims or mixed types as keys (numpy compares a scalar with a tuple as arrays)
            return self._keyed_in_order(value)
        # keys that sort without a total order (sets by inclusion, nan) would keep their insertion order
        if pairs and type(pairs[0][0]) is not str and not all(a[0] < b[0] for a, b in zip(pairs, pairs[1:])):
            return self._keyed_in_order(value)
        out = {}
        walk = self._value
        for key, item in pairs:
            try:
                out[key if type(key) is str else walk(key)] = item if type(item) in AS_IS_TYPES else walk(item)
            except SerializationError as e:
                e.at(key_step(key))
                raise
        if len(out) < len(value):
            self._refuse_alike_keys(value)
        return out

    def _keyed_in_order(self, value: dict) -> dict:
        """A dict whose keys do not sort, in canonical order: keys alike in form (nan, nan) by their values'."""
        probe = _Probe(self)
        out = dict(
            self._in_order(value, lambda key: self._pair(key, value[key]), lambda key: repr(probe.value(value[key])))
        )
        if len(out) < len(value):
            self._refuse_alike_keys(value)
        return out

    def _refuse_alike_keys(self, value: dict) -> None:
        """Two keys of ``value`` hash alike (two CodeWrappers of one code, two Sisyphus values of one hash): the
        written config would spell them alike too, and load one of them."""
        seen: dict[str, Any] = {}
        for key in value:
            form = repr(self._value(key))  # numbers dims on: no hash follows
            if form in seen:
                raise SerializationError(
                    f"keys {describe(seen[form])} and {describe(key)} are written alike ({form}), and the written "
                    f"config would load them as one key: make them distinct"
                )
            seen[form] = key

    def _items(self, value) -> list:
        out = []
        walk = self._value
        for i, item in enumerate(value):
            try:
                out.append(item if type(item) in AS_IS_TYPES else walk(item))
            except SerializationError as e:
                e.at(f"[{i}]")
                raise
        return out

    def _pair(self, key: Any, item: Any) -> tuple[Any, Any]:
        try:
            return self._value(key), self._value(item)
        except SerializationError as e:
            e.at(key_step(key))
            raise

    def _set_element(self, item: Any) -> Any:
        try:
            return self._value(item)
        except SerializationError as e:
            e.at(f"{{{item!r}}}")
            raise

    def _dim(self, ref: DimRef) -> Token:
        if ref.global_name is not None:
            return GLOBAL_TOKENS[ref.global_name]
        index = self.index.get(id(ref))
        if index is not None:
            return self._later[index]
        alias = self._alias(ref)
        if alias is not ref:  # numbered as its base, and found by its own id from now on
            token = self._dim(alias)
            self.index[id(ref)] = self.index[id(alias)]
            return token
        # Inputs first, so they get the lower indices; where one occurs first, its token spells out its definition.
        # A depth-first walk without recursion (chains of thousands of derived dims occur): each dim is numbered
        # after its dependencies, and spelled out in the definition of the dim whose walk numbered it.
        first: dict[int, DimToken] = {}  # id -> the token of its first occurrence, until used
        spelled_by: dict[int, int] = {}  # id -> id of the dim in whose definition it is spelled out
        stack = [(ref, 0)]
        while stack:
            top, parent = stack.pop()
            if id(top) in self.index:
                continue
            if id(top) not in spelled_by:
                spelled_by[id(top)] = parent
                stack.append((top, parent))
                deps = [d for d in self._dependencies(top) if d.global_name is None and id(d) not in self.index]
                stack.extend((dep, id(top)) for dep in reversed(deps))
                continue
            if any(dep.global_name is None and id(dep) not in self.index for dep in self._dependencies(top)):
                raise SerializationError(f"DimRef {top.name!r} is derived from itself")  # met again inside its walk
            dep_tokens = iter([self._dep_token(dep, top, first, spelled_by) for dep in self._dependencies(top)])
            index = len(self.definitions)
            definition = self._definition(top, lambda _dep, tokens=dep_tokens: next(tokens))  # in dependencies() order
            self.index[id(top)] = index
            self.definitions.append(definition)
            self._later.append(DimToken(index, None))
            first[id(top)] = DimToken(index, definition)
        return first[id(ref)]

    def _dep_token(self, dep: DimRef, user: DimRef, first: dict[int, DimToken], spelled_by: dict[int, int]) -> str:
        """The token of ``dep`` in the definition of ``user``: spelled out once, where the walk numbered it."""
        if dep.global_name is not None:
            return GLOBAL_TOKENS[dep.global_name].code
        if spelled_by.get(id(dep)) == id(user) and id(dep) in first:
            return first.pop(id(dep)).code
        return self._later[self.index[id(dep)]].code

    def _intrinsic(self, ref: DimRef) -> str:
        """What a dim is without its index: orders dims not numbered yet (only in sets and dim-keyed dicts). Built
        from its dependencies' without recursion."""
        done: dict[int, str] = {}
        ref = self._alias(ref)
        stack, expanded = [ref], set()
        while stack:
            top = stack[-1]
            if top.global_name is not None or id(top) in self.index:
                stack.pop()
                done[id(top)] = top.global_name or f"#{self.index[id(top)]}"
                continue
            pending = [d for d in self._dependencies(top) if id(d) not in done]
            if pending:
                if id(top) in expanded:  # its dependencies were walked, yet one is not done: it is among them
                    raise SerializationError(f"DimRef {top.name!r} is derived from itself")
                expanded.add(id(top))
                stack.extend(pending)
                continue
            stack.pop()
            done[id(top)] = f"({self._definition(top, lambda dep: done[id(self._alias(dep))])})"
        return done[id(ref)]

    def _definition(self, ref: DimRef, name_of) -> str:
        extras = "".join(
            f" {flag}"
            for flag, on in (
                (f"match_priority={ref.match_priority}", ref.match_priority),
                ("auto_generated", ref.auto_generated),
                ("special", ref.special),
                (f"capacity={ref.capacity}", ref.capacity is not None),
                ("undefined", ref.undefined),
                ("keeps_op", ref.keeps_op),
            )
            if on
        )
        for field in ("bounded_by", "derived_from_tag", "op_of"):  # in dependencies() order
            if getattr(ref, field) is not None:
                extras += f" {field}={name_of(getattr(ref, field))}"
        if ref.size_dims is not None:  # the template of its sizes (last in dependencies()): over which dims, dtype
            extras += f" sizes over [{', '.join(name_of(dim) for dim in ref.size_dims)}] {ref.size_dtype}"
        if ref.vocab is not None:  # by its options, a vocab file by its path
            extras += f" vocab={literal_code(ref.vocab)}"
        if ref.auto_generated:  # RETURNN finds two auto-generated dims equal if their descriptions are
            description = (
                ref.description if ref.copy_of is None else ref.description or ref.copy_of.written_description()
            )
            extras += f" description={description!r}"
        if self._readings is not None:
            extras += self._readings.extras(ref)
        if id(ref) in self._unhashed:
            extras += f" unhashed at {self._unhashed[id(ref)]!r}"
        kind, size = derived_shape(ref, self._shapes)
        kind = kind or "unspecified"
        if ref.copy_of is not None:
            return f"{kind} copy of {name_of(ref.copy_of)}{extras}"
        shown = "?" if size is None else size
        if ref.op is not None:
            operands = ", ".join(name_of(x) if isinstance(x, DimRef) else str(x) for x in ref.inputs)
            return f"{kind} {shown} = {ref.op}({operands}){extras}"
        return f"{kind} {shown}{extras}"

    def _in_order(
        self, items: Iterable, visit: Callable[[Any], Any], tiebreak: Optional[Callable[[Any], str]] = None
    ) -> list:
        """``visit`` of each of ``items`` (set elements or dict keys), in canonical order: plain values by canonical
        form, then the globals, numbered dims by index, dims not numbered yet by what they are, then by where else
        their dims occur, then by ``tiebreak`` (a dict key by its value). Items alike in all that whose new dims occur
        elsewhere too are a tie: which goes first is :meth:`_choose`'s, and the others are ordered again once its dims
        are numbered."""
        out: list[Any] = []
        pending = list(items)
        while pending:
            ordered, tie = self._ordered(pending, tiebreak)
            if tie is None:
                out.extend(map(visit, ordered))
                break
            start, end = tie
            out.extend(map(visit, ordered[:start]))
            chosen = start + self._choose(end - start)
            out.append(visit(ordered[chosen]))
            pending = ordered[start:chosen] + ordered[chosen + 1 :]
        return out

    def _ordered(
        self, items: list, tiebreak: Optional[Callable[[Any], str]] = None
    ) -> tuple[list, Optional[tuple[int, int]]]:
        """``items`` sorted, and the bounds of the first tie in that order (None if there is none)."""
        keyed = [(self._order_key(item), item) for item in items]
        keyed.sort(key=_first)
        if all(a[0] != b[0] for a, b in zip(keyed, keyed[1:])):
            return [item for _, item in keyed], None
        keyed = [((key, self._profile(item), tiebreak(item) if tiebreak else ""), item) for key, item in keyed]
        keyed.sort(key=_first)
        ordered = [item for _, item in keyed]
        start = 0
        for end in range(1, len(keyed) + 1):
            if end == len(keyed) or keyed[end][0] != keyed[start][0]:
                if end - start > 1 and self._matters(ordered[start:end]):
                    return ordered, (start, end)
                start = end
        return ordered, None

    def _matters(self, alike: list) -> bool:
        """Whether the order of items alike in form and profile can change the canonical form: only if a dim not
        numbered yet in them occurs more than once (else each order gives the same text, and nothing later names
        their dims)."""
        profiles = self._profiles or {}
        dims = map(self._alias, dims_in(alike))
        return any(id(dim) not in self.index and len(profiles.get(id(dim), ())) > 1 for dim in dims)

    def _choose(self, options: int) -> int:
        """Which of ``options`` tied items goes first: as ``choices`` says, else the first."""
        if self._refuse_ties:
            raise SerializationError(
                f"{options} items alike but for which dims they share: too symmetric to order canonically within "
                f"{MAX_TIE_RUNS} tries; make them distinguishable (e.g. other sizes, or put them in a list)"
            )
        position = len(self.ties)
        self.ties.append(options)
        return self._choices[position] if position < len(self._choices) else 0

    def _order_key(self, item: Any) -> tuple:
        if type(item) is DimRef:
            item = self._alias(item) if id(item) not in self.index else item
            if item.global_name is not None:
                return (0, item.global_name)
            if id(item) in self.index:
                return (1, self.index[id(item)])
            return (2, self._intrinsic(item))
        if type(item) is MarkedRef:
            return (3, item.marker, self._intrinsic(item.dim))
        return (-1, type(item).__name__, repr(_Probe(self).value(item)))

    def _profile(self, item: Any) -> tuple:
        """Where else the dims in ``item`` occur: for a dim, the sorted paths of its occurrences; for a tuple, those
        of its items; for a set, those of its elements, sorted. Tagged by what they profile, so that any two compare
        (a set may hold dims beside tuples of dims)."""
        cls = type(item)
        if cls is DimRef:
            if self._profiles is None:
                self._profiles = occurrence_paths(self._sections, _Probe(self), self._alias)
            return ("dim", self._profiles.get(id(self._alias(item)), ()))
        if cls is MarkedRef:
            return self._profile(item.dim)
        if cls is set or cls is frozenset:
            return ("set", tuple(sorted(map(self._profile, item))))
        if isinstance(item, tuple):
            return ("tuple", tuple(map(self._profile, item)))
        return ("", ())


#: How many complete canonical forms :func:`canonical` may make to resolve ties before it refuses the input.
MAX_TIE_RUNS = 256


def canonical(
    hashed: list[tuple[str, Any]], unhashed: list[tuple[str, Any]]
) -> tuple[str, Canonicalizer, dict[str, Any]]:
    """The hashed text, the canonicalizer (dim definitions by index) and the canonical form of the ``hashed``
    sections (``unhashed`` ones only as far as hashed dims occur in them).

    Where set elements or dict keys tie (:meth:`Canonicalizer._in_order`), each choice of which goes first is
    tried, and the smallest text wins: a function of the content alone, never of an iteration order. Descriptions
    and variable names are read only where code or an axis string can read them (:class:`DescriptionReadings`)."""
    return _smallest(hashed, unhashed, DescriptionReadings.find(hashed + unhashed))


def _smallest(
    hashed: list[tuple[str, Any]], unhashed: list[tuple[str, Any]], readings: Optional[DescriptionReadings]
) -> tuple[str, Canonicalizer, dict[str, Any]]:
    """The smallest text over every choice at every tie (one run if there is no tie, as in nearly every config)."""
    best: Optional[tuple[str, Canonicalizer, dict[str, Any]]] = None
    pending: list[tuple[int, ...]] = [()]
    runs = 0
    while pending:
        choices = pending.pop()
        canonicalizer = Canonicalizer(choices)
        form = canonicalizer.sections(hashed, unhashed, readings)
        text = repr(form)
        if best is None or text < best[0]:
            best = (text, canonicalizer, form)
        for position in range(len(choices), len(canonicalizer.ties)):  # beyond the prefix, the run chose 0
            zeros = (0,) * (position - len(choices))
            pending.extend(choices + zeros + (option,) for option in range(1, canonicalizer.ties[position]))
        runs += 1
        if runs + len(pending) > MAX_TIE_RUNS:
            Canonicalizer(refuse_ties=True).sections(hashed, unhashed, readings)  # raises, naming the first tie
    assert best is not None  # the first run sets it
    return best


def occurrence_paths(
    sections: Iterable[tuple[str, Any]], probe: _Probe, alias: Callable[[DimRef], DimRef]
) -> dict[int, tuple[str, ...]]:
    """For each dim (as ``alias`` takes it), the sorted paths of all its occurrences in ``sections``; set elements
    are ``{}``, and dict keys are ``{}=`` with the canonical form of their value (by ``probe``). Tells apart dims
    alike in everything else, without their names."""
    paths: dict[int, list[str]] = {}
    stack: list[tuple[Any, str]] = [(value, name) for name, value in sections]
    while stack:
        value, path = stack.pop()
        if type(value) is DimRef:
            paths.setdefault(id(alias(value)), []).append(path)
            stack.extend((dep, f"{path}<-{i}") for i, dep in enumerate(value.dependencies()))
        elif type(value) is MarkedRef:
            stack.append((value.dim, f"{path}.{value.marker}"))
        elif isinstance(value, dict):
            for k, v in value.items():
                plain_key = isinstance(k, (str, int))
                stack.append((v, path + (key_step(k) if plain_key else "[{}]")))
                if not plain_key:
                    stack.append((k, f"{path}{{}}={probe.value(v)!r}"))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, (set, frozenset)):
            stack.extend((v, path + "{}") for v in value)
    return {key: tuple(sorted(found)) for key, found in paths.items()}


class _Probe(Canonicalizer):
    """Canonical form for ordering only: numbers nothing, writes dims not numbered yet by what they are."""

    def __init__(self, owner: Canonicalizer):
        super().__init__()
        self.index = owner.index
        self._readings, self._copy_aliases = owner._readings, owner._copy_aliases  # the owner's _alias
        self._owner = owner

    def value(self, item: Any) -> Any:
        return self._value(item)

    def _dim(self, ref: DimRef) -> Token:
        return Token(self._owner._intrinsic(ref))

    def _numbered(self, items) -> None:
        return None  # the fast path spells numbered dims as the owner's tokens; the probe has its own (``<#3>``)

    def _refuse_alike_keys(self, value: dict) -> None:
        """Keys alike in form (dims not numbered yet) are distinct keys all the same: the probe only orders."""

    def _in_order(
        self, items: Iterable, visit: Callable[[Any], Any], tiebreak: Optional[Callable[[Any], str]] = None
    ) -> list:
        """By form alone, then ``tiebreak``: items alike in both give the same text in any order (dims are written
        by what they are)."""
        return [visit(x) for x in sorted(items, key=lambda x: (self._order_key(x), tiebreak(x) if tiebreak else ""))]

"""The canonical form of a serializer's dicts, which its Sisyphus hash is made of and hash-diff compares.

Dims become tokens by index of first occurrence in a canonical traversal (sections in a fixed order, dict keys
sorted as Sisyphus sorts dicts, set elements in a canonical order), kind, static size and derivation (op with the
tokens of its inputs), never by description or variable name. Everything else keeps its value and its type."""

from __future__ import annotations

from typing import Any, Optional

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase
from sisyphus.hash import sis_hash_helper

from ..serialization.errors import SerializationError
from ..serialization.refs import DimRef, MarkedRef, derived_shape
from ..serialization.values import LEAF_TYPES, check_leaf, is_namedtuple, key_step, walk_guarded


class Token:
    """A typed leaf of the canonical form; its repr can never equal that of a plain value (it starts with ``<``)."""

    __slots__ = ("text", "code")

    def __init__(self, text: str):
        self.text = text
        self.code = f"<{text}>"  # made once: the canonical form's repr is the hashed text, with ~10k dims in it

    def __repr__(self) -> str:
        return self.code

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.text == self.text

    def __hash__(self) -> int:
        return hash((type(self), self.text))


class DimToken(Token):
    """A dim: the first occurrence spells out the definition, later ones only the index."""

    __slots__ = ("index",)

    def __init__(self, index: int, definition: Optional[str]):
        super().__init__(f"dim#{index} {definition}" if definition is not None else f"dim#{index}")
        self.index = index


class Tagged(tuple):
    """A container that is not a list, tuple or dict (a namedtuple, a marked dim), with its kind in front."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _tagged_code(self[0], [repr(item) for item in self[1:]])


class SetForm:
    """A set or frozenset: its elements' canonical forms in canonical order, spelled out once as the text a Tagged
    would have (hash-diff compares sets as a whole)."""

    __slots__ = ("code",)

    def __init__(self, kind: str, codes: list[str]):
        self.code = _tagged_code(kind, codes)

    def __repr__(self) -> str:
        return self.code

    def __eq__(self, other: object) -> bool:
        return type(other) is SetForm and other.code == self.code

    def __hash__(self) -> int:
        return hash(self.code)


def _tagged_code(kind: str, codes: list[str]) -> str:
    """``kind`` and the items as a tuple would show them: ``set()``, ``set(<dim#3>,)``, ``set(<dim#1>, <dim#3>)``."""
    return f"{kind}({', '.join(codes)}{',' if len(codes) == 1 else ''})"


def _first(pair: tuple) -> Any:
    return pair[0]


GLOBAL_TOKENS = {"batch_dim": Token("batch_dim"), "single_step_dim": Token("single_step_dim")}
#: Where the globals go among set elements: first, by name (numbered dims follow by index), as in _order_key.
GLOBAL_ORDER = {name: i - len(GLOBAL_TOKENS) for i, name in enumerate(sorted(GLOBAL_TOKENS))}


class Canonicalizer:
    """Turns values into canonical form, numbering dims in order of first occurrence across all calls."""

    def __init__(self):
        self.index: dict[int, int] = {}  # id(DimRef) -> index
        self.definitions: list[str] = []  # index -> definition
        self._later: list[DimToken] = []  # index -> the token of its later occurrences
        self._profiles: Optional[dict[int, tuple[str, ...]]] = None
        self._sections: list[tuple[str, Any]] = []
        self._shapes: dict[int, tuple] = {}  # id(DimRef) -> (kind, size), computed once per hash (refs.derived_shape)

    def sections(self, sections: list[tuple[str, Any]]) -> dict[str, Any]:
        """Canonical form of named top-level values, in the given order."""
        self._sections = sections
        return {name: walk_guarded(self._value, value, name) for name, value in sections}

    def describe_dim(self, index: int) -> str:
        return f"dim#{index} {self.definitions[index]}"

    def _value(self, value: Any) -> Any:
        cls = type(value)
        if cls is dict:
            return self._dict(value)
        if cls is DimRef:
            return self._dim(value)
        if cls is set or cls is frozenset:
            codes = self._numbered(value)  # most out_shape sets
            if codes is None:
                codes = [repr(item) for item in self._items(self._ordered(value), set_elements=True)]
            return SetForm(cls.__name__, codes)
        if cls is list or cls is tuple:
            out = self._items(value)
            return out if cls is list else tuple(out)
        if cls in LEAF_TYPES:
            return value
        if cls is MarkedRef:
            return Tagged((value.marker, self._dim(value.dim)))
        if is_namedtuple(value):
            return Tagged((f"{cls.__module__}.{cls.__qualname__}", *self._items(value)))
        if isinstance(value, CodeWrapper):
            return Token(f"code {value!r}")
        if isinstance(value, DelayedBase):
            return Token(f"sisyphus {sis_hash_helper(value).hex()}")
        check_leaf(value)
        return value

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

    # The two loops below are the hot path of hashing: leaves are taken as they are, without a call.

    def _dict(self, value: dict) -> dict:
        try:
            pairs = sorted(value.items())  # str keys are distinct: values are never compared
        except TypeError:  # dims or mixed types as keys
            pairs = [(key, value[key]) for key in self._ordered(value)]
        else:  # keys that sort without a total order (sets by inclusion, nan) would keep their insertion order
            if pairs and type(pairs[0][0]) is not str and not all(a[0] < b[0] for a, b in zip(pairs, pairs[1:])):
                pairs = [(key, value[key]) for key in self._ordered(value)]
        out = {}
        walk = self._value
        for key, item in pairs:
            try:
                out[key if type(key) is str else walk(key)] = item if type(item) in LEAF_TYPES else walk(item)
            except SerializationError as e:
                raise e.at(key_step(key))
        return out

    def _items(self, value, set_elements: bool = False) -> list:
        out = []
        walk = self._value
        for i, item in enumerate(value):
            try:
                out.append(item if type(item) in LEAF_TYPES else walk(item))
            except SerializationError as e:
                raise e.at(f"{{{item!r}}}" if set_elements else f"[{i}]")
        return out

    def _dim(self, ref: DimRef) -> Token:
        if ref.global_name is not None:
            return GLOBAL_TOKENS[ref.global_name]
        index = self.index.get(id(ref))
        if index is not None:
            return self._later[index]
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
                deps = [d for d in top.dependencies() if d.global_name is None and id(d) not in self.index]
                stack.extend((dep, id(top)) for dep in reversed(deps))
                continue
            if any(dep.global_name is None and id(dep) not in self.index for dep in top.dependencies()):
                raise SerializationError(f"DimRef {top.name!r} is derived from itself")  # met again inside its walk
            dep_tokens = iter([self._dep_token(dep, top, first, spelled_by) for dep in top.dependencies()])
            index = len(self.definitions)
            definition = self._definition(top, lambda _dep: next(dep_tokens))  # in dependencies() order
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
        stack, expanded = [ref], set()
        while stack:
            top = stack[-1]
            if top.global_name is not None or id(top) in self.index:
                stack.pop()
                done[id(top)] = top.global_name or f"#{self.index[id(top)]}"
                continue
            pending = [d for d in top.dependencies() if id(d) not in done]
            if pending:
                if id(top) in expanded:  # its dependencies were walked, yet one is not done: it is among them
                    raise SerializationError(f"DimRef {top.name!r} is derived from itself")
                expanded.add(id(top))
                stack.extend(pending)
                continue
            stack.pop()
            done[id(top)] = f"({self._definition(top, lambda dep: done[id(dep)])})"
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
            )
            if on
        )
        for field in ("bounded_by", "derived_from_tag"):  # in dependencies() order
            if getattr(ref, field) is not None:
                extras += f" {field}={name_of(getattr(ref, field))}"
        if ref.auto_generated:  # RETURNN finds two auto-generated dims equal if their descriptions are
            extras += f" description={ref.description!r}"
        kind, size = derived_shape(ref, self._shapes)
        kind = kind or "unspecified"
        if ref.copy_of is not None:
            return f"{kind} copy of {name_of(ref.copy_of)}{extras}"
        size = "?" if size is None else size
        if ref.op is not None:
            operands = ", ".join(name_of(x) if isinstance(x, DimRef) else str(x) for x in ref.inputs)
            return f"{kind} {size} = {ref.op}({operands}){extras}"
        return f"{kind} {size}{extras}"

    def _ordered(self, items) -> list:
        """Set elements or dict keys in canonical order: plain values by canonical form, then the globals, numbered
        dims by index, dims not numbered yet by what they are, and dims alike in that by where else they occur."""
        keyed = [(self._order_key(item), item) for item in items]
        keyed.sort(key=_first)
        for (key_a, a), (key_b, b) in zip(keyed, keyed[1:]):
            if key_a == key_b and a is not b:
                return [item for _, item in sorted(keyed, key=lambda pair: (pair[0], self._profile(pair[1])))]
        return [item for _, item in keyed]

    def _order_key(self, item: Any) -> tuple:
        if type(item) is DimRef:
            if item.global_name is not None:
                return (0, item.global_name)
            if id(item) in self.index:
                return (1, self.index[id(item)])
            return (2, self._intrinsic(item))
        if type(item) is MarkedRef:
            return (3, item.marker, self._intrinsic(item.dim))
        return (-1, type(item).__name__, repr(_Probe(self).value(item)))

    def _profile(self, item: Any) -> tuple:
        """Where else the dims in ``item`` occur: for a dim, the sorted paths of its occurrences; for a tuple or a
        set (as a set element or dict key), those of the dims in it, in its canonical order."""
        cls = type(item)
        if cls is DimRef:
            if self._profiles is None:
                self._profiles = self._occurrence_profiles()
            return self._profiles.get(id(item), ())
        if cls is MarkedRef:
            return self._profile(item.dim)
        if cls is set or cls is frozenset:
            return tuple(map(self._profile, self._ordered(item)))
        if isinstance(item, tuple):
            return tuple(map(self._profile, item))
        return ()

    def _occurrence_profiles(self) -> dict[int, tuple[str, ...]]:
        """For each dim, the sorted paths of all its occurrences; set elements are ``{}``, and dict keys are ``{}=``
        with the canonical form of their value. Tells apart dims alike in everything else, without their names."""
        paths: dict[int, list[str]] = {}
        probe = _Probe(self)
        stack: list[tuple[Any, str]] = [(value, name) for name, value in self._sections]
        while stack:
            value, path = stack.pop()
            if type(value) is DimRef:
                paths.setdefault(id(value), []).append(path)
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
        self._owner = owner

    def value(self, item: Any) -> Any:
        return self._value(item)

    def _dim(self, ref: DimRef) -> Token:
        return Token(self._owner._intrinsic(ref))

    def _numbered(self, items) -> None:
        return None  # the fast path spells numbered dims as the owner's tokens; the probe has its own (``<#3>``)

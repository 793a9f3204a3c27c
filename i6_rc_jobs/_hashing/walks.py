"""What values hold, found without recursion: their dims, their strings, and the code that may read names."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional, assert_never

from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._serialization.callables import ContentRef
from i6_rc_jobs._serialization.kinds import LEAF_TYPES, kind_of
from i6_rc_jobs._serialization.refs import DimRef
from i6_rc_jobs._serialization.values import wrapper_code
from i6_rc_jobs._hashing.containers import leaves
from i6_rc_jobs._hashing.function_code import function_texts


def code_texts(values: Iterable) -> tuple[list[str], bool]:
    """What in ``values`` can be code that reads a description or a dim's variable name: the str values (not dict
    keys, which are option and layer names), the code of the CodeWrappers (not dims) and of functions and classes
    (:func:`.function_texts`); and whether some code cannot be read in the manager: a CodeWrapper of a Sisyphus value,
    a function whose source cannot be had."""
    codes: list[str] = []
    unreadable = False
    for value in leaves(values):
        if type(value) in LEAF_TYPES and type(value) is not str:
            continue  # the hot path: ints, floats, None, bools and bytes are no code
        kind = kind_of(value)
        match kind:  # the most frequent kinds first: a match tries its patterns in order
            case "str":
                codes.append(value)
            case (
                "int"
                | "plain"
                | "float"
                | "dim_ref"  # (no code: where axis strings name it, its description is read)
                | "marked_ref"
                | "complex"
                | "dict"  # (containers, and the refs, which are tuples, are walked into by leaves())
                | "list"
                | "tuple"
                | "namedtuple"
                | "set"
                | "frozenset"
                | "partial_ref"
                | "named_ref"
                | "content_ref"
                | "delayed"
                | "numpy"
                | "raw_dim"
                | "raw_marked_dim"
                | "dict_subclass"
                | "partial"
                | "module"
                | "content_owner"
                | "i6_core_object"
                | "other"
            ):
                pass
            case "wrapper":
                if isinstance(value.code, DelayedBase):
                    unreadable = True
                elif type(value.code) is str:  # other code is refused with its path by the walk that hashes
                    codes.append(wrapper_code(value))
            case "imported":
                texts = function_texts(value)
                unreadable = unreadable or texts is None
                codes.extend(texts or ())
            case _:
                assert_never(kind)
    return codes, unreadable


def dims_in(values: Iterable) -> Iterator[DimRef]:
    """Every DimRef in ``values`` (in containers, marked dims, and what they are derived from), once."""
    return _dims(values, None)


def dims_and_strings(values: Iterable) -> tuple[list[DimRef], set[str]]:
    """What :func:`dims_in` gives, and every str in ``values`` (dict keys and values, container items), in one walk."""
    strings: set[str] = set()
    return list(_dims(values, strings)), strings


def _dims(values: Iterable, strings: Optional[set[str]]) -> Iterator[DimRef]:
    """The dims of :func:`dims_in`, adding every str on the way to ``strings`` (if given)."""
    seen: set[int] = set()
    expanded: set[int] = set()

    def parts(value: Any) -> Iterable:
        if type(value) in LEAF_TYPES:  # the hot path: most leaves are (of kind STR, INT, FLOAT or PLAIN)
            return ()
        kind = kind_of(value)
        match kind:  # the most frequent kinds first: a match tries its patterns in order
            case "dim_ref":
                if id(value) in expanded:
                    return ()
                expanded.add(id(value))
                return value.dependencies()
            case "marked_ref":
                return (value.dim,)
            case (
                "str"
                | "int"
                | "plain"
                | "float"
                | "complex"
                | "dict"  # (containers, and the refs, which are tuples, are walked into by leaves())
                | "list"
                | "tuple"
                | "namedtuple"
                | "set"
                | "frozenset"
                | "partial_ref"
                | "named_ref"
                | "content_ref"
                | "wrapper"
                | "delayed"
                | "numpy"
                | "imported"
                | "raw_dim"
                | "raw_marked_dim"
                | "dict_subclass"
                | "partial"
                | "module"
                | "content_owner"
                | "i6_core_object"
                | "other"
            ):
                return ()
            case _:
                assert_never(kind)

    for value in leaves(values, keys=True, expand=parts):
        kind = type(value)
        if kind is DimRef and id(value) not in seen:
            seen.add(id(value))
            yield value
        elif kind is str and strings is not None:
            strings.add(value)


def content_owners(values: Iterable) -> Iterator[object]:
    """The owner of every ContentRef in ``values`` (a ``by_content`` marker): what its hash is made of."""
    return (
        value.owner for value in leaves(values, expand=_reference, whole=(ContentRef,)) if type(value) is ContentRef
    )


def _reference(value: Any) -> Iterable:
    return (value.reference,) if type(value) is ContentRef else ()

"""What values hold, found without recursion: their dims, their strings, and the code that may read names."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Optional

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._serialization.callables import ContentRef
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef
from i6_rc_jobs._serialization.values import IMPORTED_TYPES, wrapper_code
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
        if type(value) is str:
            codes.append(value)
        elif isinstance(value, CodeWrapper) and type(value) not in (DimRef, MarkedRef):
            if isinstance(value.code, DelayedBase):
                unreadable = True
            elif type(value.code) is str:  # other code is refused with its path by the walk that hashes
                codes.append(wrapper_code(value))
        elif isinstance(value, IMPORTED_TYPES):
            texts = function_texts(value)
            unreadable = unreadable or texts is None
            codes.extend(texts or ())
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
        if type(value) is MarkedRef:
            return (value.dim,)
        if type(value) is DimRef and id(value) not in expanded:
            expanded.add(id(value))
            return value.dependencies()
        return ()

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

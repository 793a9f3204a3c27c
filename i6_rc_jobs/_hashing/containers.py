"""The values in a config's containers, walked without recursion (a net dict may be deeper than Python's stack)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional


def leaves(
    values: Iterable,
    *,
    keys: bool = False,
    expand: Optional[Callable[[Any], Iterable]] = None,
    whole: tuple[type, ...] = (),
) -> Iterator[Any]:
    """Every value in ``values`` that is no dict, list, tuple or set, at any depth (with the dict keys if ``keys``),
    without recursion, and every value of a type in ``whole`` (a tuple subclass taken as one value); what ``expand``
    gives for a leaf is walked too, after the caller has seen the leaf."""
    stack = list(values)
    pop, extend = stack.pop, stack.extend
    while stack:
        value = pop()
        kind = type(value)
        if kind not in _SCALARS and kind not in whole:
            if isinstance(value, dict):
                if keys:
                    extend(value)
                extend(value.values())
                continue
            if isinstance(value, (list, tuple, set, frozenset)):
                extend(value)
                continue
        yield value
        if expand is not None:
            extend(expand(value))


#: The types most leaves have, which are no containers (checked first: the walk is most of a hash's time).
_SCALARS = frozenset({str, int, float, bool, type(None)})

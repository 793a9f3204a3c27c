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
    while stack:
        value = stack.pop()
        opened = type(value) not in whole
        if opened and isinstance(value, dict):
            if keys:
                stack.extend(value)
            stack.extend(value.values())
        elif opened and isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
        else:
            yield value
            if expand is not None:
                stack.extend(expand(value))

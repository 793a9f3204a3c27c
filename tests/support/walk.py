"""Walking the nested dicts of a config in tests."""

from __future__ import annotations

from typing import Any, Iterator


def leaves(value: Any) -> Iterator[Any]:
    """Every non-container value inside nested dicts (their keys too), lists, tuples and sets, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(key)
            yield from leaves(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def distinct(values: Iterator[Any], cls: type) -> dict[int, Any]:
    """The distinct objects (by identity) of class ``cls`` among ``values``, in order of first occurrence."""
    return {id(v): v for v in values if isinstance(v, cls)}

"""Models built out of the manager and cached by what they depend on: ``build(builder, *args, **kwargs)`` returns
what ``builder(*args, **kwargs)`` returns, a ReturnnCommonSerializer, from the cache if nothing the build depended
on has changed, else built in a process of its own (forked from a build server that has imported the libraries).
See docs/guide/builds.md."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from i6_rc_jobs._builds.client import BuildError, Builds, stop_servers
from i6_rc_jobs._builds.record import depend_on

__all__ = ["build", "build_many", "Builds", "BuildError", "depend_on", "stop_servers"]

_default = Builds()


def build(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``builder(*args, **kwargs)``, built in a process of its own and cached (see :class:`Builds` for options)."""
    return _default.build(builder, *args, **kwargs)


def build_many(calls: Iterable[Any]) -> list[Any]:
    """The results of many calls (``functools.partial`` objects or ``(builder, args, kwargs)``), built in parallel."""
    return _default.build_many(calls)

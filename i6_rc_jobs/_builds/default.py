"""``build`` and ``build_many``: the builds of returnn_common serializers with the manager's settings (see
:class:`~i6_rc_jobs._builds.builds.Builds` for others)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from i6_rc_jobs._builds.builds import Builds

_default = Builds()


def build(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``builder(*args, **kwargs)``, built in a process of its own and cached (see :class:`Builds` for options)."""
    return _default.build(builder, *args, **kwargs)


def build_many(calls: Iterable[Any]) -> list[Any]:
    """The results of many calls (``functools.partial`` objects or ``(builder, args, kwargs)``), built in parallel."""
    return _default.build_many(calls)

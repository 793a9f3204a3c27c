"""The dim prolog: the lines that define the dims a piece of code names, dependencies first."""

from __future__ import annotations

from typing import Iterable

from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._serialization.pycode import CodeWriter
from i6_rc_jobs._serialization.refs import DimRef


def dim_lines(writer: CodeWriter, used: Iterable[DimRef]) -> list[str]:
    """``name = definition`` for each used dim and everything it is derived from, each once: by name, each after
    what it is derived from (deterministic, whatever the order the dims were met in). The imported globals need no
    line."""
    lines: list[str] = []
    done: set[int] = set()
    walking: set[int] = set()  # expanded, not done: met again unexpanded, it is derived from itself
    for ref in sorted(used, key=lambda r: r.name):
        stack = [(ref, False)]
        while stack:
            dim, expanded = stack.pop()
            if id(dim) in done:
                continue
            if not expanded:
                if id(dim) in walking:
                    raise SerializationError(f"DimRef {dim.name!r} is derived from itself")
                walking.add(id(dim))
                stack.append((dim, True))
                stack.extend((dep, False) for dep in reversed(dim.dependencies()))
                continue
            done.add(id(dim))
            writer.use_dim(dim)
            lines.extend(dim.lines())
    return lines

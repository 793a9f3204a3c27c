"""How a build fails in the manager: a :class:`BuildError` that quotes the end of the failed process's output."""

from __future__ import annotations

from pathlib import Path

_LOG_LINES = 60


class BuildError(Exception):
    """A build failed: the message has the builder's traceback and the end of its output."""


def tail(path: Path) -> str:
    """The last lines of a build's or server's log, for the message of its error."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no output)"
    return "\n".join(lines[-_LOG_LINES:])

"""Whether this process is a build process: a build asked for there runs the builder in this process, as part of the
outer build (whose recording sees what it depends on), not in a build process of its own."""

from __future__ import annotations

#: Set only by :func:`enter`, which the build server calls in each build process.
IN_BUILD = False


def enter() -> None:
    """Marks this process as a build process (the build server's child, before it calls the builder)."""
    global IN_BUILD
    IN_BUILD = True

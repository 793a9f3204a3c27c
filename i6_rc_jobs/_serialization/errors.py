"""The one error type for input that cannot be serialized: it names the object and where it sits."""

from __future__ import annotations

import re


class SerializationError(ValueError):
    """Raised deep in a walk; each enclosing container prepends its key, so the message ends up with the full path,
    e.g. ``network['enc']['subnetwork']['ff']['out_dim']``, at no cost when nothing goes wrong."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []

    def at(self, step: str) -> SerializationError:
        """Prepends one path step (``['key']``, ``[3]``, a root name) and returns self, for ``raise e.at(...)``."""
        self.path.insert(0, step)
        return self

    def __str__(self) -> str:
        return f"{''.join(self.path) or '<root>'}: {self.problem}"


def describe(obj: object) -> str:
    """A short, safe description of an offending object for error messages."""
    try:
        text = repr(obj)
    except Exception as exc:  # a broken __repr__ must not hide the real problem
        text = f"<repr failed: {exc!r}>"
    text = re.sub(r"\s*\n\s*", " ", text)  # the message is one line (numpy's repr spans lines)
    if len(text) > 120:
        text = text[:117] + "..."
    return f"{text} (type {type(obj).__module__}.{type(obj).__qualname__})"

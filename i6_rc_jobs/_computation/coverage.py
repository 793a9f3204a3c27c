"""Which lines of watched files (the setup's code) ran while a model was constructed and while its forward ran:
what the capture can vouch for. A line that never ran (a branch the capture did not take, a method it never called)
is code whose effect no captured graph shows, so the code hash keeps counting it (see ``_code_hash.computed``)."""

from __future__ import annotations

import contextlib
import os
import sys
from types import FrameType
from typing import Any, Callable, Iterator, Optional

Tracer = Callable[[FrameType, str, Any], Optional[Callable[..., Any]]]


class Lines:
    """The lines run in each watched file (by its real path), gathered in phases (``"construction"``, ``"forward"``)."""

    def __init__(self, watched: frozenset[str]):
        self.watched = watched
        self.ran: dict[str, dict[str, set[int]]] = {}
        self._known: dict[str, bool] = {}

    def _is_watched(self, filename: str) -> bool:
        known = self._known.get(filename)
        if known is None:
            known = self._known[filename] = os.path.realpath(filename) in self.watched
        return known

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Records the lines run meanwhile (in this thread) under ``name``; nothing where no file is watched."""
        if not self.watched:
            yield
            return
        seen = self.ran.setdefault(name, {})

        def local(frame: FrameType, event: str, arg: Any) -> Optional[Tracer]:
            if event == "line":
                seen.setdefault(os.path.realpath(frame.f_code.co_filename), set()).add(frame.f_lineno)
            return local

        def calls(frame: FrameType, event: str, arg: Any) -> Optional[Tracer]:
            if event == "call" and self._is_watched(frame.f_code.co_filename):
                return local
            return None

        before = sys.gettrace()
        sys.settrace(calls)
        try:
            yield
        finally:
            sys.settrace(before)

    def to_json(self) -> dict[str, dict[str, list[int]]]:
        return {
            phase: {path: sorted(lines) for path, lines in sorted(files.items())} for phase, files in self.ran.items()
        }

"""The options of the job's RETURNN config, known while a config that holds ``by_content`` values is hashed or
written: a model's construction may read them through ``get_global_config()`` (RETURNN-frontend setups do in
``get_model``), so its code is recorded with them (:mod:`i6_rc_jobs._code_hash.config_reads`). Only values that are
Python literals can be given to a build; the others are named, so that reading one fails in one line."""

from __future__ import annotations

import ast
import contextlib
from contextvars import ContextVar
from typing import Any, Iterable, Iterator, Optional

#: The job's options while a config is hashed or written: (plain options, names of the others); None outside.
JOB_CONFIG: ContextVar[Optional[tuple[dict[str, Any], frozenset[str]]]] = ContextVar("JOB_CONFIG", default=None)


@contextlib.contextmanager
def job_config(items: Iterable[tuple[str, Any]]) -> Iterator[None]:
    """Makes ``items`` (a config's options) known as the job's, over those of a config around (the values of a
    serializer in an i6_core config's prolog add to the config's own)."""
    around, around_unavailable = JOB_CONFIG.get() or ({}, frozenset())
    options, unavailable = dict(around), set(around_unavailable)
    for key, value in items:
        if is_plain(value):
            options[key] = value
            unavailable.discard(key)
        else:
            options.pop(key, None)
            unavailable.add(key)
    token = JOB_CONFIG.set((options, frozenset(unavailable)))
    try:
        yield
    finally:
        JOB_CONFIG.reset(token)


def canonical(value: Any) -> str:
    """The code of a plain value, alike for equal values (dicts and sets in sorted order)."""
    if type(value) is dict:
        items = sorted((canonical(key), canonical(item)) for key, item in value.items())
        return "{" + ", ".join(f"{key}: {item}" for key, item in items) + "}"
    if type(value) is set:
        return "{" + ", ".join(sorted(canonical(item) for item in value)) + "}" if value else "set()"
    if type(value) in (list, tuple):
        inner = ", ".join(canonical(item) for item in value)
        return f"[{inner}]" if type(value) is list else f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)


def is_plain(value: Any) -> bool:
    """Whether ``value`` is made of Python literals only (numbers, strings, bytes, None, and lists, tuples, sets and
    dicts of them) that :func:`ast.literal_eval` reads back equal: what a build can be given."""
    if type(value) is dict:
        return all(is_plain(key) and is_plain(item) for key, item in value.items())
    if type(value) in (list, tuple, set):
        return all(is_plain(item) for item in value)
    if type(value) not in (str, bytes, int, float, bool, type(None)):
        return False
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError):  # nan, inf
        return False


def options_text(options: dict[str, Any], unavailable: frozenset[str]) -> str:
    """What a build is given of a job's config: its plain ``options`` and the names of the others, as code."""
    return f"({canonical(options)}, {canonical(tuple(sorted(unavailable)))})"

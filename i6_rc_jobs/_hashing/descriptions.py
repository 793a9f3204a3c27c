"""What RETURNN and code can read of dim descriptions and variable names, which the canonical form hashes where they
may be read."""

from __future__ import annotations

import re
from typing import Any, Optional

from i6_rc_jobs._serialization.refs import DIM_SUFFIX, DimRef
from i6_rc_jobs._hashing.walks import code_texts, dims_and_strings, dims_in


def tag_name(axis: str) -> Optional[str]:
    """The (part of a) description an axis string finds a dim by in RETURNN (``Data.get_axes_from_description``
    lowercases it and matches it as a substring of each dim's or its same-base's description), or None."""
    lower = axis.lower()
    for prefix in ("stag:", "tag:"):
        if lower.startswith(prefix):
            return lower[len(prefix) :]
    if lower.startswith("stag-single:"):
        parts = lower.split(":", 2)  # stag-single:<index>:<name>
        return parts[2] if len(parts) == 3 else None
    return None


class DescriptionReadings:
    """What RETURNN and code can read of dim descriptions and variable names (denied by default: whatever may be read
    is hashed). Axis strings (``stag:time``) find dims by (a part of) their description: a plain dim's token says
    which of their names its description matches (a rename that keeps them keeps the hash); the descriptions of the
    dims derived dims are made of are hashed in full, since RETURNN composes the derived dims' descriptions from them.
    A copy matches by its own description and by its base's (the base's token says which names that matches). A
    string with ``tag:`` elsewhere than at its start (an ``eval`` string calling ``get_axis_from_description``) can
    read any description: all are hashed in full. A dim whose variable name (made from its description) occurs as an
    identifier in a str value, a CodeWrapper's code or a function's or class's code is hashed with its name. Functions
    and classes held as values are searched by their source, constants, defaults, closure and the globals they name
    (:func:`.function_texts`). Code the manager cannot read (a CodeWrapper of a Sisyphus value, whose code is known
    only in the worker; a function whose source cannot be had) makes every description and name hashed."""

    def __init__(self, names: set[str], dims: list[DimRef], any_description: bool, read_names: Optional[set[str]]):
        self.names = sorted(names)
        self._any_description = any_description
        self._read_names = read_names  # None: any
        derived = [dim for dim in dims if dim.op is not None]
        self._made_into_derived = {id(dim) for dim in dims_in(dep for dim in derived for dep in dim.dependencies())}

    @classmethod
    def find(cls, sections: list[tuple[str, Any]]) -> Optional[DescriptionReadings]:
        codes, unreadable = code_texts(value for _, value in sections)
        distinct = set(codes)
        dims, strings = dims_and_strings(value for _, value in sections)
        names = {name for text in strings | distinct if (name := tag_name(text)) is not None}  # a function's constants
        any_description = unreadable or any("tag:" in code.lower() and tag_name(code) is None for code in distinct)
        read_names: Optional[set[str]] = None
        if not unreadable:
            identifiers = {word for code in distinct if DIM_SUFFIX in code for word in _IDENTIFIER.findall(code)}
            read_names = {dim.name for dim in dims if dim.name in identifiers}
        if names or any_description or read_names != set():
            return cls(names, dims, any_description, read_names)
        return None

    def extras(self, ref: DimRef) -> str:
        if ref.global_name is not None:
            return ""
        name = f" name={ref.name!r}" if self._read_names is None or ref.name in self._read_names else ""
        if ref.op is not None or (ref.copy_of is not None and ref.description is None):
            return name  # a copy without a description of its own is found as its base, whose token says by what
        description = ref.written_description()
        if (self._any_description or id(ref) in self._made_into_derived) and not ref.auto_generated:
            return f" description={description!r}{name}"  # auto-generated: in full already
        matched = [name for name in self.names if name in (description or "").lower()]
        return (f" read as {matched!r}" if matched else "") + name


#: An identifier in code (a dim's variable name is one).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

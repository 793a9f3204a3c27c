"""Walking and editing net dicts: layers with their paths, renames everywhere a name is read, dims and strings in them."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from i6_core.returnn.config import CodeWrapper
from returnn.tensor import Dim

from .dims import _all_dims

Net = dict[str, Any]


def _first(sources: Any) -> Any:
    return sources if type(sources) is str else sources[0]


def _replace_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` with every str in it (in dicts, lists, tuples; dict keys too: a layer's, an axis string's; the code of
    a CodeWrapper) replaced by ``fn`` (in place for dicts), except layer classes and a str "unit" (a rec layer's cell:
    a layer may be named as a class or a cell is, "cumsum")."""
    if type(value) is str:
        return fn(value)
    if type(value) is CodeWrapper and type(value.code) is str:
        return CodeWrapper(fn(value.code))
    if type(value) is dict:
        items = list(value.items())
        value.clear()
        for key, item in items:
            new_key = fn(key) if type(key) is str else key
            kept = key == "class" or (key == "unit" and type(item) is str)
            value[new_key] = item if kept else _replace_strings(item, fn)
        return value
    if type(value) in (list, tuple):
        return type(value)(_replace_strings(item, fn) for item in value)
    return value


@dataclass
class Where:
    """A layer in a net dict: its container dict, its name, its path."""

    container: dict
    name: str
    path: str
    kind: str  # "root", "sub" (a subnetwork's body), "loop" (a rec unit)

    @property
    def desc(self) -> dict:
        return self.container[self.name]


def layers_of(net: Net, path: str = "", kind: str = "root") -> Iterator[Where]:
    for name, desc in list(net.items()):
        if type(desc) is not dict or "class" not in desc:
            continue
        yield Where(net, name, path + name, kind)
        if type(desc.get("unit")) is dict:
            yield from layers_of(desc["unit"], path + name + "/", "loop")
        if type(desc.get("subnetwork")) is dict:
            yield from layers_of(desc["subnetwork"], path + name + "/", "sub")


KEPT_NAMES = frozenset({"output", "data", "classes", "source", "end"})


def _renamable(w: Where) -> bool:
    return w.name not in KEPT_NAMES and "loss" not in w.desc and "is_output_layer" not in w.desc


def rename(net: Net, old: str, new: str, in_code: bool = True) -> None:
    """Renames the (globally unique) layer ``old`` to ``new`` everywhere: keys, references (path segments after
    prefixes), and with ``in_code`` names quoted in code strings."""
    segment = re.compile(rf"(?<![\w]){re.escape(old)}(?![\w])")

    def fn(text: str) -> str:
        if text == old:
            return new
        if " " in text or "(" in text:
            return segment.sub(new, text) if in_code else text
        parts = re.split(r"([:/])", text)
        return "".join(new if part == old else part for part in parts)

    _replace_strings(net, fn)


def references_to(net: Net, name: str) -> int:
    pattern = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    return sum(bool(pattern.search(text)) for text in _all_strings(net))


def _fresh(net: Net, stem: str) -> str:
    names = {w.name for w in layers_of(net)}
    i = 0
    while f"{stem}{i}" in names:
        i += 1
    return f"{stem}{i}"


def _map_dims(value: Any, fn: Callable[[Dim], Dim], only_first: bool = False) -> Any:
    done = [False]

    def walk(v: Any) -> Any:
        if isinstance(v, Dim):
            if only_first and done[0]:
                return v
            new = fn(v)
            done[0] = done[0] or new is not v
            return new
        if type(v) is dict:
            for key in list(v):
                v[key] = walk(v[key])
            return v
        if type(v) in (list, tuple):
            return type(v)(walk(i) for i in v)
        if type(v) is set:
            return {walk(i) for i in v}
        return v

    return walk(value)


def _contains_dim(net: Net, dim: Dim) -> bool:
    found = [False]
    _map_dims(
        copy.deepcopy(net, {id(d): d for d in _all_dims()}), lambda d: found.__setitem__(0, found[0] or d is dim) or d
    )
    return found[0]


def _all_strings(value: Any) -> list[str]:
    found: list[str] = []
    _replace_strings(copy.deepcopy(value, {id(d): d for d in _all_dims()}), lambda t: found.append(t) or t)
    return found

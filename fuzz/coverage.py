"""Coverage: which layer options the pairs exercised. Counted per (layer class, option): the pairs whose nets have
it, and the pairs that differ in it; listed over the entries of the hashes' layer-option table
(``i6_rc_jobs._hashing.layer_options.READINGS``) where that table exists, else over what the nets held."""

from __future__ import annotations

import importlib
from typing import Any, Optional

from .dims import py
from .nets import layers_of


def options_of(base: Any, variant: Any, staged: bool) -> tuple[tuple, tuple]:
    """The (class, option) pairs set in any layer of either net, and those whose values differ between them (by
    layer path)."""
    found: list[dict] = []
    for value in (base, variant):
        seen: dict = {}
        for net in [value[e] for e in sorted(value)] if staged else [value]:
            for w in layers_of(net):
                cls = w.desc.get("class")
                for option, option_value in w.desc.items():
                    if option != "class" and type(cls) is str:
                        seen.setdefault((cls, option), set()).add((w.path, py(option_value)))
        found.append(seen)
    present = found[0].keys() | found[1].keys()
    touched = {key for key in present if found[0].get(key) != found[1].get(key)}
    return tuple(sorted(present)), tuple(sorted(touched))


def table() -> Optional[dict[str, dict[str, Any]]]:
    """The hashes' layer-option table, if this version of i6_rc_jobs has it."""
    try:
        module = importlib.import_module("i6_rc_jobs._hashing.layer_options")
    except ModuleNotFoundError:
        return None
    return module.READINGS


def print_coverage(counts: dict[tuple[str, str], list[int]], out: Any) -> None:
    """``counts``: (class, option) -> [pairs with it, pairs that differ in it]."""
    readings = table()
    if readings is None:
        print(
            "\ncoverage per layer option (no layer-option table in this version: the options the nets held)\n", file=out
        )
        keys = sorted(counts)
    else:
        keys = sorted((cls, option) for cls, options in readings.items() for option in options)
        never = [f"{cls}.{option}" for cls, option in keys if not counts.get((cls, option), [0, 0])[0]]
        print(
            f"\ncoverage of the layer-option table: {len(keys) - len(never)} of {len(keys)} entries in pairs", file=out
        )
        if never:
            print(f"  never in a pair: {', '.join(never)}", file=out)
        print(file=out)
    print("| class | option | pairs | pairs that change it |", file=out)
    print("|---|---|---|---|", file=out)
    for cls, option in keys:
        present, touched = counts.get((cls, option), [0, 0])
        print(f"| {cls} | {option} | {present} | {touched} |", file=out)

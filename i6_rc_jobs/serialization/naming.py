"""Readable, unique variable names for dims."""

from __future__ import annotations

import builtins
import keyword
import re
from typing import Callable, Optional, Sequence

from .refs import DimRef

#: Names the written config defines or imports itself. Every dim name ends in ``_dim`` (and no RETURNN option does),
#: so dims cannot shadow config options; these are the rest that must stay free.
RESERVED = frozenset(
    {"Dim", "batch_dim", "single_step_dim", "extern_data", "network", "get_network", "config"}
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
    | set(dir(builtins))
)
_MAX_STEM = 60


def dim_name_stem(description: Optional[str]) -> str:
    """``'enc/self-att:key (2)'`` -> ``'enc_self_att_key_2_dim'``: identifier characters only, ending in ``_dim``."""
    stem = re.sub(r"[^0-9a-zA-Z]+", "_", description or "").strip("_").lower()
    stem = stem.removesuffix("_dim").removesuffix("dim").rstrip("_") or "unnamed"
    if stem[0].isdigit():
        stem = "d" + stem
    return stem[:_MAX_STEM].rstrip("_") + "_dim"


def assign_names(refs: Sequence[DimRef], canonical_order: Callable[[], list[DimRef]]) -> None:
    """Makes the names of ``refs`` (their stems so far) unique: the stem if free, else the stem with ``_1``, ``_2``,
    ... before ``_dim``, handed out in canonical order (the hash's order of first occurrence), so that names do not
    depend on dict insertion order. That order is computed only when stems collide."""
    stems = [ref.name for ref in refs]
    if len(set(stems)) == len(stems) and not RESERVED.intersection(stems):
        return
    rank = {id(ref): i for i, ref in enumerate(canonical_order())}
    taken: set[str] = set(RESERVED)
    for ref in sorted(refs, key=lambda r: rank[id(r)]):
        stem = name = ref.name
        i = 0
        while name in taken:
            i += 1
            name = f"{stem[:-4]}_{i}_dim"
        taken.add(name)
        ref.code = name

"""Readable, unique variable names for dims."""

from __future__ import annotations

import re
from typing import Optional

from i6_rc_jobs._serialization.refs import DIM_SUFFIX, GLOBAL_NAMES

#: Every dim name ends in ``_dim`` (:data:`DIM_SUFFIX`), which no keyword, builtin or RETURNN option does, and
#: nothing else the written code defines or imports but the globals (config keys are checked when the config is
#: written).
RESERVED = frozenset(GLOBAL_NAMES[1:])
_MAX_STEM = 60


def dim_name_stem(description: Optional[str]) -> str:
    """``'enc/self-att:key (2)'`` -> ``'enc_self_att_key_2_dim'``: identifier characters only, ending in ``_dim``."""
    stem = re.sub(r"[^0-9a-zA-Z]+", "_", description or "").strip("_").lower()
    stem = stem.removesuffix("_dim").removesuffix("dim").rstrip("_") or "unnamed"
    if stem[0].isdigit():
        stem = "d" + stem
    return stem[:_MAX_STEM].rstrip("_") + DIM_SUFFIX


class NameAllocator:
    """Hands out each name once: the stem if free, else the stem with ``_1``, ``_2``, ... before ``_dim`` (the first
    suffix free).

    Names are never given back, so the suffixes a stem tried before stay taken: the search for a stem resumes after
    its last suffix, and naming n dims of one description is linear, not quadratic."""

    def __init__(self):
        self._taken = set(RESERVED)
        self._last_suffix: dict[str, int] = {}  # stem -> the suffix it was last given (0: the stem itself)

    def allocate(self, description: Optional[str]) -> str:
        stem = dim_name_stem(description)
        i = self._last_suffix.get(stem, -1) + 1
        name = stem if i == 0 else f"{stem[:-4]}_{i}_dim"
        while name in self._taken:
            i += 1
            name = f"{stem[:-4]}_{i}_dim"
        self._taken.add(name)
        self._last_suffix[stem] = i
        return name

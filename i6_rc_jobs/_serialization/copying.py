"""Deep copies of a serializer's dicts: containers by a fast loop, everything else by ``copy.deepcopy`` with the
shared memo, so that DimRefs shared by several positions stay shared and Sisyphus paths and jobs copy their own way
(a Job is its own copy; a pickle round trip would instead re-enter Sisyphus's job cache and reset job state)."""

from __future__ import annotations

import copy
from typing import Any

from i6_rc_jobs._serialization.values import LEAF_TYPES, is_namedtuple


def copy_tree(value: Any, memo: dict) -> Any:
    cls = type(value)
    if cls in LEAF_TYPES:
        return value
    if cls is dict:
        return {
            k if type(k) is str else copy_tree(k, memo): v if type(v) in LEAF_TYPES else copy_tree(v, memo)
            for k, v in value.items()
        }
    if cls is list:
        return [v if type(v) in LEAF_TYPES else copy_tree(v, memo) for v in value]
    if cls is tuple or cls is set or cls is frozenset or is_namedtuple(value):
        items = [v if type(v) in LEAF_TYPES else copy_tree(v, memo) for v in value]
        return cls(*items) if is_namedtuple(value) else cls(items)
    return copy.deepcopy(value, memo)

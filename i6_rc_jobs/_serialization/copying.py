"""Deep copies of a serializer's dicts: containers by a fast loop, everything else by ``copy.deepcopy`` with the
shared memo, so that DimRefs shared by several positions stay shared and Sisyphus paths and jobs copy their own way
(a Job is its own copy; a pickle round trip would instead re-enter Sisyphus's job cache and reset job state)."""

from __future__ import annotations

import copy
from typing import Any, assert_never

from i6_rc_jobs._serialization.kinds import LEAF_TYPES, kind_of


def copy_tree(value: Any, memo: dict) -> Any:
    kind = kind_of(value)
    match kind:
        case "str" | "int" | "float" | "plain":
            return value
        case "dict":
            return {
                k if type(k) is str else copy_tree(k, memo): v if type(v) in LEAF_TYPES else copy_tree(v, memo)
                for k, v in value.items()
            }
        case "list":
            return [v if type(v) in LEAF_TYPES else copy_tree(v, memo) for v in value]
        case "tuple" | "set" | "frozenset" | "namedtuple":
            items = [v if type(v) in LEAF_TYPES else copy_tree(v, memo) for v in value]
            return type(value)(*items) if kind == "namedtuple" else type(value)(items)
        case (
            "complex"
            | "dim_ref"
            | "marked_ref"
            | "partial_ref"
            | "named_ref"
            | "content_ref"
            | "wrapper"
            | "delayed"
            | "numpy"
            | "imported"
            | "raw_dim"
            | "raw_marked_dim"
            | "dict_subclass"
            | "partial"
            | "module"
            | "content_owner"
            | "i6_core_object"
            | "other"
        ):
            return copy.deepcopy(value, memo)
        case _:
            assert_never(kind)

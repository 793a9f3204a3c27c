"""extern_data dims whose sizes RETURNN would not make again from the written config are refused.

A dim is written without its sizes (``dyn_size_ext``, see :mod:`.capture`), and with their template only if it is
over other dims than the batch. For a dim that a layer makes, the layer sets the sizes again when RETURNN builds the
net. For extern data nothing does: RETURNN's ``_create_size_placeholder`` feeds sizes shaped like the dim's template,
and makes one of ``[batch]`` (``[]`` without a batch axis) and ``Tensor.size_dtype`` for a dim without. Extern data
is fed per sequence: a dim whose sizes are over other dims or of another dtype is refused with its path."""

from __future__ import annotations

from typing import Any, Optional

from returnn.tensor import Dim, Tensor

from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.values import key_step

AXES_FIELDS = ("dim_tags", "dims")
"""The options of an extern_data entry that list its axes (RETURNN's ``Tensor(dims=...)``, old ``dim_tags``)."""


def check_data_sizes(extern_data: dict[str, Any]) -> None:
    """Refuses an axis of an extern_data entry whose sizes template RETURNN would make otherwise for the written dim."""
    for key, entry in extern_data.items():
        if not isinstance(entry, dict):
            continue
        for field in AXES_FIELDS:
            axes = entry.get(field)
            if not isinstance(axes, (list, tuple)):
                continue
            with_batch = any(isinstance(axis, Dim) and axis.is_batch_dim() for axis in axes)
            for i, axis in enumerate(axes):
                problem = _lost_sizes(axis, with_batch) if isinstance(axis, Dim) else None
                if problem is not None:
                    raise SerializationError(problem).at(f"[{i}]").at(key_step(field)).at(key_step(key)).at(
                        "extern_data"
                    )


def _lost_sizes(dim: Dim, with_batch: bool) -> Optional[str]:
    """Why the written ``dim`` would get other sizes in RETURNN's extern data than ``dim``, or None."""
    if dim.is_batch_dim() or not dim.is_dynamic():
        return None
    base = dim.get_same_base()
    for own in (dim,) if base is dim else (dim, base):  # a copy's, and its base's (which the copy is made from)
        sizes: Optional[Tensor] = own.dyn_size_ext
        if sizes is None:
            continue
        per_sequence = [d.is_batch_dim() for d in sizes.dims] == ([True] if with_batch else [])
        if not per_sequence or sizes.dtype != Tensor.size_dtype:
            over = [d.description for d in sizes.dims]
            return (
                f"{describe(dim)} has sizes (dyn_size_ext) over {over} of {sizes.dtype}, but RETURNN feeds the written "
                f"dim's sizes per sequence ({Tensor.size_dtype}): give extern data dims sizes per sequence, or make "
                f"this dim in the network, by the layer that computes its sizes"
            )
    return None

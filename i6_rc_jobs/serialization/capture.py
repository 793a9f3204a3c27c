"""RETURNN ``Dim`` objects -> DimRefs. Needs ``returnn.tensor`` (not TensorFlow); used only while converting.

Identity rule: one Dim object is one DimRef. RETURNN also makes equal-but-distinct dims (``same_as`` copies, which
every Transformer has): such a copy becomes its base's DimRef when it differs from the base in nothing RETURNN acts
on, and otherwise ``base.copy(kind=..., match_priority=...)``, which RETURNN again treats as equal to the base;
copies of one base with one kind and match_priority are one DimRef.
Descriptions of copies are cosmetic and dropped. Dims that are equal without ``same_as`` (two auto-generated dims of
one description) stay two variables; both are written with ``auto_generated=True``, so RETURNN still finds them equal.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable, Optional

from returnn.tensor import Dim, batch_dim, single_step_dim
from returnn.tensor.marked_dim import MarkedDim

from .errors import SerializationError, describe
from .naming import NameAllocator
from .refs import BATCH_DIM, MARKERS, OPS_WITH_INT_LEFT, SINGLE_STEP_DIM, DimRef, MarkedRef, canonical_op


class DimCapture:
    """Remembers every Dim converted so far (by identity) and its DimRef, so one dim is one variable across
    extern_data and all network stages."""

    def __init__(self):
        self._refs: dict[int, DimRef] = {}
        self._alive: list[Any] = []  # keeps ids unique while the maps live (Dims, and adopted DimRefs)
        self._marked: dict[tuple[str, int], MarkedRef] = {}
        self._copies: dict[tuple[int, Optional[str], int], DimRef] = {}
        self._names = NameAllocator()
        self._seen: dict[int, int] = {}  # id(DimRef) -> when it was first met
        self._adopted: dict[int, DimRef] = {}  # id(DimRef of other dicts) -> this serializer's copy

    def ref(self, dim: Dim) -> DimRef:
        ref = self._refs.get(id(dim))
        if ref is None:
            ref = self._make(dim)
            self._refs[id(dim)] = ref
            self._alive.append(dim)
            self._seen.setdefault(id(ref), len(self._seen))
        return ref

    def known(self, dims: Iterable[Any]) -> Optional[list[DimRef]]:
        """The DimRefs of ``dims`` if all are dims converted before, else None. (Their order does not matter then;
        ``_alive`` keeps the ids of converted dims from being taken by other objects.)"""
        refs = self._refs
        out = []
        for dim in dims:
            ref = refs.get(id(dim))
            if ref is None:
                return None
            out.append(ref)
        return out

    def order_key(self, value: Any) -> tuple:
        """Orders set elements and non-string dict keys before they are converted, without looking at ids: dims met
        before by when, then new dims by what they are. Two new dims alike in description, kind, size, match_priority
        and auto_generated, first met together in one set, keep the set's order (only their names' suffixes can
        differ between processes then; the hash orders them by where else they occur)."""
        if isinstance(value, Dim):
            ref = self._refs.get(id(value))
            if ref is not None:
                return (1, self._seen[id(ref)])
            kind = value.kind.name if value.kind is not None else ""
            size = (0, value.dimension) if value.dimension is not None else (-1, 0)
            description = (value.description is not None, value.description or "")
            return (1, len(self._seen), description, kind, size, value.match_priority, value.auto_generated)
        if isinstance(value, MarkedDim):
            return (2, type(value).__name__, self.order_key(value.tag))
        return (0, type(value).__name__, repr(value))

    def marked(self, marked: MarkedDim) -> MarkedRef:
        marker = type(marked).__name__
        if marker not in MARKERS:
            raise SerializationError(f"unknown RETURNN marked dim {describe(marked)}")
        return self._marked_ref(marker, self.ref(marked.tag))

    def adopt(self, ref: DimRef) -> DimRef:
        """This serializer's own copy of a DimRef found in the input (taken from another serializer's dicts): its
        dims must be its own, or an edit through the other's dicts would change them behind its hash. The copy is
        named anew beside the new dims; one DimRef stays one copy."""
        if ref.global_name is not None:
            return ref
        own = self._adopted.get(id(ref))
        if own is None:
            own = copy.copy(ref)  # every field as it is, but the name and the refs it is made from
            own.copy_of = None if ref.copy_of is None else self.adopt(ref.copy_of)
            own.inputs = tuple(self.adopt(x) if isinstance(x, DimRef) else x for x in ref.inputs)
            own.code = self._names.allocate(ref.description or (own.copy_of or ref).name)
            self._adopted[id(ref)] = own
            self._alive.append(ref)
        return own

    def adopt_marked(self, marked: MarkedRef) -> MarkedRef:
        return self._marked_ref(marked.marker, self.adopt(marked.dim))

    def _marked_ref(self, marker: str, dim: DimRef) -> MarkedRef:
        key = (marker, id(dim))
        if key not in self._marked:
            self._marked[key] = MarkedRef(marker, dim)
        return self._marked[key]

    def _make(self, dim: Dim) -> DimRef:
        if dim is batch_dim or dim.is_batch_dim():  # RETURNN treats every batch-kind dim as equal to the global one
            return BATCH_DIM if not dim.match_priority else self._copy(BATCH_DIM, "batch", dim.match_priority)
        base = dim.get_same_base()
        if base is single_step_dim:
            return SINGLE_STEP_DIM
        kind = dim.kind.name if dim.kind is not None else None
        if base is not dim:
            base_ref = self.ref(base)
            if kind == base_ref.kind and dim.match_priority == base_ref.match_priority:
                return base_ref
            return self._copy(base_ref, kind, dim.match_priority)
        if dim.vocab is not None:
            raise SerializationError(
                f"{describe(dim)} carries a vocab, which cannot be written as code: put the vocab into the "
                f"extern_data entry ('vocab': {{...}}) instead"
            )
        op = dim.derived_from_op
        if op is not None and op.kind != "constant":
            return self._derived(dim, op)
        return DimRef(
            self._names.allocate(dim.description),
            kind=kind,
            size=dim.dimension,
            description=dim.description,
            match_priority=dim.match_priority,
            auto_generated=dim.auto_generated,
            special=dim.special,
            capacity=dim.capacity if dim.dimension is None else None,
        )

    def _copy(self, base: DimRef, kind: Optional[str], match_priority: int) -> DimRef:
        """``base.copy(kind=..., match_priority=...)``; copies alike are equal to each other, too: one variable."""
        key = (id(base), kind, match_priority)
        if key not in self._copies:
            name = self._names.allocate(base.name)
            self._copies[key] = DimRef(name, kind=kind, copy_of=base, match_priority=match_priority)
        return self._copies[key]

    def _derived(self, dim: Dim, op) -> DimRef:
        kind = canonical_op(op.kind)
        if kind is None or len(op.inputs) != 2:
            raise SerializationError(f"{describe(dim)} is derived by op {op!r}, which RETURNN cannot re-create")
        inputs = tuple(x.dimension if x.is_constant_static_dim() else self.ref(x) for x in op.inputs)
        if isinstance(inputs[0], int) and kind not in OPS_WITH_INT_LEFT:
            raise SerializationError(f"{describe(dim)}: op {kind!r} with a constant left operand has no code form")
        if dim.match_priority:
            raise SerializationError(f"{describe(dim)}: a derived dim with its own match_priority is not supported")
        return DimRef(
            self._names.allocate(dim.description),
            kind=dim.kind.name if dim.kind is not None else None,
            size=dim.dimension,
            description=dim.description,
            op=kind,
            inputs=inputs,
        )

"""RETURNN ``Dim`` objects -> DimRefs. Needs ``returnn.tensor`` (not TensorFlow); used only while converting.

Identity rule: one Dim object is one DimRef. RETURNN also makes equal-but-distinct dims (``same_as`` copies, which
every Transformer has): such a copy becomes its base's DimRef when it differs from the base in nothing RETURNN acts
on, and otherwise ``base.copy(kind=..., match_priority=..., description=...)``, which RETURNN again treats as equal
to the base; copies of one base with one kind, match_priority and description are one DimRef. A batch-kind copy of
another dim is such a copy, not the batch dim (RETURNN finds it equal to its base); a copy of another size than its
base, which RETURNN reads (a tensor's shape) but a written copy cannot carry, is refused. A copy's own
description counts: axis strings (``"stag:frames"``) find a copy by it as by its base's. Derived dims that RETURNN's
dim math makes one object (:func:`math_key`) are one DimRef. Dims that are equal without ``same_as`` (two
auto-generated dims of one description) stay two variables; both are written with ``auto_generated=True``, so RETURNN
still finds them equal. A copy that carries its base's derivation (RETURNN's ``declare_same_as`` gives it the base's
``derived_from_op``) keeps it (``keeps_op``): dim math on it simplifies as on its base; a copy without it is not its
base, if the base is derived.

Origins: each DimRef made from a Dim carries a random token of that Dim object (``origin``, kept in a table while the
Dim lives, never hashed nor written). A new serializer makes one DimRef of a raw Dim and of DimRefs of the same origin
taken from other serializers' dicts, and refuses them where edits made them differ.

What a Dim carries besides: ``undefined``, ``bounded_by`` and ``derived_from_tag`` are written and hashed (RETURNN's
equality, ``undefined`` and capacity follow them); a static ``capacity`` other than the size, too. ``dyn_size_ext``
of [batch] (or ``[]``) is RETURNN's run-time state, never configuration, and is dropped: a template is what RETURNN
makes for every dynamic dim it meets in a Tensor, sizes (a raw tensor) are one batch's (returnn_common's tests
serialize dims after a run); RETURNN makes both again for the written dim when it builds the net. A template over
other dims than the batch (``[batch, time]``: a length per frame, as ``top_k`` and ``range_from_length`` in a loop
or of a per-frame input make it) is part of what the dim is: it is written (``dyn_size_ext=Tensor(...)``, without
sizes) and hashed with its dims and dtype; in extern data :mod:`.data_sizes` refuses such a dim. A derived dim's
``derived_from_tag`` is one of its inputs, which RETURNN sets again when the written op runs.
A vocab (on the same base: copies share it) is written as its ``Vocabulary.create_vocab`` options (:mod:`.vocab`).
"""

from __future__ import annotations

import copy
import os
import uuid
import weakref
from typing import Any, Iterable, Optional

import returnn
from returnn.tensor import Dim, batch_dim, single_step_dim
from returnn.tensor.marked_dim import MarkedDim

try:
    from returnn.tensor._dim_extra import derived_capacity_memoized_dims
except ImportError as exc:  # what a Dim carries came with RETURNN 823b520e5: an older one cannot be read right
    where = os.path.dirname(returnn.__path__[0])
    raise ImportError(
        f"the serializer reads dims as RETURNN 2026-07-29 (823b520e5) and later make them (bounded_by, derived "
        f"capacities), but the manager imports RETURNN {returnn.__version__} from {where}: give the manager "
        f"(recipe/returnn) a RETURNN of then or later; the one that trains (returnn_root) may be older"
    ) from exc

from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.naming import NameAllocator
from i6_rc_jobs._serialization.values import plain_order_key
from i6_rc_jobs._serialization.refs import (
    BATCH_DIM,
    MARKERS,
    SINGLE_STEP_DIM,
    DimRef,
    MarkedRef,
    canonical_op,
    derived_shape,
    literal_code,
)
from i6_rc_jobs._serialization.vocab import vocab_options

_ORIGINS: dict[int, str] = {}  # id(Dim) -> its origin token, while the Dim lives


def origin_of(dim: Dim) -> str:
    """The origin token of a Dim object: the same in every serializer made from it in this process."""
    token = _ORIGINS.get(id(dim))
    if token is None:
        token = _ORIGINS[id(dim)] = uuid.uuid4().hex
        weakref.finalize(dim, _ORIGINS.pop, id(dim), None)
    return token


def _meaning(ref: DimRef) -> tuple:
    """What RETURNN acts on in a DimRef whose dependencies are this serializer's: two refs of one origin must agree
    in it to be one dim (descriptions are cosmetic but for auto-generated dims)."""
    refs = (*ref.inputs, ref.copy_of, ref.bounded_by, ref.op_of, *(ref.size_dims or ()))
    deps = tuple(id(x) if isinstance(x, DimRef) else x for x in refs)
    description = ref.description if ref.auto_generated or ref.copy_of is not None else None
    vocab = None if ref.vocab is None else literal_code(ref.vocab)
    flags = (ref.match_priority, ref.auto_generated, ref.special, ref.capacity, ref.undefined, ref.global_name)
    kept_op_and_vocab = (ref.keeps_op, vocab, ref.size_dims is None, ref.size_dtype)
    return (ref.kind, ref.size, description, ref.op, deps, id(ref.derived_from_tag), flags, kept_op_and_vocab)


def math_key(ref: DimRef) -> tuple:
    """What RETURNN's dim math finds a derived dim by (``Dim.__add__`` and the like look in ``cache_dim_math`` first):
    the op, the base of the dim whose method the written code calls (the first dim operand; the cache is that
    object's), and the other operands as RETURNN's ``Dim.__eq__`` compares them (a copy as its base, every batch dim
    alike, auto-generated dims by kind, size and description). Two derived dims alike in it are one object in the
    written config, so they are one DimRef. Keys hold ids of this serializer's DimRefs, which live as long as it."""
    owner = next(x for x in ref.inputs if isinstance(x, DimRef))

    def operand(x: Any) -> tuple:
        if not isinstance(x, DimRef):
            return ("int", x)
        base = x.copy_of or x
        if x is owner:
            return ("owner", id(base))
        if base.kind == "batch":
            return ("batch",)
        if base.auto_generated:
            return ("auto", base.kind, base.size, base.description)
        return ("dim", id(base))

    return (ref.op, tuple(map(operand, ref.inputs)))


def same_op(op: Any, other: Any) -> bool:
    """Whether two dim ops derive alike: one object, or the same kind and attributes over inputs that are one dim
    (the same base) or derived alike themselves, down to constants of one size (returnn_common computes the dim math
    of a copy again; the written copy takes its base's op, which derives the same dims)."""
    if op is other:
        return True
    if other is None or op.kind != other.kind or op.attribs != other.attribs or len(op.inputs) != len(other.inputs):
        return False
    return all(same_derivation(a, b) for a, b in zip(op.inputs, other.inputs))


def same_derivation(a: Dim, b: Dim) -> bool:
    """Whether two dims are one (the same base) or derived alike (see :func:`same_op`): one object in the written
    config, as RETURNN's dim math makes them."""
    a, b = a.get_same_base(), b.get_same_base()
    if a is b:
        return True
    op_a, op_b = a.derived_from_op, b.derived_from_op
    if op_a is None or op_b is None:
        return False
    if op_a.kind == "constant":
        return op_b.kind == "constant" and a.dimension == b.dimension and a.kind == b.kind
    return same_op(op_a, op_b)


def _sources(dim: Dim) -> list[Dim]:
    """The dims whose DimRefs ``DimCapture._make`` needs for ``dim``."""
    base = dim.get_same_base()
    if dim is batch_dim or (dim.is_batch_dim() and base.is_batch_dim()):
        return []
    if base is not dim:
        return [base]
    op = dim.derived_from_op
    if op is not None and op.kind != "constant":
        return [x for x in op.inputs if not x.is_constant_static_dim()]
    extra = dim._extra
    tags = [x for x in (extra.bounded_by, extra.derived_from_tag) if x is not None] if extra is not None else []
    return tags + list(_size_template(dim) or ())


def _size_template(dim: Dim) -> Optional[tuple[Dim, ...]]:
    """The dims a plain dim's sizes are over, if its template is over another dim than the batch (written), else
    None (RETURNN's default, or no template: dropped)."""
    sizes = dim.dyn_size_ext
    if sizes is None or dim.dimension is not None or all(d.is_batch_dim() for d in sizes.dims):
        return None
    return tuple(sizes.dims)


class DimCapture:
    """Remembers every Dim converted so far (by identity) and its DimRef, so one dim is one variable across
    extern_data and all network stages."""

    def __init__(self):
        self._refs: dict[int, DimRef] = {}
        self._alive: list[Any] = []  # keeps ids unique while the maps live (Dims, and adopted DimRefs)
        self._marked: dict[tuple[str, int], MarkedRef] = {}
        self._copies: dict[tuple[int, Optional[str], int, Optional[str], bool, bool, int], DimRef] = {}
        self._names = NameAllocator()
        self._seen: dict[int, int] = {}  # id(DimRef) -> when it was first met
        self._adopted: dict[int, DimRef] = {}  # id(DimRef of other dicts) -> this serializer's copy
        self._by_origin: dict[str, DimRef] = {}  # origin -> this serializer's DimRef of it
        self._by_math: dict[tuple, DimRef] = {}  # math_key -> this serializer's derived DimRef of it
        self._shapes: dict[int, tuple] = {}  # id(DimRef) -> (kind, size), see refs.derived_shape; no edits meanwhile

    def ref(self, dim: Dim) -> DimRef:
        ref = self._refs.get(id(dim))
        if ref is None:
            # What it is made from first, without recursion: chains of thousands of derived dims occur.
            stack, expanded = [dim], set()
            while stack:
                top = stack[-1]
                pending = [x for x in _sources(top) if id(x) not in self._refs] if id(top) not in expanded else []
                if pending:  # pushed reversed: made (and named) in the order _make asks for them
                    expanded.add(id(top))
                    stack.extend(reversed(pending))
                    continue
                stack.pop()
                if id(top) not in self._refs:
                    made = self._make(top)
                    self._refs[id(top)] = made
                    self._alive.append(top)
                    self._seen.setdefault(id(made), len(self._seen))
            ref = self._refs[id(dim)]
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
        return plain_order_key(value)

    def marked(self, marked: MarkedDim) -> MarkedRef:
        marker = type(marked).__name__
        if marker not in MARKERS:
            raise SerializationError(f"unknown RETURNN marked dim {describe(marked)}")
        return self._marked_ref(marker, self.ref(marked.tag))

    def adopt(self, ref: DimRef) -> DimRef:
        """This serializer's own copy of a DimRef found in the input (taken from another serializer's dicts): its
        dims must be its own, or an edit through the other's dicts would change them behind its hash. The copy is
        named anew beside the new dims; one DimRef stays one copy, and DimRefs of one origin are one (see the
        module)."""
        stack, expanded = [ref], set()
        while stack:  # what it is made from first (and named first, in order), without recursion
            top = stack[-1]
            if top.global_name is not None or id(top) in self._adopted:
                stack.pop()
                continue
            pending = [x for x in top.dependencies() if x.global_name is None and id(x) not in self._adopted]
            if pending:
                if id(top) in expanded:
                    raise SerializationError(f"DimRef {top.name!r} is derived from itself")
                expanded.add(id(top))
                stack.extend(reversed(pending))
                continue
            stack.pop()
            own = copy.copy(top)  # every field as it is, but the name and the refs it is made from
            own.bounded_by, own.derived_from_tag = map(self._own, (top.bounded_by, top.derived_from_tag))
            own.size_dims = None if top.size_dims is None else tuple(map(self._own, top.size_dims))
            own.inputs = tuple(map(self._own, top.inputs))
            own.copy_of = self._own(top.copy_of)
            self._adopted[id(top)] = self._unified(own, top.description or (own.copy_of or top).name)
            self._alive.append(top)
        return self._own(ref)

    def _own(self, operand: Any) -> Any:
        """The adopted DimRef of ``operand`` (adopted before), or ``operand`` itself (None, an int, a global)."""
        return self._adopted.get(id(operand), operand) if isinstance(operand, DimRef) else operand

    def _unified(self, ref: DimRef, name_source: Optional[str]) -> DimRef:
        """``ref`` named, or the DimRef of its origin made before, if the two agree in what RETURNN acts on; a derived
        dim that RETURNN's dim math makes one object with one made before (see :func:`math_key`) is that one."""
        key = math_key(ref) if ref.op is not None else None
        if key in self._by_math:
            same_math = self._by_math[key]
            if ref.vocab is not None and same_math.vocab != ref.vocab:
                raise SerializationError(
                    f"{same_math.name} = {same_math.definition()} is one object in RETURNN's dim math with a dim of another "
                    f"vocab ({ref.vocab!r}): give them one vocab"
                )
            return same_math
        known = self._by_origin.get(ref.origin) if ref.origin is not None else None
        if known is None:
            ref.code = self._names.allocate(name_source)
            if ref.origin is not None:
                self._by_origin[ref.origin] = ref
            if key is not None:
                self._by_math[key] = ref
            return ref
        if _meaning(known) != _meaning(ref):
            raise SerializationError(
                f"{known.name} = {known.definition()} and a DimRef {ref.definition()} stem from one RETURNN dim "
                f"(raw, or of two serializers) but differ after edits: make them agree, or make one a new dim"
            )
        return known

    def adopt_marked(self, marked: MarkedRef) -> MarkedRef:
        return self._marked_ref(marked.marker, self.adopt(marked.dim))

    def _marked_ref(self, marker: str, dim: DimRef) -> MarkedRef:
        key = (marker, id(dim))
        if key not in self._marked:
            self._marked[key] = MarkedRef(marker, dim)
        return self._marked[key]

    def _make(self, dim: Dim) -> DimRef:
        base = dim.get_same_base()
        # RETURNN treats every batch-kind dim as equal to the global one; a batch-kind copy of another dim also
        # equals its base (is_equal compares the bases first), which the global does not: it is a copy.
        if dim is batch_dim or (dim.is_batch_dim() and base.is_batch_dim()):
            return BATCH_DIM if not dim.match_priority else self._copy(BATCH_DIM, "batch", dim.match_priority)
        if base is single_step_dim:
            return SINGLE_STEP_DIM
        kind = dim.kind.name if dim.kind is not None else None
        extra = dim._extra
        undefined, bounded_by = (extra.undefined, extra.bounded_by) if extra is not None else (False, None)
        if base is not dim:
            if undefined or bounded_by is not None:
                raise SerializationError(f"{describe(dim)}: a same_as copy with its own undefined or bounded_by")
            if (
                dim.dimension != base.dimension
            ):  # RETURNN reads the copy's (a layer's out_dim): written, it is the base's
                raise SerializationError(
                    f"{describe(dim)}: a same_as copy of size {dim.dimension} of a dim of size {base.dimension} has no "
                    f"code form (a written copy has its base's size): give it its base's size, or make it a dim of its own"
                )
            base_ref = self.ref(base)
            # Its own description, which axis strings find it by (as its base's): RETURNN's copies have the base's.
            own = dim.description if dim.description and dim.description != base.description else None
            keeps_op, op_of = self._kept_op(dim, base)
            alike = kind == base_ref.kind and dim.match_priority == base_ref.match_priority and own is None
            alike = alike and dim.auto_generated == base_ref.auto_generated and op_of is None
            if alike and (keeps_op or base_ref.op is None):
                return base_ref
            return self._copy(base_ref, kind, dim.match_priority, own, keeps_op, dim.auto_generated, op_of)
        # A capacity RETURNN derived (through an op or bounded_by) and memoized is not the dim's own.
        capacity = None if dim.capacity == dim.dimension or dim in derived_capacity_memoized_dims else dim.capacity
        op = dim.derived_from_op
        if op is not None and op.kind != "constant":
            if undefined or bounded_by is not None or capacity is not None:
                raise SerializationError(
                    f"{describe(dim)}: a derived dim with its own undefined, bounded_by or capacity has no code form"
                )
            return self._derived(dim, op)
        tag = extra.derived_from_tag if extra is not None else None
        over = _size_template(dim)
        if bounded_by is not None and tag is not bounded_by:
            raise SerializationError(f"{describe(dim)}: derived_from_tag {describe(tag)} is not its bounded_by")
        ref = DimRef(
            "pending_dim",
            kind=kind,
            size=dim.dimension,
            description=dim.description,
            match_priority=dim.match_priority,
            auto_generated=dim.auto_generated,
            special=dim.special,
            capacity=capacity,
            undefined=undefined,
            bounded_by=None if bounded_by is None else self.ref(bounded_by),
            derived_from_tag=None if tag is None or bounded_by is not None else self.ref(tag),
            origin=origin_of(dim),
            vocab=None if dim.vocab is None else self._vocab(dim),
            size_dims=None if over is None else tuple(map(self.ref, over)),
            size_dtype=dim.dyn_size_ext.dtype if over is not None else "int32",
        )
        return self._unified(ref, dim.description)

    @staticmethod
    def _vocab(dim: Dim) -> dict:
        try:
            return vocab_options(dim.vocab)
        except SerializationError as e:
            raise SerializationError(f"{describe(dim)} carries {e.problem}") from None

    def _kept_op(self, dim: Dim, base: Dim) -> tuple[bool, Optional[DimRef]]:
        """Whether a ``same_as`` copy carries a derivation (``keeps_op``), and the derived dim whose it is if it is
        not its base's (``op_of``, see ``DimRef``)."""
        op = dim.derived_from_op
        if op is None or op.kind == "constant":
            return False, None
        if base.derived_from_op is None:
            raise SerializationError(
                f"{describe(dim)}: a same_as copy derived by {op!r} of a dim that is not derived has no code form: "
                f"make it a derived dim of its own, or a plain copy"
            )
        if same_op(op, base.derived_from_op):
            return True, None
        return True, self._derived(dim, op, origin=f"{origin_of(dim)} op")

    def _copy(
        self,
        base: DimRef,
        kind: Optional[str],
        match_priority: int,
        description: Optional[str] = None,
        keeps_op: bool = False,
        auto_generated: bool = False,
        op_of: Optional[DimRef] = None,
    ) -> DimRef:
        """``base.copy(kind=..., match_priority=..., description=...)``, keeping the base's derivation or not,
        auto-generated or not (RETURNN matches two auto-generated dims by their descriptions); copies alike are
        equal to each other, too: one variable. Its origin follows from its base's."""
        key = (id(base), kind, match_priority, description, keeps_op, auto_generated, id(op_of))
        if key not in self._copies:
            origin = None if base.origin is None else f"{base.origin} copy {kind} {match_priority}"
            if origin is not None and description is not None:
                origin += f" {description!r}"
            if origin is not None and keeps_op:
                origin += " keeps_op"
            if origin is not None and auto_generated:
                origin += " auto_generated"
            if origin is not None and op_of is not None:
                origin += f" op of {op_of.origin}"
            ref = DimRef(
                "pending_dim",
                kind=kind,
                copy_of=base,
                match_priority=match_priority,
                description=description,
                origin=origin,
                keeps_op=keeps_op,
                auto_generated=auto_generated,
                op_of=op_of,
            )
            self._copies[key] = self._unified(ref, description or base.name)
        return self._copies[key]

    def _derived(self, dim: Dim, op, origin: Optional[str] = None) -> DimRef:
        kind = canonical_op(op.kind)
        if kind is None or len(op.inputs) != 2:
            raise SerializationError(f"{describe(dim)} is derived by op {op!r}, which RETURNN cannot re-create")
        if dim.match_priority:
            raise SerializationError(f"{describe(dim)}: a derived dim with its own match_priority is not supported")
        tag = dim.derived_from_tag
        if tag is not None and all(tag is not x for x in op.inputs):
            raise SerializationError(f"{describe(dim)}: its derived_from_tag {describe(tag)} is none of its inputs")
        inputs = tuple(x.dimension if x.is_constant_static_dim() else self.ref(x) for x in op.inputs)
        try:
            ref = DimRef(
                "pending_dim",
                description=dim.description,
                op=kind,
                inputs=inputs,
                origin=origin or origin_of(dim),
                vocab=None if dim.vocab is None or origin else self._vocab(dim),
            )
        except SerializationError as e:  # the DimRef names its placeholder name: name the dim instead
            raise SerializationError(f"{describe(dim)}: {e.problem.partition(': ')[2]}") from None
        found = (dim.kind.name if dim.kind is not None else None, dim.dimension)
        if found != derived_shape(
            ref, self._shapes
        ):  # made otherwise than by RETURNN's dim math: the written op would not give it
            raise SerializationError(
                f"{describe(dim)}: kind and size {found} are not the {derived_shape(ref)} RETURNN gives {kind} of "
                f"its inputs"
            )
        return self._unified(ref, dim.description)

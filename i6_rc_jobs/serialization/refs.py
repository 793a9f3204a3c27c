"""Plain-data stand-ins for RETURNN dims. A serializer's dicts hold these instead of ``returnn.tensor.Dim``, so they
pickle and unpickle without RETURNN, and each says everything that makes its dim what it is (for the prolog and the
hash), while its repr is the dim's variable name in the written config (i6_core CodeWrapper style)."""

from __future__ import annotations

from typing import Optional, Union

from i6_core.returnn.config import CodeWrapper

from .strings import str_code

#: The derivation ops RETURNN writes into ``Dim.derived_from_op.kind``, by their current names, with the code that
#: re-creates them from their two operands. ``a - b`` is written by old RETURNN only (new: ``a + (-b)``).
OP_CODE = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "floordiv": "{0} // {1}",
    "truediv": "{0} / {1}",
    "truediv_left": "{0}.div_left({1})",
    "ceildiv": "{0}.ceildiv_right({1})",
    "ceildiv_left": "{0}.ceildiv_left({1})",
}
#: Operators that Python also evaluates with a plain int on the left (``2 * time_dim``); the others are methods.
OPS_WITH_INT_LEFT = frozenset({"add", "sub", "mul"})
#: RETURNN PR #1755 (2025-09) renamed these; both spellings occur in pickled and live dims.
OP_ALIASES = {"floordiv_right": "floordiv", "ceildiv_right": "ceildiv", "truediv_right": "truediv"}


def canonical_op(kind: str) -> Optional[str]:
    """The current name of a RETURNN dim op, or None if RETURNN cannot re-create it from code."""
    kind = OP_ALIASES.get(kind, kind)
    return kind if kind in OP_CODE else None


Operand = Union["DimRef", int]


class DimRef(CodeWrapper):
    """One dim, by value. Identity matters: one DimRef is one variable; equal fields do not make two refs one dim.

    Exactly one of these describes how the dim is made:
    plain (``Dim(size, ...)``), derived (``op`` with ``inputs``), a copy of ``copy_of`` with another kind or
    match_priority, or a RETURNN global (``global_name``: batch_dim, single_step_dim)."""

    def __init__(
        self,
        name: str,
        *,
        kind: Optional[str] = None,
        size: Optional[int] = None,
        description: Optional[str] = None,
        op: Optional[str] = None,
        inputs: tuple[Operand, ...] = (),
        copy_of: Optional[DimRef] = None,
        match_priority: int = 0,
        auto_generated: bool = False,
        special: bool = False,
        capacity: Optional[int] = None,
        global_name: Optional[str] = None,
    ):
        super().__init__(name)
        self.kind = kind
        self.size = size
        self.description = description
        self.op = op
        self.inputs = inputs
        self.copy_of = copy_of
        self.match_priority = match_priority
        self.auto_generated = auto_generated
        self.special = special
        self.capacity = capacity
        self.global_name = global_name

    @property
    def name(self) -> str:
        """The variable name in the written config."""
        return self.code

    def __reduce__(self):
        # The globals pickle by reference, so that identity with batch_dim survives unpickling everywhere.
        if self.global_name is not None:
            return self.global_name.upper()
        return super().__reduce__()

    def definition(self) -> Optional[str]:
        """The right-hand side of this dim's line in the prolog; None for the globals, which are imported."""
        if self.global_name is not None:
            return None
        if self.op is not None:
            return OP_CODE[self.op].format(*map(_operand_code, self.inputs))
        if self.copy_of is not None:
            base = self.copy_of
            args = [f"kind={_kind_code(self.kind)}"] if self.kind != base.kind else []
            if self.match_priority != base.match_priority:
                args.append(f"match_priority={self.match_priority}")
            return f"{base.name}.copy({', '.join(args)})"
        description = self.written_description()
        description_code = "None" if description is None else str_code(description)
        args = [repr(self.size), f"description={description_code}", f"kind={_kind_code(self.kind)}"]
        if self.match_priority:
            args.append(f"match_priority={self.match_priority}")
        if self.auto_generated:
            args.append("auto_generated=True")
        if self.special:
            args.append("special=True")
        if self.capacity is not None and self.capacity != self.size:
            args.append(f"capacity={self.capacity}")
        return f"Dim({', '.join(args)})"

    def written_description(self) -> Optional[str]:
        """The description a plain dim gets in the written code: exactly its own if auto-generated (it makes such
        dims equal or not in RETURNN), else its own or, if it has none, its variable name."""
        if self.auto_generated:
            return self.description
        return self.description or self.name

    def dependencies(self) -> tuple[DimRef, ...]:
        """The refs this one is defined from, which the prolog must define first."""
        if self.copy_of is not None:
            return (self.copy_of,)
        return tuple(x for x in self.inputs if isinstance(x, DimRef))


def _operand_code(operand: Operand) -> str:
    if isinstance(operand, DimRef):
        return operand.name
    return f"({operand})" if operand < 0 else str(operand)


def _kind_code(kind: Optional[str]) -> str:
    return "None" if kind is None else f"Dim.Types.{kind.capitalize()}"


BATCH_DIM = DimRef("batch_dim", kind="batch", global_name="batch_dim")
SINGLE_STEP_DIM = DimRef("single_step_dim", kind="spatial", size=1, special=True, global_name="single_step_dim")

#: RETURNN's marked dims (``returnn.tensor.marked_dim``) that can sit in a net dict, e.g. in ``out_shape``.
MARKERS = ("ImplicitDim", "ImplicitSparseDim", "ImplicitDynSizeDim", "OptionalDim")


class MarkedRef(CodeWrapper):
    """A RETURNN marked dim (e.g. ``ImplicitSparseDim(classes_dim)``): a marker around a DimRef."""

    def __init__(self, marker: str, dim: DimRef):  # no CodeWrapper.__init__: the code follows the dim's name
        self.marker = marker
        self.dim = dim

    @property
    def code(self) -> str:
        return f"{self.marker}({self.dim.name})"

    # Equal as RETURNN's marked dims are (one marker around one dim), so that a dict cannot hold two keys that the
    # written config would load as one.
    def __eq__(self, other: object) -> bool:
        return type(other) is MarkedRef and other.marker == self.marker and other.dim is self.dim

    def __hash__(self) -> int:
        return hash((self.marker, id(self.dim)))

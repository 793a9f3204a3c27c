"""Plain-data stand-ins for RETURNN dims. A serializer's dicts hold these instead of ``returnn.tensor.Dim``, so they
pickle and unpickle without RETURNN, and each says everything that makes its dim what it is (for the prolog and the
hash), while its repr is the dim's variable name in the written config (i6_core CodeWrapper style)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, TypeGuard, Union

from i6_core.returnn.config import CodeWrapper

from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._serialization.strings import str_code

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

#: How RETURNN computes the static size of a derived dim from its operands' (``_dim_extra._BinOps``).
OP_SIZE = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "truediv": lambda a, b: a // b,
    "truediv_left": lambda a, b: a // b,
    "ceildiv": lambda a, b: -(-a // b),
    "ceildiv_left": lambda a, b: -(-a // b),
}
KINDS = (None, "batch", "spatial", "feature")
GLOBAL_NAMES = (None, "batch_dim", "single_step_dim")
#: What every dim's variable name ends in: nothing else the written code binds or calls does (its dicts'
#: names, ``get_network``'s parameters, the imports, which ``CodeWriter`` never names so, the builtins, keywords),
#: but the globals' names, which only the globals bear.
DIM_SUFFIX = "_dim"
#: Fields the written code of a derived dim (``a + b``) or a copy (``base.copy(...)``) does not carry, which must
#: stay at their defaults there: RETURNN gives such a dim what its op or base gives it, whatever the DimRef says.
_NOT_WRITTEN_DERIVED = ("_kind", "_size", "match_priority", "auto_generated", "special", "capacity", "undefined")
_NOT_WRITTEN_COPY = ("_size", "special", "capacity", "undefined", "vocab")
_NOT_WRITTEN_REFS = ("bounded_by", "derived_from_tag", "size_dims", "size_dtype")
#: What may sit in a vocab's options (:mod:`.vocab`), written by :func:`literal_code`.
_LITERAL_TYPES = (str, int, bool, type(None))


def _is_int(value: object) -> bool:
    return type(value) is int


def _optional(check):
    return lambda value: value is None or check(value)


def _is_literal(value: object) -> bool:
    """Plain data that :func:`literal_code` writes: str, int, bool, None, and lists and str-keyed dicts of these."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            if not all(type(k) is str for k in item):
                return False
            stack.extend(item.values())
        elif type(item) not in _LITERAL_TYPES:
            return False
    return True


def literal_code(value: object) -> str:
    """The code of plain data (see :func:`_is_literal`), dict keys sorted: one text for one value, also hashed."""
    if type(value) is str:
        return str_code(value)
    if type(value) is list:
        return f"[{', '.join(map(literal_code, value))}]"
    if type(value) is dict:
        return "{" + ", ".join(f"{str_code(k)}: {literal_code(value[k])}" for k in sorted(value)) + "}"
    return repr(value)


def _is_ref(value: object) -> TypeGuard[DimRef]:
    return type(value) is DimRef


def _is_dim_name(value: object) -> bool:
    return type(value) is str and value.isidentifier() and value.endswith(DIM_SUFFIX) and value not in GLOBAL_NAMES


#: The check of each field's value, and what it must be (for the error).
_FIELD_CHECKS = {
    "code": (
        _is_dim_name,
        f"an identifier ending in {DIM_SUFFIX!r}, not {GLOBAL_NAMES[1]!r} or {GLOBAL_NAMES[2]!r} (the written config "
        f"binds or calls other names: its dicts, get_network's parameters, imports, builtins)",
    ),
    "_kind": (lambda v: v in KINDS and (v is None or type(v) is str), f"one of {KINDS}"),
    "_size": (_optional(_is_int), "an int or None"),
    "description": (_optional(lambda v: type(v) is str), "a str or None"),
    "op": (lambda v: v is None or (type(v) is str and v in OP_CODE), f"None or one of {sorted(OP_CODE)}"),
    "inputs": (
        lambda v: type(v) is tuple and all(_is_ref(x) or _is_int(x) for x in v),
        "a tuple of DimRefs and ints",
    ),
    "copy_of": (_optional(_is_ref), "a DimRef or None"),
    "match_priority": (_is_int, "an int"),
    "auto_generated": (lambda v: type(v) is bool, "a bool"),
    "special": (lambda v: type(v) is bool, "a bool"),
    "undefined": (lambda v: type(v) is bool, "a bool"),
    "capacity": (_optional(_is_int), "an int or None"),
    "global_name": (lambda v: v in GLOBAL_NAMES and (v is None or type(v) is str), f"one of {GLOBAL_NAMES}"),
    "bounded_by": (_optional(_is_ref), "a DimRef or None"),
    "derived_from_tag": (_optional(_is_ref), "a DimRef or None"),
    "origin": (_optional(lambda v: type(v) is str), "a str or None"),
    "keeps_op": (lambda v: type(v) is bool, "a bool"),
    "op_of": (_optional(_is_ref), "a DimRef or None"),
    "size_dims": (
        _optional(lambda v: type(v) is tuple and all(map(_is_ref, v))),
        "None or a tuple of DimRefs (the dims its sizes are over)",
    ),
    "size_dtype": (lambda v: type(v) is str and v.isidentifier(), "a dtype name such as 'int32'"),
    "vocab": (
        _optional(lambda v: type(v) is dict and _is_literal(v)),
        "None or a dict of Vocabulary.create_vocab options (str keys; str, int, bool, None, lists and dicts)",
    ),
}
_DEFAULTS: dict[str, Any] = {"_kind": None, "_size": None, "match_priority": 0, "auto_generated": False}
_DEFAULTS.update(special=False)
_DEFAULTS.update(capacity=None, undefined=False, bounded_by=None, derived_from_tag=None, vocab=None)
_DEFAULTS.update(size_dims=None, size_dtype="int32")


class DimRef(CodeWrapper):
    """One dim, by value. Identity matters: one DimRef is one variable; equal fields do not make two refs one dim.

    Exactly one of these describes how the dim is made:
    plain (``Dim(size, ...)``), derived (``op`` with ``inputs``), a copy of ``copy_of`` with another kind or
    match_priority, or a RETURNN global (``global_name``: batch_dim, single_step_dim).

    ``keeps_op``: a copy of a derived dim that carries its base's derivation, as RETURNN's ``declare_same_as`` gives
    it (returnn_common's pooled and strided time axes): dim math on the copy then simplifies as on its base (a second
    pooling of ``ceil(time/2)`` by 3 is ``ceil(time/6)``, the base of the loop over it), which a plain copy does not.
    ``op_of``: with ``keeps_op``, the derived dim whose derivation the copy carries instead of its base's (returnn_common
    computes a copy's dim math again, over other dims of equal sizes). ``vocab``: the options RETURNN makes the dim's
    vocabulary from (:mod:`.vocab`); a derived dim's is set on it by a second line (``declare_same_as`` puts it there).
    ``size_dims`` and ``size_dtype``: the template of a plain dynamic dim's sizes (``dyn_size_ext``) where it is over
    other dims than the batch (``[batch, time]``: a size per frame), written as ``dyn_size_ext=Tensor(...)``, so that
    the written config makes the dim as it was (a template of ``[batch]`` is RETURNN's default, and not kept).

    Every field is checked whenever it is set (also by unpickling), so that nothing but what it says is written as
    code. The size and kind of a derived dim, and the size of a copy, are not fields: they follow from the inputs
    (the base) exactly as RETURNN computes them, so that the hash and the written code cannot disagree.

    ``origin`` names the RETURNN Dim the ref was converted from (a random token, see :mod:`.capture`): DimRefs of
    one origin taken from several serializers, and the raw Dim itself, are one dim in a new serializer. It is never
    hashed nor written."""

    _kind: Optional[str] = None
    _size: Optional[int] = None
    op: Optional[str] = None  # (class defaults: read by the checks while __init__ sets the fields)
    inputs: tuple[Operand, ...] = ()
    copy_of: Optional[DimRef] = None
    # Fields added after DimRefs were first pickled: their defaults for refs unpickled from then.
    undefined: bool = False
    bounded_by: Optional[DimRef] = None
    derived_from_tag: Optional[DimRef] = None
    origin: Optional[str] = None
    keeps_op: bool = False
    vocab: Optional[dict] = None
    op_of: Optional[DimRef] = None
    size_dims: Optional[tuple[DimRef, ...]] = None
    size_dtype: str = "int32"

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
        undefined: bool = False,
        bounded_by: Optional[DimRef] = None,
        derived_from_tag: Optional[DimRef] = None,
        origin: Optional[str] = None,
        keeps_op: bool = False,
        vocab: Optional[dict] = None,
        op_of: Optional[DimRef] = None,
        size_dims: Optional[tuple[DimRef, ...]] = None,
        size_dtype: str = "int32",
    ):
        self.global_name = global_name  # first: a global alone bears its name
        super().__init__(name)
        self.description = description
        self.origin = origin
        self.match_priority = match_priority
        self.auto_generated = auto_generated
        self.special = special
        self.capacity = capacity
        self.undefined = undefined
        self.bounded_by = bounded_by
        self.derived_from_tag = derived_from_tag
        self.vocab = vocab
        self.size_dims = size_dims
        self.size_dtype = size_dtype
        self._kind = kind
        self._size = size
        self.inputs = inputs
        self.op = op  # after the fields it makes unwritten: refused if they are not at their defaults
        self.copy_of = copy_of
        self.keeps_op = keeps_op
        self.op_of = op_of
        if global_name is not None:  # shared by every serializer in the process (and pickled by reference)
            super().__setattr__("_frozen", True)

    def __setattr__(self, field: str, value: Any) -> None:
        if self.__dict__.get("_frozen"):
            raise SerializationError(
                f"DimRef {self.code!r} is RETURNN's global {self.global_name}, one object for every serializer: "
                f"{field.lstrip('_')} cannot be set on it (leave the global as it is, e.g. skip it in a bulk rename)"
            )
        if field == "global_name" and value is not None and "code" in self.__dict__:
            raise SerializationError(
                f"DimRef {self.code!r}: global_name cannot be set after construction: use RETURNN's global itself"
            )
        check = _FIELD_CHECKS.get(field)
        if field == "code" and value is not None and value == self.__dict__.get("global_name"):
            check = None
        if check is not None and not check[0](value):
            hint = f": e.g. {value + DIM_SUFFIX!r}" if field == "code" and type(value) is str else ""
            raise SerializationError(
                f"DimRef {self.__dict__.get('code')!r}: {field.lstrip('_')} = {value!r} (type "
                f"{type(value).__name__}) must be {check[1]}{hint}"
            )
        if field == "op_of" and value is not None and (not self.keeps_op or value.op is None):
            raise SerializationError(
                f"DimRef {self.__dict__.get('code')!r}: op_of is set on a copy with keeps_op only, to a derived dim "
                f"(with an op), not {value.name}"
            )
        if field in ("keeps_op", "copy_of"):
            self._check_kept_op(value if field == "copy_of" else self.copy_of, value if field == "keeps_op" else None)
        if field in ("op", "inputs"):
            self._check_derivation(value if field == "op" else self.op, value if field == "inputs" else self.inputs)
        if field in ("op", "copy_of") and value is not None:
            self._check_unwritten(field, value)
        elif self.op is not None or self.copy_of is not None:
            self._check_unwritten(field, value, setting=True)
        super().__setattr__(field, value)

    def _check_derivation(self, op: Optional[str], inputs: tuple) -> None:
        if op is None:
            return
        if len(inputs) != 2:
            raise SerializationError(f"DimRef {self.name!r}: op {op!r} needs two inputs, not {inputs!r}")
        if not _is_ref(inputs[0]) and op not in OPS_WITH_INT_LEFT:
            raise SerializationError(f"DimRef {self.name!r}: op {op!r} with a constant left operand has no code form")

    def _check_kept_op(self, copy_of: Optional[DimRef], keeps_op: Optional[bool]) -> None:
        if keeps_op is None:
            keeps_op = self.__dict__.get("keeps_op", False)
        if keeps_op and (copy_of is None or copy_of.op is None):
            raise SerializationError(
                f"DimRef {self.__dict__.get('code')!r}: keeps_op is set on a copy of a derived dim only (copy_of with "
                f"an op), not with copy_of {None if copy_of is None else copy_of.name}: unset keeps_op"
            )

    def _check_unwritten(self, field: str, value: object, setting: bool = False) -> None:
        """Refuses a field the written code would not carry (see _NOT_WRITTEN_DERIVED): when set on a derived dim or
        copy, or when a ref with it becomes one."""
        derived = (field == "op" and value is not None) or (field != "copy_of" and self.__dict__.get("op"))
        unwritten = (_NOT_WRITTEN_DERIVED if derived else _NOT_WRITTEN_COPY) + _NOT_WRITTEN_REFS
        if setting:
            bad = [field] if field in unwritten and value != _DEFAULTS[field] else []
        else:
            bad = [f for f in unwritten if getattr(self, f, _DEFAULTS[f]) != _DEFAULTS[f]]
        if bad:
            what = "a derived dim (op)" if derived else "a copy (copy_of)"
            raise SerializationError(
                f"DimRef {self.name!r}: {', '.join(f.lstrip('_') for f in bad)} cannot be set on {what}: RETURNN "
                f"derives {'it' if len(bad) == 1 else 'them'} from its {'inputs' if derived else 'base'}"
            )

    def __setstate__(self, state: dict) -> None:
        """Unpickled or copied: every field checked as if set. DimRefs pickled before size and kind became derived
        carry them under their old names (also on derived dims and copies, where they are dropped)."""
        state = dict(state)
        for old in ("kind", "size"):
            if old in state:
                state[f"_{old}"] = state.pop(old)
        if state.get("op") is not None:
            state.pop("_kind", None)
            state.pop("_size", None)
        elif state.get("copy_of") is not None:
            state.pop("_size", None)
        for field in ("code", "inputs", "op", "copy_of"):  # first, so that later fields are checked against them
            if field in state:
                setattr(self, field, state.pop(field))
        for field, value in state.items():
            setattr(self, field, value)

    @property
    def kind(self) -> Optional[str]:
        """RETURNN's kind name; for a derived dim the kind RETURNN gives it (``_get_merged_dim_kind``)."""
        return self._kind if self.op is None else derived_shape(self)[0]

    @kind.setter
    def kind(self, value: Optional[str]) -> None:
        self._kind = value

    @property
    def size(self) -> Optional[int]:
        """The static size, None if dynamic; that of a derived dim or copy as RETURNN computes it."""
        return self._size if self.op is None and self.copy_of is None else derived_shape(self)[1]

    @size.setter
    def size(self, value: Optional[int]) -> None:
        self._size = value

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
        if self.copy_of is not None and not self.copied_as_plain():
            base = self.copy_of
            args = [f"kind={_kind_code(self.kind)}"] if self.kind != base.kind else []
            if self.match_priority != base.match_priority:
                args.append(f"match_priority={self.match_priority}")
            if self.description is not None:
                args.append(f"description={str_code(self.description)}")
            return f"{base.name}.copy({', '.join(args)})"
        if self.copy_of is None:
            description = self.written_description()
        else:  # a copy written as a plain Dim: its own description, else its base's (as Dim.copy gives it)
            description = self.description or self.copy_of.written_description()
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
        if self.undefined:
            args.append("undefined=True")
        if self.bounded_by is not None:
            args.append(f"bounded_by={self.bounded_by.name}")
        if self.derived_from_tag is not None:
            args.append(f"derived_from_tag={self.derived_from_tag.name}")
        if self.size_dims is not None:
            dims = ", ".join(dim.name for dim in self.size_dims)
            template = f"Tensor({str_code(self.name + '_sizes')}, dims=[{dims}], dtype={str_code(self.size_dtype)})"
            args.append(f"dyn_size_ext={template}")
        if self.keeps_op:
            self._check_kept_op(self.copy_of, True)  # the base may have been edited since
            assert self.copy_of is not None  # (checked)
            args.append(f"derived_from_op={(self.op_of or self.copy_of).name}.derived_from_op")
        if self.vocab is not None:
            args.append(f"vocab={literal_code(self.vocab)}")
        return f"Dim({', '.join(args)})"

    def copied_as_plain(self) -> bool:
        """Whether this copy is written as a plain ``Dim(...)`` made a copy by a second line (:meth:`lines`): a copy
        of unspecified kind of a base with one, which ``base.copy(kind=None)`` is not (RETURNN keeps the base's
        kind for ``None``), a copy that keeps its base's derivation, and an auto-generated copy (as
        ``declare_same_as`` makes them), both of which ``Dim.copy`` drops."""
        if self.copy_of is None:
            return False
        return self.keeps_op or self.auto_generated or (self.kind is None and self.copy_of.kind is not None)

    def lines(self) -> list[str]:
        """The prolog lines that define this dim (none for the imported globals)."""
        definition = self.definition()
        if definition is None:
            return []
        lines = [f"{self.name} = {definition}"]
        if self.copy_of is not None and self.copied_as_plain():  # what ``Dim.copy`` does after making the Dim
            lines.append(f"{self.name}.same_as = {self.copy_of.name}")
        if self.op is not None and self.vocab is not None:  # RETURNN's Dim sets a Vocabulary, which Dim(vocab=) makes
            lines.append(f"{self.name}.vocab = Dim(None, vocab={literal_code(self.vocab)}).vocab")
        return lines

    def _sis_hash(self) -> bytes:
        """What Sisyphus hashes a DimRef by where it sits in a config value (it would hash the ``__dict__`` otherwise,
        whose ``origin`` is random per process): the name it is written as, which ties it to the dim the prolog
        defines by that name, and the prolog lines of it and of everything it is made of (its content)."""
        return f"(DimRef, {self.name}, {dim_lines({}, [self])!r})".encode()

    def written_description(self) -> Optional[str]:
        """The description a plain dim gets in the written code: exactly its own if auto-generated (it makes such
        dims equal or not in RETURNN), else its own or, if it has none, its variable name."""
        if self.auto_generated:
            return self.description
        return self.description or self.name

    def dependencies(self) -> tuple[DimRef, ...]:
        """The refs this one is defined from, which the prolog must define first."""
        if self.copy_of is not None:
            return (self.copy_of,) if self.op_of is None else (self.copy_of, self.op_of)
        if self.op is not None:
            return tuple(x for x in self.inputs if isinstance(x, DimRef))
        return tuple(x for x in (self.bounded_by, self.derived_from_tag) if x is not None) + (self.size_dims or ())


def use_dim(dims: dict[str, DimRef], ref: DimRef) -> None:
    """Records in ``dims`` (by name) a dim that code names, refusing two different dims under one name."""
    known = dims.setdefault(ref.name, ref)
    if known is not ref:
        raise SerializationError(
            f"two different dims are named {ref.name!r} (DimRefs of two serializers mixed?): "
            f"{known.definition()} and {ref.definition()}"
        )


def dim_lines(dims: dict[str, DimRef], used: Iterable[DimRef]) -> list[str]:
    """The dim prolog: ``name = definition`` for each used dim and everything it is derived from, each once: by
    name, each after what it is derived from (deterministic, whatever the order the dims were met in), recorded in
    ``dims`` (:func:`use_dim`). The imported globals need no line."""
    lines: list[str] = []
    done: set[int] = set()
    walking: set[int] = set()  # expanded, not done: met again unexpanded, it is derived from itself
    for ref in sorted(used, key=lambda r: r.name):
        stack = [(ref, False)]
        while stack:
            dim, expanded = stack.pop()
            if id(dim) in done:
                continue
            if not expanded:
                if id(dim) in walking:
                    raise SerializationError(f"DimRef {dim.name!r} is derived from itself")
                walking.add(id(dim))
                stack.append((dim, True))
                stack.extend((dep, False) for dep in reversed(dim.dependencies()))
                continue
            done.add(id(dim))
            use_dim(dims, dim)
            lines.extend(dim.lines())
    return lines


def derived_shape(ref: DimRef, shapes: Optional[dict[int, tuple]] = None) -> tuple[Optional[str], Optional[int]]:
    """(kind, size) of ``ref`` as RETURNN makes them: a derived dim's from its operands (``_math_get_dim_via_bin_op``:
    a batch operand makes it spatial, else a feature operand feature, else spatial; the size by :data:`OP_SIZE` if
    all operands are static), a copy's size from its base. Computed bottom-up without recursion, so that chains of
    thousands of derived dims work. ``shapes`` (by id) is kept by a caller that asks for many dims while none of
    them changes (the hash); else each call sees the fields as they are now."""
    shapes = {} if shapes is None else shapes
    stack = [ref]
    expanding: set[int] = set()  # the dims whose sources are being computed: a source among them is a cycle
    while stack:
        top = stack[-1]
        if id(top) in shapes:
            stack.pop()
            continue
        sources = (top.copy_of,) if top.copy_of is not None else top.inputs if top.op is not None else ()
        if not sources:  # a plain dim (``ref`` itself)
            shapes[id(top)] = (top._kind, top._size)
            stack.pop()
            continue
        pending = [x for x in sources if _is_ref(x) and id(x) not in shapes and (x.op or x.copy_of) is not None]
        if pending and id(top) not in expanding:
            if any(id(x) in expanding for x in pending):
                raise SerializationError(f"DimRef {top.name!r} is derived from itself")
            expanding.add(id(top))
            stack.extend(pending)
            continue
        stack.pop()
        expanding.discard(id(top))
        operands = [shapes.get(id(x), (x._kind, x._size)) if _is_ref(x) else (None, x) for x in sources]
        if top.copy_of is not None:
            shapes[id(top)] = (top._kind, operands[0][1])
            continue
        kinds = {kind for kind, _ in operands}
        kind = "spatial" if "batch" in kinds or "feature" not in kinds else "feature"
        sizes = [size for _, size in operands]
        assert top.op is not None  # a dim with sources and no copy_of is derived
        try:
            size = None if None in sizes else OP_SIZE[top.op](*sizes)
        except ZeroDivisionError:
            raise SerializationError(f"DimRef {top.name!r}: {top.definition()} divides by zero") from None
        shapes[id(top)] = (kind, size)
    return shapes[id(ref)]


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

    def _sis_hash(self) -> bytes:
        """By its marker and its dim's hash (see :meth:`DimRef._sis_hash`)."""
        return f"(MarkedRef, {self.marker}, ".encode() + self.dim._sis_hash() + b")"

    # Equal as RETURNN's marked dims are (one marker around one dim), so that a dict cannot hold two keys that the
    # written config would load as one.
    def __eq__(self, other: object) -> bool:
        return type(other) is MarkedRef and other.marker == self.marker and other.dim is self.dim

    def __hash__(self) -> int:
        return hash((self.marker, id(self.dim)))

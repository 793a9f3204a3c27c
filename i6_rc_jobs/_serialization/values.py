"""What may sit in a serializer's dicts, shared by the converting, writing and hashing walks."""

from __future__ import annotations

import contextlib
import gc
import keyword
import math
import sys
from typing import Any, Callable, Iterator, NamedTuple, NoReturn, Optional, assert_never

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._serialization.callables import PartialRef
from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.kinds import LEAF_TYPES, is_raw_dim, kind_of
from i6_rc_jobs._serialization.numpy_values import check_numpy, loaded_numpy, numpy_brackets

#: Python compiles no code with more than this many nested brackets ("too many nested parentheses"; measured with
#: compile() on Python 3.11: 200 compile, 201 do not, for any mix of brackets and in a function body too).
MAX_BRACKETS = 200
#: Python reads no decimal int literal of more digits than 4300 (its default int_max_str_digits, which the process
#: that runs the config has), and the hash spells ints in decimal too.
MAX_INT_DIGITS = 4300
INT_HIGH = 10**MAX_INT_DIGITS
INT_LOW = -INT_HIGH


def check_int(value: int) -> int:
    """``value``, or an error if it has more digits than Python reads (see :data:`MAX_INT_DIGITS`)."""
    if INT_LOW < value < INT_HIGH:
        return value
    raise SerializationError(
        f"an int of more than {MAX_INT_DIGITS} digits (about {int(value.bit_length() * 0.30103)}), more than Python "
        f"reads back from code: write it as a str (or CodeWrapper code) and convert it where it is used"
    )


def brackets(value: Any) -> int:
    """How many brackets the written code of ``value`` opens around what is inside (``frozenset({...})``: two,
    ``float("nan")``: one); what counts toward :data:`MAX_BRACKETS`."""
    kind = kind_of(value)
    match kind:
        case "float":
            return 0 if math.isfinite(value) else 1
        case "complex":
            return 1 if math.isfinite(value.real) and math.isfinite(value.imag) else 2
        case "frozenset":
            return 2
        case "dict" | "list" | "tuple" | "set" | "marked_ref" | "namedtuple":
            return 1
        case "numpy":
            return numpy_brackets(value, loaded_numpy())
        case (
            "str"
            | "int"
            | "plain"
            | "dim_ref"
            | "partial_ref"
            | "named_ref"
            | "content_ref"
            | "wrapper"
            | "delayed"
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
            return 0
        case _:
            assert_never(kind)


#: Inside fewer brackets than this, no leaf (which opens at most two) exceeds :data:`MAX_BRACKETS`: the walks take
#: leaves inline without counting their brackets.
NEAR_MAX_BRACKETS = MAX_BRACKETS - 1


class NestedTooDeeply(SerializationError):
    """Nesting beyond what Python compiles; a cycle is reported instead if the value contains itself."""


def check_brackets(value: Any, outside: int) -> None:
    """An error if ``value``, inside ``outside`` brackets, would be written inside more than Python compiles; the
    walks call it for values met near the limit (``outside >= NEAR_MAX_BRACKETS``): no value opens more than two."""
    if outside + brackets(value) > MAX_BRACKETS:
        raise NestedTooDeeply(
            f"is nested too deeply: its code would be inside more than {MAX_BRACKETS} brackets, which Python cannot "
            f"compile"
        )


def namedtuple_source(cls: type) -> tuple[str, str]:
    """(module, qualified name) by which the written config imports a namedtuple class (see :func:`import_source`);
    an error also if ``cls(*items)`` (how copies are made and the written code calls it) does not rebuild its
    values."""
    _check_rebuilds(cls)
    return import_source(cls, "namedtuple class")


def import_source(obj: Any, kind: str) -> tuple[str, str]:
    """(module, qualified name) by which the written config imports ``obj`` (a ``kind``: function, class), an
    error if that does not give ``obj`` back, so that no config is written which fails to import it or imports
    another object: a lambda, a function or class defined inside a function, one from ``__main__`` or bound to
    another name. Both are dotted identifiers: the import line is valid code, and their text in the hash ends where
    they do."""
    module: Any = getattr(obj, "__module__", None)
    qualname: Any = getattr(obj, "__qualname__", None)
    if module == "__main__":
        raise SerializationError(
            f"a {kind} from __main__ cannot be imported by the config: {qualname}: define it with def (class) at the "
            "top level of an importable module"
        )
    found: Any = None
    if type(module) is str and type(qualname) is str and _dotted_identifiers(f"{module}.{qualname}"):
        found = sys.modules.get(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
    if found is not obj:
        raise SerializationError(
            f"the {kind} {module}.{qualname} cannot be imported by that name (a lambda, defined inside a function, "
            f"or bound to another name): define it with def (class) at the top level of its module"
        )
    return module, qualname


def imported_source(value: Any) -> tuple[str, str]:
    """:func:`import_source` of a function or class (a value of kind IMPORTED)."""
    return import_source(value, "class" if isinstance(value, type) else "function")


def _dotted_identifiers(name: str) -> bool:
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in name.split("."))


def _check_rebuilds(cls: type) -> None:
    """Refuses a namedtuple class whose values ``cls(*items)`` would not give back: one with its own ``__new__``
    above the one ``collections.namedtuple`` made (it may change the items, e.g. double one at every copy), or with
    ``_fields`` redefined (items beyond them would be hashed but not written)."""
    for klass in cls.__mro__:
        if "_fields" in vars(klass):
            made = klass.__bases__[0] is tuple and "__new__" in vars(klass) and "_make" in vars(klass)
            if made:
                return
            break
        if "__new__" in vars(klass):
            raise SerializationError(
                f"the namedtuple class {cls.__module__}.{cls.__qualname__} has its own __new__ "
                f"(in {klass.__qualname__}): copies and the written code, which call {cls.__qualname__}(*items), "
                f"would not give its values back"
            )
    raise SerializationError(
        f"the namedtuple class {cls.__module__}.{cls.__qualname__} redefines _fields: copies and the written code, "
        f"which use them, would not give its values back"
    )


def check_namedtuple(value: NamedTuple) -> tuple[str, str]:
    """:func:`namedtuple_source` of the value's class, after checking that the value itself is rebuilt from its
    items: one item per field and no instance attributes (of a subclass without ``__slots__``)."""
    cls = type(value)
    source = namedtuple_source(cls)
    if len(value) != len(cls._fields):
        raise SerializationError(f"{describe(value)} has {len(value)} items but {len(cls._fields)} fields")
    if getattr(value, "__dict__", None):
        raise SerializationError(
            f"{describe(value)} has instance attributes {sorted(value.__dict__)}, which are neither copied nor written"
        )
    return source


def key_step(key: Any) -> str:
    """One path step for a dict key, as in ``network['enc']``."""
    return f"[{step_repr(key)}]"


def step_repr(value: Any) -> str:
    """``repr(value)`` for a path step, also for an int too long for ``repr``."""
    if type(value) is int and not INT_LOW < value < INT_HIGH:
        return f"<an int of more than {MAX_INT_DIGITS} digits>"
    return repr(value)


def check_leaf(value: Any) -> None:
    """Accepts what the walks write as leaves: plain values (of exactly these types: a subclass's repr need not load
    back), numpy arrays and scalars, functions and classes their module gives back by name (imported by the config),
    i6_core CodeWrapper (dims among them) and Sisyphus delayed values (tk.Path, tk.Variable; written as their value).
    Anything else gets a clear error."""
    kind = kind_of(value)
    match kind:
        case "str" | "int" | "float" | "plain" | "complex" | "delayed" | "i6_core_object":
            return  # (i6_core's objects are Sisyphus values)
        case "dim_ref" | "marked_ref":
            return  # (code wrappers whose code is always a str)
        case "wrapper":
            if not isinstance(value.code, DelayedBase):  # a delayed value may not be computed yet: checked when written
                wrapper_code(value)
            return
        case "numpy":
            check_numpy(value, loaded_numpy())
            return
        case "imported":
            imported_source(value)
            return
        case (
            "dict"
            | "list"
            | "tuple"
            | "namedtuple"
            | "set"
            | "frozenset"
            | "partial_ref"
            | "named_ref"
            | "content_ref"
            | "raw_dim"
            | "raw_marked_dim"
            | "dict_subclass"
            | "partial"
            | "module"
            | "content_owner"
            | "other"
        ):
            refuse(value)
        case _:
            assert_never(kind)


def refuse(value: Any) -> NoReturn:
    """The error for a value that cannot sit in the dicts as a leaf, saying why where that is known."""
    plain = next((t for t in (*LEAF_TYPES, complex) if isinstance(value, t)), None)
    if plain is not None:  # e.g. an IntEnum member: its repr does not load in the config
        raise SerializationError(
            f"{describe(value)} is a {type(value).__module__}.{type(value).__qualname__}, not a plain "
            f"{plain.__name__}: convert it with {plain.__name__}(...)"
        )
    if callable(value):
        hint = "callables other than functions and classes (bound methods, partials, ...) cannot sit in the dict"
        raise SerializationError(f"{describe(value)}: {hint}: define a function at the top level of a module")
    if is_raw_dim(value):
        raise SerializationError(
            f"{describe(value)} is a raw RETURNN Dim, put in after conversion: use a DimRef of this serializer "
            f"(e.g. one taken from its dicts) or build a new ReturnnCommonSerializer from the raw dicts"
        )
    raise SerializationError(f"{describe(value)} cannot be written as Python code")


def wrapper_code(wrapper: CodeWrapper) -> str:
    """The code a CodeWrapper puts into the config: its repr, as i6_core writes it (the code, or a Sisyphus delayed
    value's value); an error if that is no str, which i6_core could not write either."""
    try:
        return repr(wrapper)
    except TypeError:
        code = wrapper.code.get() if isinstance(wrapper.code, DelayedBase) else wrapper.code
        raise SerializationError(
            f"a CodeWrapper of {describe(code)}: its code, which the config holds as it is, must be a str"
        ) from None


def check_tree(value: Any, root: str) -> None:
    """Refuses, naming the path, what the writer would refuse in ``value``, for data that enters a serializer after
    conversion (through its attributes): raw RETURNN dims, values without a code form, namedtuples their items do not
    rebuild. Sisyphus values are not resolved (they may not be computed yet)."""
    walk_guarded(_check, value, root, 0)


def _check(value: Any, depth: int) -> None:
    if depth >= NEAR_MAX_BRACKETS:
        check_brackets(value, depth)
    kind = kind_of(value)
    match kind:
        case "int":
            check_int(value)
        case "dict":
            for key, item in value.items():
                try:
                    _check(key, depth + 1)
                    _check(item, depth + 1)
                except SerializationError as e:
                    e.at(key_step(key))
                    raise
        case "content_ref":
            _check(value.reference, depth)
        case "partial_ref":
            for step, item in partial_steps(value):
                try:
                    _check(item, depth + 1)
                except SerializationError as e:
                    e.at(step)
                    raise
        case "list" | "tuple" | "set" | "frozenset" | "namedtuple":
            if kind == "namedtuple":
                check_namedtuple(value)
            for i, item in enumerate(value):
                try:
                    _check(item, depth + brackets(value))
                except SerializationError as e:
                    e.at(f"{{{describe(item)}}}" if kind == "set" or kind == "frozenset" else f"[{i}]")
                    raise
        case "str" | "float" | "plain" | "named_ref":
            pass
        case (
            "complex"
            | "dim_ref"
            | "marked_ref"
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
            check_leaf(value)
        case _:
            assert_never(kind)


def partial_steps(value: PartialRef) -> list[tuple[str, Any]]:
    """The parts of a partial with the path step that names each in errors: ``.func``, ``.args[0]``,
    ``.keywords['out_dim']``."""
    steps: list[tuple[str, Any]] = [(".func", value.func)]
    steps.extend((f".args[{i}]", item) for i, item in enumerate(value.args))
    steps.extend((f".keywords{key_step(key)}", item) for key, item in sorted(value.keywords.items()))
    return steps


def sisyphus_values(value: Any) -> list[DelayedBase]:
    """The Sisyphus values (paths, variables, delayed ops, also as a CodeWrapper's code) in ``value``, in the order
    a depth-first walk meets them: the inputs of a job that writes it. Each container is looked into once (edited
    dicts may contain themselves)."""
    found = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) in LEAF_TYPES:
            continue
        kind = kind_of(item)
        match kind:
            case (
                "dict"
                | "dict_subclass"
                | "list"
                | "tuple"
                | "namedtuple"
                | "set"
                | "frozenset"
                | "partial_ref"
                | "named_ref"
                | "content_ref"
            ):
                if id(item) not in seen:
                    seen.add(id(item))
                    if kind == "dict" or kind == "dict_subclass":
                        stack.extend(item)  # keys
                        stack.extend(item.values())
                    else:
                        stack.extend(item)
            case "delayed" | "i6_core_object":
                found.append(item)
            case "wrapper":
                if isinstance(item.code, DelayedBase):  # written by its value, as i6_core
                    found.append(item.code)
            case (
                "str"
                | "int"
                | "float"
                | "plain"
                | "complex"
                | "dim_ref"
                | "marked_ref"
                | "numpy"
                | "imported"
                | "raw_dim"
                | "raw_marked_dim"
                | "partial"
                | "module"
                | "content_owner"
                | "other"
            ):
                pass
            case _:
                assert_never(kind)
    return found


def walk_guarded(walk: Callable[..., Any], value: Any, root: str, *args: Any) -> Any:
    """Runs a recursive walk over ``value``, turning errors into ones that name ``root``, and a recursion overflow or
    too deep a nesting into an error that names where the dict contains itself (cycles are searched only then).

    The garbage collector is paused meanwhile: the walks build trees (no cycles) of thousands of containers, which
    the collector would otherwise traverse again and again while they are being built (6% of hashing's time on
    Transformer-24, median of 30 interleaved runs in a process that holds TensorFlow)."""
    with gc_paused():
        return _walk_guarded(walk, value, root, *args)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The garbage collector paused while a walk builds thousands of containers (it collects nothing of them until
    they are done, but would traverse the whole process, TensorFlow's objects too, again and again)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _walk_guarded(walk: Callable[..., Any], value: Any, root: str, *args: Any) -> Any:
    try:
        return walk(value, *args)
    except NestedTooDeeply as e:
        path = _find_cycle(value)
        if path is None:
            raise e.at(root) from None
        raise SerializationError("contains itself (a cycle)").at(path).at(root) from None
    except SerializationError as e:
        raise e.at(root) from None
    except RecursionError:
        path = _find_cycle(value)
        problem = "contains itself (a cycle)" if path is not None else "is nested too deeply to be written"
        raise SerializationError(problem).at(path or "").at(root) from None


def _find_cycle(value: Any) -> Optional[str]:
    """The path at which a container occurs inside itself, found iteratively (the recursion already overflowed)."""
    on_path: set[int] = set()
    stack: list[tuple[Any, str, bool]] = [(value, "", False)]
    while stack:
        obj, path, leaving = stack.pop()
        if leaving:
            on_path.discard(id(obj))
            continue
        if not isinstance(obj, (dict, list, tuple, set, frozenset)):
            continue
        if id(obj) in on_path:
            return path
        on_path.add(id(obj))
        stack.append((obj, path, True))
        if isinstance(obj, dict):
            children = [(v, path + key_step(k)) for k, v in obj.items()]
        elif isinstance(obj, (set, frozenset)):
            children = [(v, f"{path}{{{describe(v)}}}") for v in obj]
        else:
            children = [(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        stack.extend((child, child_path, False) for child, child_path in reversed(children))
    return None


def plain_order_key(value: Any) -> tuple:
    """Where a set element or dict key that is no dim sorts, spelled by its repr (see ``DimCapture.order_key``)."""
    return (0, type(value).__name__, repr(value))

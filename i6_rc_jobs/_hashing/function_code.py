"""The code of a function or class held as a value (an ``eval`` given as a function), as the texts it can read names
by: what the hash searches as it searches code strings."""

from __future__ import annotations

import inspect
import types
from typing import Any, Optional

from i6_rc_jobs._serialization.kinds import IMPORTED_TYPES
from i6_rc_jobs._hashing.containers import leaves

#: What the search takes for code that runs: functions and classes searched like the value itself.
_CODE_TYPES = (types.FunctionType, type)


def function_texts(value: Any) -> Optional[list[str]]:
    """The texts of a function or class (``value``) its code can read names by: the str constants of its code (nested
    functions' too), its default arguments and closure, and the module globals it names (their strings, and the
    functions and classes of its own module among them, searched alike); None if the source of any of these cannot be
    had (a builtin, a function made by ``exec``): such code may read anything. Not its identifiers: the config imports
    it, so its code runs in its own module's namespace and names the config's variables (dims among them) only by
    strings. Modules, other objects and
    the code of other modules (libraries, which read what the searched code hands them) are not searched."""
    module = getattr(value, "__module__", None)
    texts: list[str] = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if not isinstance(item, IMPORTED_TYPES):
            texts.extend(_strings(item, stack))
            continue
        if item is not value and (not isinstance(item, _CODE_TYPES) or item.__module__ != module):
            continue
        if _made_by_namedtuple(item):  # its code is collections' template, which reads no names
            continue
        try:
            inspect.findsource(item)  # only code whose source is had is known to read no more than its strings
        except (OSError, TypeError):  # no file or no line for it: C code, exec, the interactive prompt
            return None
        if isinstance(item, type):
            stack.extend(getattr(member, "__func__", member) for member in vars(item).values())  # static, class methods
        else:
            stack.extend(_read_by(item))
    return texts


def _read_by(function: types.FunctionType) -> list[Any]:
    """What a function's code reads besides its source: its constants, defaults, closure and the globals it names."""
    values: list[Any] = [*(function.__defaults__ or ()), *(function.__kwdefaults__ or {}).values()]
    values.extend(value for cell in function.__closure__ or () for value in _contents(cell))
    codes, names = [function.__code__], set[str]()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        for constant in code.co_consts:
            (codes if isinstance(constant, types.CodeType) else values).append(constant)
    values.extend(function.__globals__[name] for name in sorted(names) if name in function.__globals__)
    return values


def _made_by_namedtuple(item: Any) -> bool:
    """Whether ``item`` is a class ``collections.namedtuple`` made (its methods are made by ``exec``)."""
    return isinstance(item, type) and item.__bases__ == (tuple,) and {"_fields", "_make"} <= vars(item).keys()


def _contents(cell: Any) -> list[Any]:
    """A closure cell's value, if it is bound."""
    try:
        return [cell.cell_contents]
    except ValueError:  # a cell not bound yet
        return []


def _strings(value: Any, functions: list[Any]) -> list[str]:
    """The str in ``value`` (in containers too); functions and classes in it go to ``functions``."""
    found: list[str] = []
    for item in leaves((value,), keys=True):
        if type(item) is str:
            found.append(item)
        elif isinstance(item, IMPORTED_TYPES):
            functions.append(item)
    return found

"""Plain-data stand-ins for what a RETURNN-frontend or PyTorch config holds besides dims and plain values:
``functools.partial`` objects (``get_model = partial(Model, out_dim=...)``) and modules. Functions and classes stay
as they are (the config imports them by module and qualified name, :func:`.values.import_source`)."""

from __future__ import annotations

import functools
import keyword
import sys
from types import ModuleType
from typing import Any

from i6_core.returnn.config import CodeWrapper

from i6_rc_jobs._serialization.errors import SerializationError, describe


class PartialRef(tuple):
    """A ``functools.partial`` as (func, args, keywords), its args and keywords converted like any value (dims in
    them become DimRefs). A tuple, so that every walk over values (dims, strings, Sisyphus values, copies) looks into
    it; the written code calls ``functools.partial`` again."""

    __slots__ = ()

    def __new__(cls, func: Any, args: tuple, keywords: dict[str, Any]) -> PartialRef:
        if type(args) is not tuple or type(keywords) is not dict:
            raise SerializationError(f"a partial's args must be a tuple and its keywords a dict, not {describe(args)}")
        bad = [key for key in keywords if type(key) is not str or not key.isidentifier()]
        if bad:
            raise SerializationError(f"partial keywords {bad!r} are no identifiers: the written call cannot pass them")
        return super().__new__(cls, (func, args, keywords))

    def __getnewargs__(self) -> tuple:  # pickled and copied by its three parts
        return tuple(self)

    @property
    def func(self) -> Any:
        return self[0]

    @property
    def args(self) -> tuple:
        return self[1]

    @property
    def keywords(self) -> dict[str, Any]:
        return self[2]

    def __repr__(self) -> str:
        return f"PartialRef({self.func!r}, *{self.args!r}, **{self.keywords!r})"


def partial_parts(value: functools.partial) -> tuple[Any, tuple, dict[str, Any]]:
    """(func, args, keywords) of a partial, refusing what the written call would not give back: a subclass of
    ``functools.partial`` and a partial with instance attributes (``__dict__``)."""
    if type(value) is not functools.partial:
        raise SerializationError(
            f"{describe(value)} is a subclass of functools.partial, which the config would write as a plain partial: "
            f"use functools.partial itself"
        )
    if value.__dict__:
        raise SerializationError(f"{describe(value)} has attributes {sorted(value.__dict__)}, which are not written")
    return value.func, value.args, dict(value.keywords)


class ModuleRef(CodeWrapper):
    """A module, by name: written as an import of that name, hashed by it (as functions and classes are)."""

    def __init__(self, name: str):
        if type(name) is not str or not all(part.isidentifier() for part in name.split(".")):
            raise SerializationError(f"module name {describe(name)} is no dotted identifier")
        super().__init__(f'__import__("importlib").import_module("{name}")')
        self.name = name

    @classmethod
    def of(cls, module: ModuleType) -> ModuleRef:
        """The ref of a module the config can import by its name (it is in ``sys.modules`` under it)."""
        name = getattr(module, "__name__", None)
        if not isinstance(name, str) or sys.modules.get(name) is not module or name == "__main__":
            raise SerializationError(
                f"the module {describe(module)} cannot be imported by its name: use a module imported by name"
            )
        return cls(name)

    def __reduce__(self):
        return (ModuleRef, (self.name,))

    def __eq__(self, other: object) -> bool:
        return type(other) is ModuleRef and other.name == self.name

    def __hash__(self) -> int:
        return hash((ModuleRef, self.name))


class NamedRef(tuple):
    """A function or class by (module, qualified name), never imported here: written as an import of that name, hashed
    by it (as the object itself would be)."""

    __slots__ = ()

    def __new__(cls, module: str, qualname: str) -> NamedRef:
        parts = f"{module}.{qualname}".split(".") if type(module) is str and type(qualname) is str else [""]
        for part in parts:
            if not part.isidentifier() or keyword.iskeyword(part):
                raise SerializationError(
                    f"{module!r}:{qualname!r} is no dotted identifier: the config cannot import it"
                )
        return super().__new__(cls, (module, qualname))

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    @property
    def module(self) -> str:
        return self[0]

    @property
    def qualname(self) -> str:
        return self[1]

    def __repr__(self) -> str:
        return f"NamedRef({self.module}:{self.qualname})"


class ContentRef(tuple):
    """(reference, owner): written as ``reference`` (a :class:`NamedRef`, or a :class:`PartialRef` of one), hashed by
    ``owner._sis_hash()`` (e.g. the code it runs) with the reference's dims by their index. What a value with a
    ``config_reference()`` method (``by_content(...)``) becomes, so that this package needs nothing of the owner's."""

    __slots__ = ()

    def __new__(cls, reference: Any, owner: Any) -> ContentRef:
        func = reference.func if type(reference) is PartialRef else reference
        if type(func) is not NamedRef or not callable(getattr(owner, "_sis_hash", None)):
            raise SerializationError(
                f"config_reference() of {describe(owner)} gave {describe(reference)}: it must give a NamedRef or a "
                f"PartialRef of one, and the object must have a _sis_hash method"
            )
        return super().__new__(cls, (reference, owner))

    def __getnewargs__(self) -> tuple:  # pickled and deep-copied by its parts (the owner decides how it copies)
        return tuple(self)

    @property
    def reference(self) -> Any:
        return self[0]

    @property
    def owner(self) -> Any:
        return self[1]

    def __repr__(self) -> str:
        return f"ContentRef({self.reference!r}, {self.owner!r})"


def content_ref(value: Any) -> ContentRef:
    """The :class:`ContentRef` of a value with a ``config_reference()`` method (of kind CONTENT_OWNER)."""
    return ContentRef(type(value).config_reference(value), value)

"""How i6_core's ``serialization_v2`` (``ReturnnConfigV2``) writes a ``by_content`` marker: as the plain reference it
wraps, imported after the lines that pin the code that was hashed, so that the config needs no i6_rc_jobs where it
runs. That writer knows values, partials and calls (``__reduce_ex__``), no statements: the pinning lines run in an
``exec`` statement of their own (in the config's namespace, as a ReturnnConfigSerializer writes them), which the
reference's import names as its ``package`` argument (unused for an absolute name), so that the writer puts them
before it."""

from __future__ import annotations

import builtins
import functools
import importlib
import sys
from typing import Any, Optional

from i6_rc_jobs._serialization.pinned_code import CodePins, pin_lines


def writing_v2() -> bool:
    """Whether i6_core's serialization_v2 is writing a config now (it asks values for ``__reduce_ex__``)."""
    module = sys.modules.get("i6_core.serialization.serialization_v2")
    return module is not None and module.in_serialize_config()


class Call:
    """Written by serialization_v2 as ``func(*args)``; with ``statement``, as a statement of its own (never inlined,
    written once before the first value that names it)."""

    def __init__(self, func: Any, args: tuple, statement: bool = False):
        self.func, self.args, self.statement = func, args, statement

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return (self.func, self.args, None) if self.statement else (self.func, self.args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A stand-in for the reference in a ``functools.partial`` (which wants a callable): only ever written."""
        raise TypeError(f"{self.func.__name__}{self.args!r} is only written into a config, never called")


class _Source(str):
    """The pinning code, written (as any str, inline) as a literal that reads as the lines it holds: a raw
    triple-quoted string where the text allows one."""

    def __repr__(self) -> str:
        text = str(self)
        raw = "'''" not in text and not text.endswith(("\\", "'"))
        return f"r'''\n{text}'''" if raw else repr(text)


def reference(module: str, qualname: str, args: tuple, kwargs: dict[str, Any], pins: Optional[CodePins]) -> tuple:
    """The ``__reduce_ex__`` of a marker for serialization_v2: ``module.qualname`` imported after its pins (None: live,
    imported as it is), as a ``functools.partial`` with ``args`` and ``kwargs`` if it has any."""
    after = () if pins is None else (Call(builtins.exec, (_Source("\n".join(pin_lines(pins))),), True),)
    target: Any = Call(importlib.import_module, (module, *after))
    for name in qualname.split("."):
        target = Call(getattr, (target, name))
    if args or kwargs:
        return (functools.partial, (functools.partial(target, *args, **kwargs),))
    return target.__reduce_ex__(4)

"""What a loaded module is, read without running its code: RETURNN registers its old module names (``TFNetwork``,
``SprintCache``, ...) as lazy loaders that import the module on any attribute access, and a module's ``__getattr__``
(PEP 562) may import too. Going through ``sys.modules`` with ``getattr(module, "__file__")`` would import them: a
build would pay for modules nothing used (about 40 of RETURNN's, 0.5 s without bytecode) and depend on them."""

from __future__ import annotations

import sys
from typing import Any, Iterator, Optional


def module_value(module: Any, name: str) -> Any:
    """``module.<name>`` if the module holds it already, else None (never a lazy import)."""
    try:  # past the module's own __getattribute__ (RETURNN's lazy loaders import on any attribute, __dict__ too)
        namespace = object.__getattribute__(module, "__dict__")
    except AttributeError:  # not a module: an object without a __dict__
        return None
    return namespace.get(name) if isinstance(namespace, dict) else None


def module_file(module: Any) -> Optional[str]:
    """The module's ``__file__``, or None (built in, a namespace package, or not loaded yet)."""
    path = module_value(module, "__file__")
    return path if isinstance(path, str) else None


def module_files_since(since: Optional[dict[str, Any]] = None) -> Iterator[tuple[str, str]]:
    """(name, file) of every loaded module with a file, in ``sys.modules`` order, except those that ``since`` (a copy
    of ``sys.modules`` taken earlier) holds as the same module object."""
    for name, module in list(sys.modules.items()):
        if since is None or since.get(name) is not module:
            path = module_file(module)
            if path is not None:
                yield name, path

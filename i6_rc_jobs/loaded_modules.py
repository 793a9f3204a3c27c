"""What a loaded module is, read without running its code: RETURNN registers its old module names (``TFNetwork``,
``SprintCache``, ...) as lazy loaders that import the module on attribute access, and a module's ``__getattr__``
(PEP 562) may import too. Going through ``sys.modules`` with ``getattr(module, "__file__")`` would import them: a
build would pay for modules nothing used (about 40 of RETURNN's, 0.5 s without bytecode) and depend on them."""

from __future__ import annotations

from typing import Any, Optional


def module_value(module: Any, name: str) -> Any:
    """``module.<name>`` if the module holds it already, else None (never a lazy import)."""
    namespace = getattr(module, "__dict__", None)  # found without __getattr__: every module has one
    return namespace.get(name) if isinstance(namespace, dict) else None


def module_file(module: Any) -> Optional[str]:
    """The module's ``__file__``, or None (built in, a namespace package, or not loaded yet)."""
    path = module_value(module, "__file__")
    return path if isinstance(path, str) else None

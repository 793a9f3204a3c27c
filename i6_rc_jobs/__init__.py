"""Sisyphus jobs and helpers for i6_core recipes that build RETURNN models: returnn_common net dicts, RETURNN-frontend
and PyTorch configs.

This module is the public API, and the only one: every name a recipe may use is in ``__all__`` and importable from
here (``from i6_rc_jobs import ReturnnCommonSerializer, CreateConfigJob``); the packages whose names start with ``_``
are the implementation and change without notice. ``i6_rc_jobs.jobs`` and ``i6_rc_jobs.versioned`` are public by
their module paths, which Sisyphus writes into job directories and pickles. The names load lazily, so that
``import i6_rc_jobs`` (e.g. for the command line) stays cheap, and importing changes nothing outside the package
(the failure hints are opt-in: :func:`install_failure_hints`)."""

from __future__ import annotations

import ast
import importlib
import os
from typing import Any

from i6_rc_jobs._compat import moved_modules

#: The release, as CHANGELOG.md names it (setup.py reads it from here).
__version__ = "0.6.0"


def _exports() -> dict[str, tuple[str, str]]:
    """Each public name and where it is defined (module, name there), read from the imports of ``__init__.pyi``: the
    one list of the API, which IDEs and type checkers read too."""
    with open(os.path.join(os.path.dirname(__file__), "__init__.pyi"), encoding="utf-8") as file:
        tree = ast.parse(file.read())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.update({alias.asname or alias.name: (node.module, alias.name) for alias in node.names})
    return found


_EXPORTS = _exports()
__all__ = sorted(_EXPORTS)

moved_modules.install()


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'i6_rc_jobs' has no attribute {name!r}")
    module_name, attribute = _EXPORTS[name]
    module = importlib.import_module(module_name)
    if not hasattr(module, attribute):  # a module of a package, not yet imported
        return importlib.import_module(f"{module_name}.{attribute}")
    return getattr(module, attribute)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

"""Two copies of one function, from two versions of a repository (or a version and the installed package), must stay
two functions for RETURNN, which finds the function of a stack frame's code object (returnn_common names layers by
it, ``nn.naming._auto_setup_parent_name_ctx``) through a cache keyed by the code object
(``returnn.util.better_exchook._func_from_code_object_cache``). Code objects compare by content, not by file: the
same function in two copies is one key there, and whichever copy ran first is taken for the other. returnn_common
then names that other copy's layers differently (``dot`` and ``dot_0`` instead of ``energy`` and ``att``), so the
net dict, and its hash, would depend on what the process built before. Every process with versioned modules keys
that cache by identity instead. (RETURNN before 2025-05 has no such cache, and nothing to fix.)"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Optional

#: The module whose cache is keyed by identity.
MODULE = "returnn.util.better_exchook"
CACHE = "_func_from_code_object_cache"


class IdentityCache(dict):
    """code object -> function, by identity of the code object (kept alive with the entry, so its id stays its own).
    Only what better_exchook uses: ``get`` and item assignment."""

    def get(self, code: Any, default: Any = None) -> Any:
        entry = super().get(id(code))
        return entry[1] if entry is not None and entry[0] is code else default

    def __setitem__(self, code: Any, function: Any) -> None:
        super().__setitem__(id(code), (code, function))


def install() -> None:
    """Keys the cache by identity now if RETURNN's module is loaded, else as soon as it is."""
    module = sys.modules.get(MODULE)
    if module is not None:
        _key_by_identity(module)
    elif not any(isinstance(finder, _OnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OnImport())


def _key_by_identity(module: ModuleType) -> None:
    cache = getattr(module, CACHE, None)
    if cache is not None and not isinstance(cache, IdentityCache):
        setattr(module, CACHE, IdentityCache())


class _OnImport(importlib.abc.MetaPathFinder):
    """Finds RETURNN's module as the finders after it would and has it keyed by identity right after it ran."""

    def find_spec(self, fullname: str, path=None, target=None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != MODULE:
            return None
        finders = sys.meta_path
        for finder in finders[finders.index(self) + 1 :] if self in finders else finders:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenKeyByIdentity(spec.loader)
                return spec
        return None


class _ThenKeyByIdentity(importlib.abc.Loader):
    """The module's loader, with the cache keyed by identity after it ran the module."""

    def __init__(self, loader: importlib.abc.Loader):
        self.loader = loader

    def __getattr__(self, name: str) -> Any:  # get_code, get_source, ... for runpy, inspect and the like
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert module.__spec__ is not None  # the import system made the module from its spec
        module.__loader__ = module.__spec__.loader = self.loader  # the real one, for linecache, inspect, reloads
        self.loader.exec_module(module)
        _key_by_identity(module)

"""Loading a file of a version's tree as a module, under a name of its own per repository and commit, so that two
versions of one module live side by side and relative imports inside the repository work."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Optional

from . import dev
from .cache import RepoCache, cache_root
from .errors import VersionedImportError
from .names import Repo, Version, check_path

#: All versioned modules live under this package: ``i6_rc_imports.github_com.rwth_i6.returnn_common.c<commit>``
#: (``...returnn_common.dev`` for the development working copy).
ROOT_PACKAGE = "i6_rc_imports"


def import_(repo: str, path: str, version: Optional[str]) -> ModuleType:
    """The module (a file, or a directory as a package) at ``path`` in ``repo`` at ``version``, e.g.
    ``import_("github.com/rwth-i6/returnn_common", "nn/base.py", "20221031-3bd01ac8d7b2")``. The first use of a
    version fetches it into the cache (see :mod:`.cache`); later ones, in any process, read only the cache.
    ``version=None`` imports the development working copy instead, with a warning that says what it holds (see
    :mod:`.dev`)."""
    repo_, parts = Repo.parse(repo), check_path(path)
    root = cache_root()
    cache = RepoCache(root, repo_)
    if version is None:
        tree = cache.working_copy(dev.dev_root(root))
        dev.report(repo_, tree, root / "dev-patches")
        leaf, what = "dev", f"{repo_} development working copy"
    else:
        version_ = Version.parse(version)
        tree, commit = cache.tree(version_)
        leaf, what = f"c{commit}", f"{repo_} version {version_}"
    target = tree.joinpath(*parts)
    if not target.exists():
        raise VersionedImportError(f"{what}: no file or directory {path!r} in it")
    package = _version_package(repo_, leaf, tree)
    *directories, last = parts
    parent = ".".join([package, *directories])
    if target.is_dir() or last.endswith(".py"):
        return importlib.import_module(f"{parent}.{last.removesuffix('.py')}")
    return _load_file(f"{parent}.{_identifier(last)}", target)


def _version_package(repo: Repo, leaf: str, tree: Path) -> str:
    """Registers (once) the package whose ``__path__`` is the tree, and its parents; returns its name. A repository
    that is a package itself (``__init__.py`` at the top, e.g. returnn_common) runs that file as the package."""
    names = [ROOT_PACKAGE, *(_identifier(part) for part in (repo.host, repo.owner, repo.name)), leaf]
    for depth in range(1, len(names) + 1):
        name = ".".join(names[:depth])
        if name in sys.modules:
            continue
        init = tree / "__init__.py"
        if depth == len(names) and init.exists():
            spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(tree)])
        else:
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(tree)] if depth == len(names) else []
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        if spec.loader is not None:
            _run(spec.loader, module)
        if depth > 1:
            setattr(sys.modules[".".join(names[: depth - 1])], names[depth - 1], module)
    return ".".join(names)


def _run(loader, module: ModuleType) -> None:
    """Executes a module registered in sys.modules; a failure unregisters it, so that a later import retries."""
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[module.__name__]
        raise


def _load_file(name: str, path: Path) -> ModuleType:
    """A Python file whose name does not end in ``.py`` (e.g. a RETURNN ``.config``), as the module ``name``."""
    if name in sys.modules:
        return sys.modules[name]
    importlib.import_module(name.rpartition(".")[0])
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    _run(loader, module)
    return module


def _identifier(text: str) -> str:
    return re.sub(r"\W", "_", text)

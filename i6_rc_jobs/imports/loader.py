"""Loading a file of a version's tree as a module, under a name of its own per repository and commit, so that two
versions of one module live side by side and relative imports inside the repository work."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Optional

from . import dev, finder
from .cache import RepoCache, cache_root
from .errors import VersionedImportError
from .names import Repo, Version, check_path


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
        leaf, what = dev.report(tree, root / "dev-patches"), f"{repo_} development working copy"
    else:
        version_ = Version.parse(version)
        tree, commit = cache.tree(version_)
        leaf, what = f"c{commit}", f"{repo_} version {version_}"
    target = tree.joinpath(*parts)
    if not target.exists():
        raise VersionedImportError(f"{what}: no file or directory {path!r} in it")
    package = finder.package_name(repo_, leaf)
    finder.register(package, tree)
    *directories, last = parts
    parent = ".".join([package, *directories])
    if target.is_dir() or last.endswith(".py"):
        return importlib.import_module(f"{parent}.{last.removesuffix('.py')}")
    return _load_file(f"{parent}.{finder.identifier(last)}", target)


def _load_file(name: str, path: Path) -> ModuleType:
    """A Python file whose name does not end in ``.py`` (e.g. a RETURNN ``.config``), as the module ``name``."""
    if name in sys.modules:
        return sys.modules[name]
    importlib.import_module(name.rpartition(".")[0])
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # so that a later import tries again
        raise
    return module

"""Loading a file of a version's tree as a module, under a name of its own per repository and commit, so that two
versions of one module live side by side and relative imports inside the repository work."""

from __future__ import annotations

import importlib
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
    dotted = [part for part in directories if "." in part] + ([last] if target.is_dir() and "." in last else [])
    if dotted:
        raise VersionedImportError(f"{what}: {path!r}: a directory with a dot in its name cannot be a package")
    if target.is_dir() or (last.endswith(".py") and "." not in last.removesuffix(".py")):
        name = last.removesuffix(".py")
    else:  # e.g. a RETURNN .config: found by the finder under a name of its own
        name = finder.file_module_name(last)
        taken = [entry for entry in (f"{name}.py", name) if (target.parent / entry).exists()]
        if taken:
            raise VersionedImportError(f"{what}: {path!r} would be the module {name}, which {taken[0]!r} is already")
    return importlib.import_module(".".join([package, *directories, name]))

"""Loading a file of a version's tree as a module, under a name of its own per repository and commit, so that two
versions of one module live side by side and relative imports inside the repository work."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Optional

from i6_rc_jobs._imports import dev, finder
from i6_rc_jobs._imports.cache import RepoCache, cache_root
from i6_rc_jobs._imports.errors import VersionedImportError
from i6_rc_jobs._imports.names import Repo, Version, check_path


def import_(repo: str, path: str, version: Optional[str]) -> ModuleType:
    """The module (a file, or a directory as a package) at ``path`` in ``repo`` at ``version``, e.g.
    ``import_("github.com/rwth-i6/returnn_common", "nn/base.py", "20221031-3bd01ac8d7b2")``. The first use of a
    version fetches it into the cache (see :mod:`.cache`); later ones, in any process, read only the cache.
    ``version=None`` imports the development working copy instead, with a warning that says what it holds and how to
    pin this call (see :mod:`.dev`)."""
    repo_, parts = Repo.parse(repo), check_path(path)
    root = cache_root()
    cache = RepoCache(root, repo_)
    if version is None:
        tree = cache.working_copy(dev.dev_root(root))
        caller = sys._getframe(1)  # the user's call, for the edit that pins it
        call = f"{caller.f_code.co_filename}:{caller.f_lineno}"
        leaf, what = dev.report(tree, root / "dev-patches", call, repo, path), f"{repo_} development working copy"
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
    other = _taken_by(target, last, name)
    if other is not None:
        raise VersionedImportError(f"{what}: {path!r} would be the module {name}, which {other!r} is already")
    return importlib.import_module(".".join([package, *directories, name]))


def _taken_by(target: Path, last: str, name: str) -> Optional[str]:
    """The entry beside ``target`` that Python would import as the module ``name`` instead of it, if any: a package
    (with ``__init__.py``) comes before ``name.py``, which comes before a directory without one, and the files the
    finder names come after all of these, the first by name (see :func:`finder.file_module_name`)."""
    parent = target.parent
    if target.is_dir():
        return f"{name}.py" if not (target / "__init__.py").exists() and (parent / f"{name}.py").is_file() else None
    if last == f"{name}.py":
        return name if (parent / name / "__init__.py").is_file() else None
    return next((entry for entry in finder.entries_named(parent, name) if entry != last), None)

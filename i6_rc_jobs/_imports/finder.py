"""Finds versioned modules by name, ``i6_rc_jobs.versioned.<host>.<owner>.<name>.c<commit>`` (or ``...dev_...``),
in the cache. import_ tells it where it just put a version; a process that only has the name (a Sisyphus worker
unpickling a job that holds a function or class of a versioned module) gets it from the cache all the same."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Optional

from i6_rc_jobs._imports import proof
from i6_rc_jobs._imports.bytecode import SourceLoader
from i6_rc_jobs._imports.cache import TREES, cache_root
from i6_rc_jobs._imports.dev import dev_root, state_name
from i6_rc_jobs._imports.errors import VersionedImportError
from i6_rc_jobs._imports.git import COMMIT_AND_DATE, run_git
from i6_rc_jobs._imports.names import LOCAL_HOST, Repo

#: The package of all versioned modules (a real package, so that Python looks for its submodules).
ROOT_PACKAGE = "i6_rc_jobs.versioned"
_known: dict[str, Path] = {}  # version package name -> its tree


def package_name(repo: Repo, leaf: str) -> str:
    """The package of one version (``leaf`` = ``c<commit>``, or ``dev_<commit>_<patch digest>``) of ``repo``."""
    return ".".join([ROOT_PACKAGE, *map(identifier, (repo.host, repo.owner, repo.name)), leaf])


def register(name: str, tree: Path) -> None:
    _known[name] = tree


def install() -> None:
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def file_module_name(file_name: str) -> str:
    """The module name of a Python file that Python's own finder cannot import (``train.config``, ``a.b.py``):
    ``train_config``, ``a_b_py``."""
    return identifier(file_name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path=None, target=None) -> Optional[importlib.machinery.ModuleSpec]:
        if not fullname.startswith(ROOT_PACKAGE + "."):
            return None
        # host, owner, name, version, then inside the version
        parts = fullname.removeprefix(ROOT_PACKAGE + ".").split(".")
        if len(parts) > 4:  # inside a version: Python's finder, but for files named as file_module_name says
            found = _file_spec(fullname, parts[-1], path or []) or importlib.machinery.PathFinder.find_spec(
                fullname, path
            )
            return _from_source(found, ".".join([ROOT_PACKAGE, *parts[:4]]))
        if len(parts) < 4:
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = []
            return spec
        tree = _known[fullname] = _known.get(fullname) or _search(fullname, parts)
        init = tree / "__init__.py"  # a repository that is a package (returnn_common) runs its __init__.py
        if init.exists():
            locations = [str(tree)]
            return _from_source(
                importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=locations), fullname
            )
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        spec.submodule_search_locations = [str(tree)]
        return spec


def _from_source(
    spec: Optional[importlib.machinery.ModuleSpec], version: str
) -> Optional[importlib.machinery.ModuleSpec]:
    """``spec`` of a module of the version package ``version``, a source file loaded by :class:`.SourceLoader` (from
    the source: no ``.pyc`` of the cache or the copy runs); a file of a version is checked against its listing."""
    if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader or spec.origin is None:
        return spec
    tree, expected = _known[version], None
    if version.rpartition(".")[2].startswith("c"):
        listing = proof.verified_listing(tree, version)
        real = os.path.relpath(os.path.realpath(spec.origin), os.path.realpath(tree))  # through links in the tree
        expected = listing[Path(real).as_posix()][1]
    spec.loader = SourceLoader(spec.name, spec.origin, expected)
    return spec


def _file_spec(fullname: str, name: str, directories: list[str]) -> Optional[importlib.machinery.ModuleSpec]:
    """The first file that :func:`file_module_name` names ``name``, where Python's own finder has nothing."""
    for directory in map(Path, directories):
        if (directory / f"{name}.py").exists() or (directory / name).is_dir():
            return None  # Python's own finder's
        entries = entries_named(directory, name)
        if entries:
            file = str(directory / entries[0])
            loader = importlib.machinery.SourceFileLoader(fullname, file)
            return importlib.util.spec_from_file_location(fullname, file, loader=loader)
    return None


def entries_named(directory: Path, name: str) -> list[str]:
    """The entries of ``directory`` Python could import as the module ``name``, by name: ``name.py``, the directory
    ``name``, and the files :func:`file_module_name` gives that name."""
    return [
        entry
        for entry in _listdir(directory)
        if entry == f"{name}.py"
        or (entry == name and (directory / entry).is_dir())
        or (file_module_name(entry) == name and (directory / entry).is_file())
    ]


def _search(fullname: str, parts: list[str]) -> Path:
    """The tree of the version package ``fullname`` (``parts``: host, owner, name, version) found only by its name:
    in the cache's trees, or the development copies."""
    root = cache_root()
    development = parts[3].startswith("dev_")  # the working copy, whatever it holds now
    base = dev_root(root) if development else root / TREES
    leaf = "" if development else parts[3][1:]
    found = []
    for host in _listdir(base):
        for owner in _listdir(base / host):
            for name in _listdir(base / host / owner):
                if [identifier(host), identifier(owner), identifier(name)] == parts[:3]:
                    tree = base / host / owner / name / leaf
                    if tree.is_dir():
                        found.append(tree)
    if len(found) == 1 and not development:
        proof.verify(found[0], fullname)
    if not found and not development:
        raise VersionedImportError(_not_in_cache(root, fullname, parts))
    if len(found) != 1:
        problem = "is not in" if not found else f"matches {len(found)} trees in"
        raise VersionedImportError(
            f"{fullname} {problem} the import cache {root}: fetch its version first "
            f"(python -m i6_rc_jobs fetch REPO VERSION), or call import_ for it"
        )
    if development and state_name(found[0]) != parts[3]:
        raise VersionedImportError(
            f"{fullname}: the development working copy {found[0]} has changed since (it is "
            f"{state_name(found[0])} now), so it is not the code this name stands for"
        )
    return found[0]


def _not_in_cache(root: Path, fullname: str, parts: list[str]) -> str:
    """One line saying which version to fetch into the cache at ``root`` for the version package ``fullname``
    (``parts``: host, owner, name, ``c<commit>``), e.g. for a worker unpickling a job on a node with a cache of its
    own. The name holds only identifiers and the full commit: the repository's spelling and the commit's date (which
    a version needs) come from the cache's clone of the repository if it has one, else they are left to fill in."""
    commit = parts[3][1:]
    clones = root / "git"
    clone = next(
        (
            clones / host / owner / clone
            for host in _listdir(clones)
            for owner in _listdir(clones / host)
            for clone in _listdir(clones / host / owner)
            if [identifier(host), identifier(owner), identifier(clone.removesuffix(".git"))] == parts[:3]
        ),
        None,
    )
    repo = date = None
    if clone is not None:
        repo = str(clone.relative_to(clones)).removesuffix(".git")
        if clone.parent.parent.name == LOCAL_HOST:  # a repository on disk: named by its path, the clone's origin
            origin = run_git("--git-dir", str(clone), "config", "remote.origin.url", what=repo)
            repo = origin.stdout.strip().removeprefix("file://") or repo
        dated = run_git("--git-dir", str(clone), *COMMIT_AND_DATE, commit, "--", what=repo)
        date = dated.stdout.split()[1][:8] if dated.returncode == 0 and dated.stdout.startswith(commit) else None
    what = f"{repo or '/'.join(parts[:3])} commit {commit}"
    if repo is None:
        what += " (host/owner/name as its module name spells it)"
    command = f"python -m i6_rc_jobs fetch {repo or '<host>/<owner>/<name>'} {date or '<date>'}-{commit[:12]}"
    return f"{what} is not in the import cache {root} ({fullname}): fetch it first: {command}"


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def identifier(text: str) -> str:
    return re.sub(r"\W", "_", text)

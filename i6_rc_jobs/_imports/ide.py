"""A directory an IDE or a static analyzer (jedi, pyright) adds to its paths to resolve versioned modules by name:
``<dir>/i6_rc_jobs`` is the installed package, every entry a symbolic link to the real one, except that its
``versioned`` also holds ``<host>/<owner>/<name>/c<commit>``, links to the versions' trees in the cache. A directory
of the versions alone would not do: an analyzer, like Python, takes the first regular package ``i6_rc_jobs`` it
finds, and looks for ``i6_rc_jobs.versioned....`` in that one only. No stubs: the links give the versions' own
source, so that going to a definition opens the very file that runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterable

import i6_rc_jobs

from i6_rc_jobs._imports.cache import TREES
from i6_rc_jobs._imports.finder import ROOT_PACKAGE, package_name
from i6_rc_jobs._imports.names import Repo
from i6_rc_jobs._imports.proof import STAMP
from i6_rc_jobs._imports.static import Fetched

#: The file that marks a directory as made by :func:`lay_out`, which may replace what it made there before.
MARK = ".i6_rc_ide_paths"


def cached_versions(root: Path) -> list[Fetched]:
    """Every version in the cache at ``root`` (named ``<date>-<commit prefix>`` after its stamp)."""
    found = []
    for stamp in sorted((root / TREES).glob(f"*/*/*/*/{STAMP}")):
        tree = stamp.parent
        commit, date = stamp.read_text().split()
        repo = Repo(tree.parents[2].name, tree.parents[1].name, tree.parents[0].name)
        found.append(Fetched(repo, commit, f"{date[:8]}-{commit[:12]}", tree))
    return found


def lay_out(directory: Path, versions: Iterable[Fetched]) -> dict[str, Fetched]:
    """Makes ``directory`` anew for ``versions``; their package names (the first version of a name, should two
    repositories' names differ only where a package name cannot) -> version."""
    if directory.exists() and os.listdir(directory) and not (directory / MARK).exists():
        raise FileExistsError(f"{directory} is not empty and was not made by ide-paths: give a new directory")
    package = Path(i6_rc_jobs.__file__).resolve().parent
    overlay = directory / package.name
    shutil.rmtree(overlay, ignore_errors=True)  # removes the links, never what they point to
    overlay.mkdir(parents=True)
    (directory / MARK).touch()
    versioned = overlay.joinpath(*ROOT_PACKAGE.split(".")[1:])
    _link_entries(package, overlay, skip=versioned.name)
    versioned.mkdir()
    _link_entries(package / versioned.name, versioned)
    names: dict[str, Fetched] = {}
    for fetched in versions:
        name = package_name(fetched.repo, f"c{fetched.commit}")
        if name not in names:
            names[name] = fetched
            link = directory.joinpath(*name.split("."))
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(fetched.tree.resolve(), target_is_directory=True)
    return names


def _link_entries(source: Path, target: Path, skip: str = "") -> None:
    for entry in sorted(os.listdir(source)):
        if entry not in (skip, "__pycache__"):
            (target / entry).symlink_to(source / entry)

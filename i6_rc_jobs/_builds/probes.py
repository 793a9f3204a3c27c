"""What a build found where it looked, in a form that can be taken again later and compared: the kind of a path
that is no regular file (missing, a directory), the names in a directory, the file a module name resolves to. The
build process records these (:mod:`.record`) and the manager takes them again before it serves an entry
(:mod:`.recheck`): both use these functions, so that "the same" means the same on both sides."""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import stat
import sysconfig
from typing import Iterable, Optional

#: os.stat before :mod:`.record` wraps it: what probes itself is not recorded.
_stat = os.stat
#: A stat as compared: (mode, dev, ino, size, mtime_ns, ctime_ns), None if nothing is there.
Stat = Optional[tuple[int, ...]]


def stat_of(path: str) -> Stat:
    """The path's stat as compared (symbolic links followed), None if nothing can be stat'ed there."""
    try:
        st = _stat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def kind(path: str) -> Optional[str]:
    """What is at ``path`` (symbolic links followed): "file", "dir", "other", or None if nothing."""
    try:
        mode = _stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:  # e.g. a loop of links, no permission: that is what was found
        return f"error {e.errno}"
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def listing(path: str) -> Optional[str]:
    """The SHA-256 of the sorted names in the directory, None if it cannot be listed."""
    try:
        names = sorted(os.fsencode(entry.name) for entry in os.scandir(path))
    except OSError:
        return None
    return hashlib.sha256(b"\0".join(names)).hexdigest()


def outcome(spec: Optional[importlib.machinery.ModuleSpec]) -> Optional[list]:
    """What a module spec says of where its module is: [origin (None for a namespace package), search locations of a
    package], None for no spec or a namespace package of no directory."""
    if spec is None or (spec.loader is None and not spec.submodule_search_locations):
        return None
    return [spec.origin if spec.loader is not None else None, list(spec.submodule_search_locations or [])]


def resolve(name: str, path: list[str]) -> Optional[list]:
    """Where the path-based import system finds module ``name`` on ``path`` (sys.path, or its package's
    ``__path__``), as :func:`outcome` says. (``_get_spec`` is ``PathFinder.find_spec`` without making a namespace
    package's path object, which needs the parent package imported.)"""
    return outcome(importlib.machinery.PathFinder._get_spec(name, path))  # type: ignore[attr-defined]


def forget_listings(paths: Iterable[str]) -> None:
    """Makes the import system list the directories on ``paths`` again: its cache of a directory's names is kept
    while the directory's mtime is the same, which a file made within the clock's granularity keeps."""
    for path in paths:
        finder = importlib.machinery.PathFinder._path_importer_cache(path)  # type: ignore[attr-defined]
        if finder is not None and hasattr(finder, "invalidate_caches"):
            finder.invalidate_caches()


def installed_roots() -> tuple[str, ...]:
    """The directories of this Python's installed packages and standard library (site-packages, ``lib/python3.x``),
    as given and as their real paths, each ending in a separator (a prefix of the paths under them)."""
    paths = sysconfig.get_paths()
    roots = {paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib") if name in paths}
    roots |= {os.path.realpath(root) for root in roots}
    return tuple(os.path.join(root, "") for root in sorted(roots))

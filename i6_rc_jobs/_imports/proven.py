"""Proofs of versions kept between processes, per user: the full check of a version (:func:`.proof.verify`) reads
every file of it; a later process of the same user takes the kept proof instead where the stat of every file, link
and directory of the tree proves it unchanged since the check.

What the stat proves: it is equal in every field (type and mode, owner and group, device, inode, size, mtime and
ctime) and every ctime lay more than ``RACY_NS`` before the check began. The kernel sets a file's ctime at every
change of its content, mode or owner, and a directory's at every file made, removed or renamed in it; no user can
set it back. So a file rewritten (even with its old size and mtime, ``touch -d``), replaced, added (a planted
``__pycache__``) or removed since, by anyone who may write to the cache, is seen, and the version is checked in full
again. A change within the clock's granularity of the check could keep every field (as git's "racily clean"
files), hence the margin. The proofs are kept where only this user can write (:mod:`.user_cache`), each with the
digest of the listing it proved."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._imports.user_cache import user_directory

#: A file changed less than this before a check began is not taken as proven by its stat later.
RACY_NS = 2_000_000_000
_DIRECTORY = "proofs"
#: The format of a kept proof: one of another format is not used.
FORMAT = 1

#: (mode, uid, gid, dev, ino, size, mtime_ns, ctime_ns) of each entry of a tree, by its path in the tree ("." the
#: tree itself).
Stats = dict[str, list[int]]


def snapshot(tree: Path) -> Stats:
    """The stat of every file, link and directory in ``tree`` (links not followed)."""
    stats: Stats = {}
    for directory, subdirectories, files in os.walk(tree):
        relative = os.path.relpath(directory, tree)
        for name in [".", *subdirectories, *files]:
            path = os.path.normpath(os.path.join(relative, name))
            st = os.lstat(os.path.join(tree, path))
            stats[path] = [st.st_mode, st.st_uid, st.st_gid, st.st_dev, st.st_ino, st.st_size]
            stats[path] += [st.st_mtime_ns, st.st_ctime_ns]
    return stats


def _file(tree: Path) -> Optional[Path]:
    directory = user_directory(_DIRECTORY)
    name = hashlib.sha256(os.fsencode(os.path.abspath(tree))).hexdigest()
    return None if directory is None else directory / f"{name}.json"


def holds(tree: Path, listing: bytes) -> bool:
    """Whether a proof this user kept for ``tree`` and this listing holds (see the module docstring)."""
    path = _file(tree)
    if path is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # none kept
        return False
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
        with os.fdopen(os.dup(fd), "rb") as f:
            kept = json.load(f)
    except ValueError:
        return False
    finally:
        os.close(fd)
    if not isinstance(kept, dict) or kept.get("format") != FORMAT or kept.get("tree") != os.path.abspath(tree):
        return False
    if kept.get("listing_sha256") != hashlib.sha256(listing).hexdigest():
        return False
    stats, began = kept["stats"], kept["began_ns"]
    for relative, recorded in stats.items():
        try:
            st = os.lstat(os.path.join(tree, relative))
        except OSError:
            return False
        now = [st.st_mode, st.st_uid, st.st_gid, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        if now != recorded or st.st_ctime_ns >= began - RACY_NS:
            return False
    return True


def keep(tree: Path, listing: bytes, stats: Stats, began_ns: int) -> None:
    """Keeps the proof of ``tree`` (its ``stats`` taken before its check, which began at ``began_ns``), unless a
    stat is too recent to prove anything later; nothing if this user has no directory of its own."""
    path = _file(tree)
    if path is None or any(recorded[7] >= began_ns - RACY_NS for recorded in stats.values()):
        return
    data = {
        "format": FORMAT,
        "tree": os.path.abspath(tree),
        "listing_sha256": hashlib.sha256(listing).hexdigest(),
        "began_ns": began_ns,
        "stats": stats,
    }
    try:
        write_atomically(path, json.dumps(data).encode(), 0o600)
    except OSError:  # a full disk: the next process checks the version in full
        pass

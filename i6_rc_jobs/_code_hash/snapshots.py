"""Snapshots of the setup's model code, by content: the exact bytes of every module a fingerprint covers, as the build
read and hashed them, so that a job imports what its hash names, not the live ``recipe/`` of the day it runs.

Layout under the root (``$I6_RC_SNAPSHOTS``, default ``snapshots`` in the build cache, e.g.
``~/.cache/i6_rc_jobs/builds/snapshots``: where the jobs run, it must be the same path): ``<sha[:2]>/<sha>/<module path>``, e.g. ``3f/3f9c.../my_models/conformer.py`` for
module ``my_models.conformer`` whose source has the SHA-256 ``3f9c...``; a package's code is its ``__init__.py``.
A file is written once, atomically, read-only, and never changed: a name is its content, so a snapshot is shared by
every job and config whose code it is, and an edit of the model adds a file for each module that changed. Whoever
reads one checks the SHA-256 (the written config does, before it runs the code)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from i6_rc_jobs._builds.store import cache_root as builds_cache_root
from i6_rc_jobs._util.atomic_file import write_atomically

ENV = "I6_RC_SNAPSHOTS"


class SnapshotError(Exception):
    """A snapshot file that is missing or not the code that was hashed."""


def snapshot_root() -> Path:
    """``$I6_RC_SNAPSHOTS`` or ``snapshots`` in the build cache."""
    return Path(os.environ.get(ENV) or builds_cache_root() / "snapshots")


def module_path(name: str, package: bool) -> str:
    """Where module ``name``'s source sits under a snapshot: ``a/b.py``, or ``a/b/__init__.py`` for a package."""
    return name.replace(".", "/") + ("/__init__.py" if package else ".py")


def file_of(root: Path, name: str, sha256: str, package: bool) -> Path:
    return root / sha256[:2] / sha256 / module_path(name, package)


def store(root: Path, name: str, package: bool, source: bytes) -> str:
    """Keeps ``source`` as module ``name``'s code (once: a file of that content is kept as it is) and returns its
    SHA-256."""
    sha256 = hashlib.sha256(source).hexdigest()
    path = file_of(root, name, sha256, package)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, source, mode=0o444)
    return sha256


def read(root: Path, name: str, sha256: str, package: bool) -> bytes:
    """Module ``name``'s code of that SHA-256, checked."""
    path = file_of(root, name, sha256, package)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SnapshotError(f"{path}: the snapshot of {name} cannot be read ({e.strerror})") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SnapshotError(f"{path}: not the code of {name} that was hashed (its SHA-256 differs): remove the file")
    return data

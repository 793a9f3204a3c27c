"""Fingerprints of the files a build depended on, and whether they still hold.

A file's fingerprint is the SHA-256 of its content, recorded with its stat (device, inode, size, mtime, ctime). The
stat only spares reading a file again: it is trusted as proof of "unchanged" only when it is equal in every field and
the file's ctime lay well before the moment it was recorded (``RACY_NS``; as git's "racily clean" files, an edit
within the clock's granularity of the recording could keep every field). Any other file is read and hashed again, so
that an edit that kept size and mtime (``touch -d``, an edit in the same second) is seen: the kernel sets the ctime
on every change and no user can set it back."""

from __future__ import annotations

import hashlib
import os
from typing import Optional

#: A file changed less than this before it was fingerprinted is always read again when verified.
RACY_NS = 2_000_000_000

#: (sha256 hex or None for a missing file, dev, ino, size, mtime_ns, ctime_ns)
Fingerprint = list


def _stat_fields(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def digest(path: str) -> Optional[str]:
    """The SHA-256 of the file's content, None if it is missing or not a regular file."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _trusted(recorded: Fingerprint, st: os.stat_result, recorded_at_ns: int) -> bool:
    """Whether the stat proves the file unchanged since ``recorded`` was taken (see the module docstring)."""
    return recorded[0] is not None and _stat_fields(st) == recorded[1:] and st.st_ctime_ns < recorded_at_ns - RACY_NS


def fingerprint(path: str, known: Optional[Fingerprint] = None, known_at_ns: int = 0) -> Fingerprint:
    """The file's content hash with the stat it had when read (the stat taken first: a change while reading moves the
    ctime past it, so that the stat is not trusted later); ``known``, a fingerprint of it recorded at
    ``known_at_ns``, if the stat proves it still holds."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return [None, 0, 0, 0, 0, 0]
    if known is not None and _trusted(known, st, known_at_ns):
        return known
    return [digest(path), *_stat_fields(st)]


class Verifier:
    """Checks fingerprints against the files as they are now; each path is checked once per verifier (one lookup or
    one ``build_many``), so that entries sharing files (every build loads the same libraries) share the work."""

    def __init__(self) -> None:
        self._checked: dict[tuple[str, str, tuple], bool] = {}

    def unchanged(self, path: str, recorded: Fingerprint, recorded_at_ns: int) -> bool:
        sha, *fields = recorded
        key = (path, sha, tuple(fields))
        found = self._checked.get(key)
        if found is None:
            found = self._checked[key] = self._unchanged(path, recorded, recorded_at_ns)
        return found

    @staticmethod
    def _unchanged(path: str, recorded: Fingerprint, recorded_at_ns: int) -> bool:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return recorded[0] is None
        return _trusted(recorded, st, recorded_at_ns) or digest(path) == recorded[0]

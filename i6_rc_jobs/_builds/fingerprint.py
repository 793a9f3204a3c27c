"""Fingerprints of the files a build depended on, and whether they still hold.

A file's fingerprint is the SHA-256 of its content, recorded with its stat (device, inode, size, mtime, ctime). The
stat only spares reading a file again: it is trusted as proof of "unchanged" only when it is equal in every field and
the file's ctime lay well before the moment it was recorded (``RACY_NS``; as git's "racily clean" files, an edit
within the clock's granularity of the recording could keep every field). Any other file is read and hashed again, so
that an edit that kept size and mtime (``touch -d``, an edit in the same second) is seen: the kernel sets the ctime
on every change and no user can set it back.

A build server's start fingerprints every file it loaded (TensorFlow's hundreds of MB among them): those
fingerprints are kept between starts in a file of the user's (:class:`Kept`), under the same rule."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._util.own_files import OthersCouldWrite, read_own
from i6_rc_jobs._builds import probes

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


#: The digests this process read, by path: (the stat taken before the read, the digest, when that stat was taken).
#: A later lookup trusts one under the rule of :func:`_trusted`, so that a file whose stat moved since its build
#: (copied, ``chmod``) is read once per process rather than once per lookup.
_proven: dict[str, tuple[list[int], Optional[str], int]] = {}


class Verifier:
    """Checks fingerprints against the files as they are now; each path is checked once per verifier (one lookup or
    one ``build_many``), so that entries sharing files (every build loads the same libraries) share the work. Every
    verifier stats each file again; a file read by an earlier one is not read again while its stat is unchanged."""

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
        at = time.time_ns()
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return recorded[0] is None
        if _trusted(recorded, st, recorded_at_ns):
            return True
        proven = _proven.get(path)
        if proven is not None and _trusted([proven[1], *proven[0]], st, proven[2]):
            return proven[1] == recorded[0]
        sha = digest(path)
        _proven[path] = (_stat_fields(st), sha, at)
        return sha == recorded[0]


#: The format of the kept fingerprints' file: a file of another format is not read.
KEPT_FORMAT = 1


def kept_path() -> Path:
    """Where the user's fingerprints are kept between build servers: ``~/.cache/i6_rc_jobs/fingerprints-<uid>.json``."""
    return Path.home() / ".cache" / "i6_rc_jobs" / f"fingerprints-{os.geteuid()}.json"


class Kept:
    """Fingerprints kept between processes, each with when it was taken (``path -> fingerprint + [recorded_ns]``),
    in a file only the user may write (any other is not read: a wrong digest would be recorded as a file's)."""

    def __init__(self, path: Path):
        self.path = path
        self.files: dict[str, list] = self._load()
        self.changed = False

    def _load(self) -> dict[str, list]:
        try:
            kept = read_own(self.path)
            data = json.loads(kept) if kept is not None else None
        except OthersCouldWrite as e:
            print(f"build server: the kept fingerprints {e}: not used; remove it", file=sys.stderr)
            return {}
        except ValueError:  # corrupt: taken anew
            return {}
        return data["files"] if isinstance(data, dict) and data.get("format") == KEPT_FORMAT else {}

    def fingerprints(self, paths: list[str], known: dict[str, list]) -> dict[str, Fingerprint]:
        """The files' fingerprints, taken from ``known`` (as kept) or from those kept where their stat proves them;
        the kept ones are updated (saved by :meth:`save`)."""
        at = time.time_ns()
        found: dict[str, Fingerprint] = {}
        for path in paths:
            given = self.files.get(path) or known.get(path)
            prior = given[:6] if given else None
            fp = found[path] = fingerprint(path, prior, given[6] if given else 0)
            kept = [*fp, given[6] if given and fp is prior else at]
            if fp[0] is not None and self.files.get(path) != kept:
                self.files[path] = kept
                self.changed = True
        return found

    def save(self) -> None:
        """Writes the kept fingerprints if any is new, without those of files that are gone."""
        if not self.changed:
            return
        files = {path: fp for path, fp in self.files.items() if probes.kind(path) == "file"}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomically(self.path, json.dumps({"format": KEPT_FORMAT, "files": files}).encode(), 0o600)
        except OSError as e:  # a home that cannot be written: the next start reads the files again
            print(f"build server: the fingerprints could not be kept in {self.path}: {e}", file=sys.stderr)

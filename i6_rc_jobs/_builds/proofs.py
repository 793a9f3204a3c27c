"""Module resolutions kept between processes, so that a manager's start does not resolve again the thousands of module
names its entries and bases looked for (half a second of a warm start). Each proof is kept with the stats it rests
on (see :mod:`.recheck`): a later process takes it only where every one of those stats is the same and its ctime lay
well before it was taken, and resolves the name again otherwise. Kept in a file of the user's, per Python (its
version and module suffixes: a ``.so`` of one Python is no module of another; the file is in ``marshal``'s format of
that Python, read in a few milliseconds), that only the user may write; any other is not read."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import marshal
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

from i6_rc_jobs._builds.fingerprint import RACY_NS
from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._util.own_files import OthersCouldWrite, read_own

#: The format of the file: a file of another format is not read.
FORMAT = 2
#: At most this many proofs are kept, none older than ``MOST_DAYS`` (the oldest go first; a name whose proof was
#: dropped is resolved again once).
MOST = 20_000
MOST_DAYS = 30
#: (name, the directories searched) -> where it resolved, the stats it rests on (path -> stat, None for nothing
#: there), when they were taken (the earliest).
Key = tuple[str, tuple[str, ...]]
Proof = tuple[Optional[list], dict[str, Optional[tuple[int, ...]]], int]


def python_tag() -> str:
    """What a resolution and the file's format depend on of the Python: its version and its modules' suffixes."""
    what = [sys.version, importlib.machinery.all_suffixes(), sys.implementation.cache_tag]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


def proofs_path() -> Path:
    """``~/.cache/i6_rc_jobs/module-proofs-<uid>-<python>.marshal``."""
    return Path.home() / ".cache" / "i6_rc_jobs" / f"module-proofs-{os.geteuid()}-{python_tag()}.marshal"


class Kept:
    """The proofs of a file, each path's stat kept once (a module name on ``sys.path`` rests on every directory of
    it): taken as :data:`Proof` when asked for."""

    def __init__(self, proofs: dict[Key, tuple[Optional[list], tuple[str, ...]]], stats: dict[str, tuple]):
        self.proofs = proofs
        self.stats = stats

    def get(self, key: Key) -> Optional[Proof]:
        """The proof, if each stat it rests on was taken well after its ctime (each path's stat was taken at its own
        time: a directory that changed since another was stat'ed is trusted by its own)."""
        kept = self.proofs.get(key)
        if kept is None:
            return None
        found, rests_on = kept
        taken = {where: self.stats[where] for where in rests_on}
        if any(was is not None and was[5] >= at - RACY_NS for was, at in taken.values()):
            return None
        return (
            found,
            {where: was for where, (was, _) in taken.items()},
            max((at for _, at in taken.values()), default=0),
        )


def load(path: Path) -> Kept:
    """The proofs kept in ``path``; none if it is missing, corrupt, of another format or writable by others."""
    none = Kept({}, {})
    try:
        kept = read_own(path)
        data: Any = marshal.loads(kept) if kept is not None else None
    except (OthersCouldWrite, ValueError, EOFError, TypeError):  # not trusted, or corrupt: taken anew
        return none
    ours = isinstance(data, tuple) and len(data) == 4 and data[:2] == (FORMAT, python_tag())
    return Kept(data[2], data[3]) if ours and isinstance(data[2], dict) and isinstance(data[3], dict) else none


def save(path: Path, proofs: dict[Key, Proof], kept: Kept) -> None:
    """Writes the proofs (the ``MOST`` taken last, of the last ``MOST_DAYS``), and those of ``kept`` this process did
    not take, each path's stat once: where two proofs rest on two stats of one path, the older one is left out."""
    since = time.time_ns() - MOST_DAYS * 86400 * 10**9
    every = {key: proof for key in kept.proofs if (proof := kept.get(key)) is not None}
    every.update(proofs)
    ordered = sorted((item for item in every.items() if item[1][2] >= since), key=lambda item: item[1][2])[-MOST:]
    stats: dict[str, tuple] = {}
    for _, (_, taken, at) in ordered:
        for where, was in taken.items():
            if where not in stats or stats[where][0] != was:  # the earliest time a stat was taken is kept
                stats[where] = (was, at)
    written = {
        key: (found, tuple(taken))
        for key, (found, taken, _) in ordered
        if all(stats[where][0] == was for where, was in taken.items())
    }
    used = {where for _, rests_on in written.values() for where in rests_on}
    data = (FORMAT, python_tag(), written, {where: stats[where] for where in used})
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(path, marshal.dumps(data), 0o600)
    except OSError:  # a home that cannot be written: the next start resolves the names again
        pass

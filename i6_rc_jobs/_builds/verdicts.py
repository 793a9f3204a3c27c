"""Verdicts kept between processes: that a record (a base, a build's dependencies) held, with the stat of every path
its proof rested on (the files it read, the directories it listed, the directories and candidates each module name's
resolution rests on, :mod:`.recheck`) and the kind of each path it probed. A later lookup takes the verdict where each
of those stats is the same now (equal in every field, each ctime well before the stats were taken: the rule of
:mod:`.fingerprint`) and each probed path is of its kind still: then nothing the proof read can have changed, and the
record is not proven item by item again (a warm manager start stats its records' few thousand paths instead of
proving each file, path and module name, and reads no module proofs). A verdict is taken only where the stats were the
same before and after the proof, and is kept, as the module proofs are (:mod:`.proofs`), in a file of the user's
(``~/.cache/i6_rc_jobs/verdicts-<uid>/``), one per record."""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from i6_rc_jobs._builds import probes
from i6_rc_jobs._builds.fingerprint import RACY_NS
from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._util.own_files import OthersCouldWrite, read_own

#: The format of a kept verdict: one of another format is not used.
FORMAT = 1
#: A verdict is kept this many days after its record was proven.
MOST_DAYS = 30


@dataclass(frozen=True)
class Verdict:
    """A record held while each of ``paths`` had its stat in ``stats`` (taken at ``taken_ns``) and each of ``probed``
    its kind in ``kinds`` (:func:`.probes.kind`: what a probe found depends on nothing else)."""

    paths: tuple[str, ...]
    stats: tuple[probes.Stat, ...]
    probed: tuple[str, ...]
    kinds: tuple[Optional[str], ...]
    taken_ns: int

    def holds(self) -> bool:
        """Whether every path has its stat and kind still (then nothing the record's proof read changed)."""
        stats, kinds = list(map(probes.stat_of, self.paths)), list(map(probes.kind, self.probed))
        return stats == list(self.stats) and kinds == list(self.kinds)

    def trusted(self) -> bool:
        """Whether every stat's ctime lay well before it was taken (a later equal stat then proves no change)."""
        return all(was is None or was[5] < self.taken_ns - RACY_NS for was in self.stats)

    def without(self, prefixes: tuple[str, ...]) -> Verdict:
        """The verdict on the paths not under ``prefixes`` (those settled for the process need no stat again)."""
        paths, stats = _outside(prefixes, self.paths, self.stats)
        probed, kinds = _outside(prefixes, self.probed, self.kinds)
        return Verdict(paths, stats, probed, kinds, self.taken_ns)


def _outside(prefixes: tuple[str, ...], paths: tuple[str, ...], values: tuple[Any, ...]) -> tuple[tuple, tuple]:
    """``paths`` not under ``prefixes``, and their values."""
    kept = [(path, value) for path, value in zip(paths, values) if not path.startswith(prefixes)]
    return tuple(path for path, _ in kept), tuple(value for _, value in kept)


def take(paths: list[str], probed: list[str]) -> Verdict:
    """The stats of ``paths`` and the kinds of ``probed`` now."""
    taken_ns = time.time_ns()
    stats = tuple(map(probes.stat_of, paths))
    return Verdict(tuple(paths), stats, tuple(probed), tuple(map(probes.kind, probed)), taken_ns)


def _file(key: str, recorded_ns: int) -> Path:
    name = hashlib.sha256(f"{key} {recorded_ns}".encode()).hexdigest()[:32]
    return Path.home() / ".cache" / "i6_rc_jobs" / f"verdicts-{os.geteuid()}" / f"{name}.marshal"


def load(key: str, recorded_ns: int) -> Optional[Verdict]:
    """The verdict kept for the record (``key`` as :mod:`.lookup` names it, recorded at ``recorded_ns``); None if
    there is none, or it is corrupt, of another format, or writable by others."""
    try:
        kept = read_own(_file(key, recorded_ns))
        data: Any = marshal.loads(kept) if kept is not None else None
    except (OthersCouldWrite, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(data, tuple) and len(data) == 7 and data[:2] == (FORMAT, f"{key} {recorded_ns}")):
        return None
    verdict = Verdict(*data[2:])
    whole = len(verdict.paths) == len(verdict.stats) and len(verdict.probed) == len(verdict.kinds)
    return verdict if whole and verdict.trusted() else None


def keep(key: str, recorded_ns: int, verdict: Verdict) -> None:
    """Keeps the verdict for later processes (nothing if the user's cache cannot be written: they prove it again),
    and removes those kept more than ``MOST_DAYS`` ago (a record proven again keeps a new one)."""
    path = _file(key, recorded_ns)
    data = (FORMAT, f"{key} {recorded_ns}", *dataclasses.astuple(verdict))
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(path, marshal.dumps(data), 0o600)
        since = time.time() - MOST_DAYS * 86400
        for kept in os.scandir(path.parent):
            if kept.stat(follow_symlinks=False).st_mtime < since:
                os.unlink(kept.path)
    except OSError:
        pass

"""Taking a record's probes, listings and module resolutions again (:mod:`.probes`), as a lookup round does: each
path is probed and listed once per round (a ``build_many``), and a module name's resolution proven by an earlier
round of this process is not looked up again while every stat it rests on is the same.

A resolution rests on the directories searched (the import system finds a module by the names in them: adding,
removing or renaming one changes the directory's ctime) and on each candidate it found there (``name``,
``name.py``, ... and a package's ``__init__`` files, stat'ed as the import system takes them: a link's target). Those
stats are taken before the resolution and trusted under the rule of :mod:`.fingerprint` (equal in every field, the
ctime well before they were taken): anything else is resolved again. The proofs are kept between processes
(:mod:`.proofs`), under the same rule, so that a manager's start does not resolve its thousands of names again.

A resolution that rests only on the Python's installed packages and standard library (:func:`.probes.installed_roots`:
a name in torch's packages, looked for in ``torch/nn``), once proven, is settled for the process: not stat'ed again in
it, as the process's own imports from there are not taken again either. Every other resolution (a name looked for on
``sys.path``, whose entries include the setup's ``recipe/``) is proven at every round."""

from __future__ import annotations

import atexit
import importlib.machinery
import os
import sys
import time
from typing import Optional

from i6_rc_jobs._builds import probes, proofs
from i6_rc_jobs._builds.fingerprint import RACY_NS
from i6_rc_jobs._builds.json_records import Recorded

Stat = probes.Stat

#: Module resolutions this process proved (those of earlier processes are read from the kept proofs): (name, path
#: searched) -> (where it resolved, the stats it rests on, when they were taken).
_resolved: dict[proofs.Key, proofs.Proof] = {}
#: What is settled for the process: resolutions proven that rest only on installed paths, and the probes and listings
#: of installed paths found as recorded.
settled: set[proofs.Key] = set()
settled_probes: set[tuple[str, Optional[str]]] = set()
settled_listings: set[tuple[str, Optional[str]]] = set()
#: The installed packages' and standard library's directories.
INSTALLED = probes.installed_roots()
#: Seconds between writes of the kept proofs (a write that would come sooner waits for a later round or the exit).
_SAVE_EVERY_S = 5.0


class _Kept:
    """The kept proofs' file: read once per process, written when this process proved names it did not hold."""

    kept: Optional[proofs.Kept] = None
    unsaved = False
    saved_at = 0.0
    at_exit = False


def _kept() -> proofs.Kept:
    if _Kept.kept is None:
        _Kept.kept = proofs.load(proofs.proofs_path())
    return _Kept.kept


def keep_proofs() -> None:
    """Keeps the proofs for later processes, if this one made new ones: now, or at exit if the last write was less
    than ``_SAVE_EVERY_S`` ago (a config that makes one job at a time looks up after each)."""
    if not _Kept.unsaved:
        return
    if time.monotonic() - _Kept.saved_at < _SAVE_EVERY_S:
        if not _Kept.at_exit:
            _Kept.at_exit = True
            atexit.register(keep_proofs)
        return
    _Kept.unsaved = False
    _Kept.saved_at = time.monotonic()
    proofs.save(proofs.proofs_path(), dict(_resolved), _kept())


class Recheck:
    """One lookup round's checks of records: its stats, kinds and listings are shared by the records it checks."""

    def __init__(self) -> None:
        self._stats: dict[str, Stat] = {}
        self._kinds: dict[str, Optional[str]] = {}
        self._listings: dict[str, Optional[str]] = {}
        self._listings_at: dict[str, tuple[Stat, frozenset[str], int]] = {}
        self._proofs: dict[proofs.Key, Optional[proofs.Proof]] = {}

    def changed(self, record: Recorded) -> Optional[str]:
        """What of the probes, listings and module resolutions ``record`` holds no longer holds, None if all does."""
        for path, found in record["probes"].items():
            if (path, found) in settled_probes:
                continue
            if self._kind(path) != found:
                return f"{path} is now {self._kind(path) or 'missing'}, was {found or 'missing'}"
            if path.startswith(INSTALLED):
                settled_probes.add((path, found))
        for path, digest in record["listings"].items():
            if (path, digest) in settled_listings:
                continue
            if self._listing(path) != digest:
                return f"the names in {path} changed"
            if path.startswith(INSTALLED):
                settled_listings.add((path, digest))
        keys = [(name, tuple(path)) for name, path, _ in record["modules"]]
        unproven = {key for key in keys if self._proof(key) is None}
        probes.forget_listings({directory for _, path in unproven for directory in path})
        for key, (name, path, found) in zip(keys, record["modules"]):
            proof = self._proof(key) if key not in unproven else None
            now = proof[0] if proof is not None else self._resolve(name, path)
            if now != found:
                return f"module {name} now resolves to {(now or ['nothing'])[0]}, was {(found or ['nothing'])[0]}"
        return None

    @staticmethod
    def rests_on(record: Recorded) -> Optional[tuple[list[str], list[str]]]:
        """The paths whose stat the record's proof rests on (its files and the directories it listed, and what the
        resolution of each module name it looked for rests on as proven so far), and those whose kind only (the
        paths it probed, such as ``/tmp``, whose stat moves all the time); None if a name has no resolution yet."""
        paths = [*record["files"], *record["listings"]]
        for name, path, _ in record["modules"]:
            key = (name, tuple(path))
            proof = _resolved.get(key) or _kept().get(key)
            if proof is None:
                return None
            paths += proof[1]
        return list(dict.fromkeys(paths)), list(record["probes"])

    def _kind(self, path: str) -> Optional[str]:
        if path not in self._kinds:
            self._kinds[path] = probes.kind(path)
        return self._kinds[path]

    def _listing(self, path: str) -> Optional[str]:
        if path not in self._listings:
            self._listings[path] = probes.listing(path)
        return self._listings[path]

    def _stat(self, path: str) -> Stat:
        if path not in self._stats:
            self._stats[path] = probes.stat_of(path)
        return self._stats[path]

    def _proof(self, key: proofs.Key) -> Optional[proofs.Proof]:
        """The kept resolution of the name on the path if every stat it rests on holds, else None (once per round)."""
        if key in settled:
            return _resolved[key]
        if key not in self._proofs:
            proof = _resolved.get(key) or _kept().get(key)
            if proof is not None:
                _, stats, at = proof
                if not all(
                    self._stat(where) == was and (was is None or was[5] < at - RACY_NS) for where, was in stats.items()
                ):
                    proof = None
                else:
                    _resolved[key] = proof
                    if all(where.startswith(INSTALLED) for where in stats):
                        settled.add(key)
            self._proofs[key] = proof
        return self._proofs[key]

    def _resolve(self, name: str, path: list[str]) -> Optional[list]:
        """Resolves the name and keeps the proof, with the stats taken before (a change while resolving moves a
        ctime past them)."""
        stats, at = self._rests_on(name, path)
        self._stats.update(stats)
        found = probes.resolve(name, path)
        key = (name, tuple(map(sys.intern, path)))  # (interned: kept once in the file)
        _resolved[key] = self._proofs[key] = (found, stats, at)
        _Kept.unsaved = True
        return found

    def _rests_on(self, name: str, path: list[str]) -> tuple[dict[str, Stat], int]:
        """The stats of the directories on ``path`` and of the candidates for ``name`` in them (those present: the
        names of a directory are the same while its stat is), and when the first of them was taken."""
        tail = name.rpartition(".")[2]
        suffixes = importlib.machinery.all_suffixes()
        at = time.time_ns()
        stats: dict[str, Stat] = {}
        for directory in map(sys.intern, path):
            stats[directory], names, listed_at = self._listed(directory)
            at = min(at, listed_at)
            candidates = [tail + suffix for suffix in ["", *suffixes] if tail + suffix in names]
            for candidate in candidates:
                stats[sys.intern(os.path.join(directory, candidate))] = probes.stat_of(
                    os.path.join(directory, candidate)
                )
            package = sys.intern(os.path.join(directory, tail))
            if tail in names:
                stats[package], inside, listed_at = self._listed(package)
                at = min(at, listed_at)
                for init in ("__init__" + suffix for suffix in suffixes if "__init__" + suffix in inside):
                    stats[sys.intern(os.path.join(package, init))] = probes.stat_of(os.path.join(package, init))
        return stats, at

    def _listed(self, directory: str) -> tuple[Stat, frozenset[str], int]:
        """The directory's stat and names in this round, and when the stat was taken (before the names were)."""
        if directory not in self._listings_at:
            at = time.time_ns()
            was = probes.stat_of(directory)
            self._listings_at[directory] = (was, _names(directory), at)
        return self._listings_at[directory]


def _names(directory: str) -> frozenset[str]:
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return frozenset()

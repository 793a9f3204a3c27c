"""Taking a record's probes, listings and module resolutions again (:mod:`.probes`), as a lookup round does: each
path is probed and listed once per round (a ``build_many``), and a module name's resolution proven by an earlier
round of this process is not looked up again while every stat it rests on is the same.

A resolution rests on the directories searched (the import system finds a module by the names in them: adding,
removing or renaming one changes the directory's ctime) and on each candidate it found there (``name``,
``name.py``, ... and a package's ``__init__`` files, stat'ed as the import system takes them: a link's target). Those
stats are taken before the resolution and trusted under the rule of :mod:`.fingerprint` (equal in every field, the
ctime well before they were taken): anything else is resolved again."""

from __future__ import annotations

import importlib.machinery
import os
import time
from typing import Optional

from i6_rc_jobs._builds import probes
from i6_rc_jobs._builds.fingerprint import RACY_NS
from i6_rc_jobs._builds.json_records import Recorded

#: A stat as compared: (mode, dev, ino, size, mtime_ns, ctime_ns), None if nothing is there.
Stat = Optional[tuple[int, ...]]

#: Module resolutions this process proved: (name, path searched) -> (where it resolved, the stats it rests on, when
#: they were taken).
_resolved: dict[tuple[str, tuple[str, ...]], tuple[Optional[list], dict[str, Stat], int]] = {}


class Recheck:
    """One lookup round's checks of records: its stats, kinds and listings are shared by the records it checks."""

    def __init__(self) -> None:
        self._stats: dict[str, Stat] = {}
        self._kinds: dict[str, Optional[str]] = {}
        self._listings: dict[str, Optional[str]] = {}
        self._listings_at: dict[str, tuple[Stat, frozenset[str], int]] = {}

    def changed(self, record: Recorded) -> Optional[str]:
        """What of the probes, listings and module resolutions ``record`` holds no longer holds, None if all does."""
        for path, found in record["probes"].items():
            if self._kind(path) != found:
                return f"{path} is now {self._kind(path) or 'missing'}, was {found or 'missing'}"
        for path, digest in record["listings"].items():
            if self._listing(path) != digest:
                return f"the names in {path} changed"
        proofs = {(name, tuple(path)): self._proof(name, path) for name, path, _ in record["modules"]}
        probes.forget_listings(
            {directory for (_, path), proof in proofs.items() if proof is None for directory in path}
        )
        for name, path, found in record["modules"]:
            proof = proofs[name, tuple(path)]
            now = proof[0] if proof is not None else self._resolve(name, path)
            if now != found:
                return f"module {name} now resolves to {(now or ['nothing'])[0]}, was {(found or ['nothing'])[0]}"
        return None

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
            self._stats[path] = _stat(path)
        return self._stats[path]

    def _proof(self, name: str, path: list[str]) -> Optional[tuple]:
        """This process's resolution of the name on the path if every stat it rests on holds, else None."""
        proof = _resolved.get((name, tuple(path)))
        if proof is None:
            return None
        _, stats, at = proof
        holds = all(self._stat(where) == was and (was is None or was[5] < at - RACY_NS) for where, was in stats.items())
        return proof if holds else None

    def _resolve(self, name: str, path: list[str]) -> Optional[list]:
        """Resolves the name and keeps the proof, with the stats taken before (a change while resolving moves a
        ctime past them)."""
        stats, at = self._rests_on(name, path)
        self._stats.update(stats)
        found = probes.resolve(name, path)
        _resolved[name, tuple(path)] = (found, stats, at)
        return found

    def _rests_on(self, name: str, path: list[str]) -> tuple[dict[str, Stat], int]:
        """The stats of the directories on ``path`` and of the candidates for ``name`` in them (those present: the
        names of a directory are the same while its stat is), and when the first of them was taken."""
        tail = name.rpartition(".")[2]
        suffixes = importlib.machinery.all_suffixes()
        at = time.time_ns()
        stats: dict[str, Stat] = {}
        for directory in path:
            stats[directory], names, listed_at = self._listed(directory)
            at = min(at, listed_at)
            candidates = [tail + suffix for suffix in ["", *suffixes] if tail + suffix in names]
            for candidate in candidates:
                stats[os.path.join(directory, candidate)] = _stat(os.path.join(directory, candidate))
            package = os.path.join(directory, tail)
            if tail in names:
                stats[package], inside, listed_at = self._listed(package)
                at = min(at, listed_at)
                for init in ("__init__" + suffix for suffix in suffixes if "__init__" + suffix in inside):
                    stats[os.path.join(package, init)] = _stat(os.path.join(package, init))
        return stats, at

    def _listed(self, directory: str) -> tuple[Stat, frozenset[str], int]:
        """The directory's stat and names in this round, and when the stat was taken (before the names were)."""
        if directory not in self._listings_at:
            at = time.time_ns()
            was = _stat(directory)
            self._listings_at[directory] = (was, _names(directory), at)
        return self._listings_at[directory]


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _names(directory: str) -> frozenset[str]:
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return frozenset()

"""Finding a call's entry and proving that it holds: signed for this call, made in this setup, and every dependency
its build recorded (:mod:`.record`) the same now: the same Python, ``sys.path`` and working directory, the same values
of the environment variables it read (compared by digest), the same content of every file it loaded or read
(:mod:`.fingerprint`), and the same findings where it looked: paths missing or directories, names in the directories
it listed, the file each module name resolved to (:mod:`.recheck`)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from i6_rc_jobs._builds import job_paths, verdicts
from i6_rc_jobs._builds.call import Call
from i6_rc_jobs._builds.fingerprint import Verifier
from i6_rc_jobs._builds.json_records import Base, Entry, Recorded
from i6_rc_jobs._builds.recheck import INSTALLED, Recheck, settled, settled_listings, settled_probes
from i6_rc_jobs._builds.record import value_digest
from i6_rc_jobs._builds.store import Store, last_used, touch_used

#: The bases read so far, by digest (None: not signed with the cache's key), and those build servers of this process
#: made: a base is immutable (named by its digest), so it is read once per process.
_bases: dict[str, Optional[Base]] = {}
#: How many variants of a call that do not hold now are kept beside the one that does (another setup's environment,
#: ``sys.path`` or Python, sharing the cache: each stays warm for its setup); the least recently used go first.
KEEP_STALE = 3
#: What this process has proven of the records it checked (bases and entries' deps, by digest): the part of each
#: that is taken again at every lookup, the rest being settled for the process (see :data:`_settled_files`).
_residuals: dict[str, Recorded] = {}
#: The verdicts of the records this process proved (or took), by key: on the paths not settled for the process.
_verdicts: dict[str, verdicts.Verdict] = {}
#: Files of the installed packages and the standard library whose fingerprints this process proved: settled for the
#: process, as its own imports from there are (a file of the setup, or of a checkout, is proven at every lookup).
_settled_files: set[tuple[str, tuple]] = set()


def remember_base(digest: str, base: Base) -> None:
    """A base this process made: checked as a stored base is."""
    _bases[digest] = base


def newest_known_base() -> Optional[Base]:
    """The signed base read or made last in this process, if any."""
    return next((base for base in reversed(_bases.values()) if base is not None), None)


@dataclass(frozen=True)
class Setting:
    """What the entries are looked up for: the build Python, its ``sys.path`` and the working directory."""

    executable: str
    sys_path: tuple[str, ...]
    workdir: str


class Lookup:
    """The lookups of one ``build_many``: they share one verifier and one recheck (each file, path and module name is
    checked once), and a variant found stale stays so for the batch: the second lookup (under the lock) skips it, so
    that its reason is logged once."""

    def __init__(self, store: Store, setting: Setting):
        self.store = store
        self.setting = setting
        self.verifier = Verifier()
        self.recheck = Recheck()
        self.bases: dict[str, Optional[bool]] = {}
        self.stale: dict[str, list[Path]] = {}

    def lookup(self, call: Call) -> Optional[Any]:
        """The result of a verified entry of the call, None if there is none."""
        stale = self.stale.setdefault(call.digest, [])
        for variant in self.store.variants(call.key):
            if variant in stale:
                continue
            entry = self.store.entry(variant, call.digest)
            if entry is None:
                continue  # another call of the same Sisyphus hash, not made with this cache's key, or corrupt
            holds = self.base_holds(entry["base"])
            if holds is None:
                continue  # another setup's (another working directory): kept for it
            if not (holds and self._deps_hold(entry)):
                stale.append(variant)
                continue
            data = self.store.result_bytes(variant, entry)
            if data is None:
                continue
            touch_used(variant)
            return job_paths.loads(data, call.paths)
        return None

    def stale_variants(self, call: Call) -> list[Path]:
        """The call's variants found stale that a new entry replaces: all but the ``KEEP_STALE`` used last (another
        setup's, whose dependencies hold there)."""
        stale = sorted(self.stale.get(call.digest, []), key=last_used, reverse=True)
        return stale[KEEP_STALE:]

    def base_holds(self, digest: str) -> Optional[bool]:
        """Whether the base holds; None if it is another setup's (its working directory is another: its entries are
        that setup's, neither used nor replaced here)."""
        if digest not in self.bases:
            if digest not in _bases:
                _bases[digest] = self.store.base(digest)
            base = _bases[digest]
            if base is not None and base["cwd"] != self.setting.workdir:
                self.bases[digest] = None
                return None
            reason = "its base is missing or not signed" if base is None else self._base_changed(digest, base)
            if reason:
                logging.info("build cache: the entries of base %s do not hold: %s", digest[:12], reason)
            self.bases[digest] = reason is None
        return self.bases[digest]

    def _base_changed(self, base_digest: str, base: Base) -> Optional[str]:
        """What of the base no longer holds, None if all of it does."""
        if base["python"]["executable"] != self.setting.executable:
            return f"another Python: {self.setting.executable}, not {base['python']['executable']}"
        if base["sys_path"] != list(self.setting.sys_path):
            return "another sys.path"
        return self._changed(f"base {base_digest}", base)

    def _deps_hold(self, entry: Entry) -> bool:
        key = f"deps {entry['deps']}"  # what a build depended on, shared by the builds of one model
        if key in _residuals:
            reason = self._changed(key, _residuals[key])
        else:
            deps = self.store.deps(entry["deps"])
            if deps is None:
                reason = "what it depended on is missing or corrupt"
            else:
                reason = self._changed(key, Recorded(**deps, recorded_ns=entry["recorded_ns"]))
        if reason:
            logging.info("build cache: %s(%s) is built again: %s", entry["builder"], entry["arguments"], reason)
        return reason is None

    def _changed(self, key: str, record: Recorded) -> Optional[str]:
        """What of the record no longer holds, None if all of it does. Where its verdict holds (this process's, or
        one kept by an earlier one: :mod:`.verdicts`), nothing more is taken; else it is proven item by item (of a
        record this process proved before, only what is not settled for the process), and a verdict is kept if
        nothing it rests on changed meanwhile."""
        reason = env_changed(record["env"])
        if reason is not None:
            return reason
        verdict = _verdicts.get(key)
        if verdict is not None and verdict.holds():
            return None
        kept = verdicts.load(key, record["recorded_ns"]) if verdict is None and key not in _residuals else None
        if kept is not None and kept.holds():
            _verdicts[key] = kept.without(INSTALLED)
            _residuals[key] = record
            return None
        residual = _residuals.get(key, record)
        paths = self.recheck.rests_on(residual)
        before = verdicts.take(*paths) if paths is not None else None
        reason = self._file_changed(residual) or self.recheck.changed(residual)
        if reason is None:
            if before is not None and paths == self.recheck.rests_on(residual) and before.trusted() and before.holds():
                if key not in _residuals:
                    verdicts.keep(key, record["recorded_ns"], before)
                _verdicts[key] = before.without(INSTALLED)
            if key not in _residuals:
                _residuals[key] = _unsettled(record)
        return reason

    def _file_changed(self, record: Recorded) -> Optional[str]:
        for path, fp in record["files"].items():
            if (path, tuple(fp)) in _settled_files:
                continue
            if not self.verifier.unchanged(path, fp, record["recorded_ns"]):
                return f"{path} changed"
            if path.startswith(INSTALLED):
                _settled_files.add((path, tuple(fp)))
        return None


def _unsettled(record: Recorded) -> Recorded:
    """The part of a record that holds which is taken again at each lookup: what is not settled for the process."""
    return Recorded(
        files={path: fp for path, fp in record["files"].items() if (path, tuple(fp)) not in _settled_files},
        probes={path: what for path, what in record["probes"].items() if (path, what) not in settled_probes},
        listings={
            path: digest for path, digest in record["listings"].items() if (path, digest) not in settled_listings
        },
        modules=[probe for probe in record["modules"] if (probe[0], tuple(probe[1])) not in settled],
        env=record["env"],
        recorded_ns=record["recorded_ns"],
    )


#: The digest of each variable's value as last taken: (value, digest), taken again when the value is another.
_env_digests: dict[str, tuple[Optional[str], Optional[str]]] = {}


def env_changed(env: dict[str, Optional[str]]) -> Optional[str]:
    """What of the recorded environment (digests of values) no longer holds: named, its values not shown."""
    for name, digest in env.items():
        now = os.environ.get(name)
        known = _env_digests.get(name)
        if known is None or known[0] != now:
            known = _env_digests[name] = (now, value_digest(now))
        if known[1] != digest:
            how = "unset" if now is None else "set" if digest is None else "another value"
            return f"${name} changed ({how})"
    return None

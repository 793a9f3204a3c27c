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

from i6_rc_jobs._builds import job_paths
from i6_rc_jobs._builds.call import Call
from i6_rc_jobs._builds.fingerprint import Verifier
from i6_rc_jobs._builds.json_records import Base, Entry, Recorded
from i6_rc_jobs._builds.recheck import Recheck
from i6_rc_jobs._builds.record import value_digest
from i6_rc_jobs._builds.store import Store, touch_used

#: The bases read so far, by digest (None: not signed with the cache's key), and those build servers of this process
#: made: a base is immutable (named by its digest), so it is read once per process.
_bases: dict[str, Optional[Base]] = {}


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
        """The call's variants found stale: a new entry replaces them."""
        return self.stale.get(call.digest, [])

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
            reason = "its base is missing or not signed" if base is None else self._base_changed(base)
            if reason:
                logging.info("build cache: the entries of base %s do not hold: %s", digest[:12], reason)
            self.bases[digest] = reason is None
        return self.bases[digest]

    def _base_changed(self, base: Base) -> Optional[str]:
        """What of the base no longer holds, None if all of it does."""
        if base["python"]["executable"] != self.setting.executable:
            return f"another Python: {self.setting.executable}, not {base['python']['executable']}"
        if base["sys_path"] != list(self.setting.sys_path):
            return "another sys.path"
        return env_changed(base["env"]) or self._file_changed(base) or self.recheck.changed(base)

    def _deps_hold(self, entry: Entry) -> bool:
        reason = env_changed(entry["env"]) or self._file_changed(entry) or self.recheck.changed(entry)
        if reason:
            logging.info("build cache: %s(%s) is built again: %s", entry["builder"], entry["arguments"], reason)
        return reason is None

    def _file_changed(self, record: Recorded) -> Optional[str]:
        for path, fp in record["files"].items():
            if not self.verifier.unchanged(path, fp, record["recorded_ns"]):
                return f"{path} changed"
        return None


def env_changed(env: dict[str, Optional[str]]) -> Optional[str]:
    """What of the recorded environment (digests of values) no longer holds: named, its values not shown."""
    for name, digest in env.items():
        now = os.environ.get(name)
        if value_digest(now) != digest:
            how = "unset" if now is None else "set" if digest is None else "another value"
            return f"${name} changed ({how})"
    return None

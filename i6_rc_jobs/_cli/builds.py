"""``python -m i6_rc_jobs builds [--verify] [--prune AGE]``: lists the entries of the build cache (builder,
arguments, age, last use, size, hash of the result); ``--verify`` builds each entry anew, as it was built (same
sys.path and working directory), and reports those whose result hashes otherwise now, a check to
run after updating the stack; ``--prune AGE`` removes entries not used for AGE (e.g. 30d, 12h, 90m)."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from i6_rc_jobs._builds.builds import DEFAULT_RESULTS, Builds
from i6_rc_jobs._builds.errors import BuildError
from i6_rc_jobs._builds.store import Store, cache_root, last_used, sha256_hex
from i6_rc_jobs._code_hash.marker import RESULTS as CODE_RESULTS

from i6_rc_jobs._cli.command import ExitStatus, command_parser

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_NO_ENTRY = "no entry signed with this cache's key (a stray file, or corrupt, foreign or of an older format)"

EXAMPLE = "--prune 30d"


class Exit(ExitStatus):
    DONE = 0, "listed, pruned, or every entry rebuilt with the same hash (also: no build cache yet)"
    DIFFERS = 1, "--verify: an entry's result hashes otherwise now, or could not be rebuilt or verified"


@dataclass(frozen=True)
class _Stored:
    """An entry's call, as the build process loads it."""

    key: str
    name: str
    description: str
    data: bytes

    @property
    def paths(self) -> dict[str, Any]:
        """None known here: the paths the build process had (without their creators) stay in the result."""
        return {}

    @property
    def digest(self) -> str:
        return sha256_hex(self.data)


def _age(seconds: float) -> str:
    for unit in ("d", "h", "m"):
        if seconds >= _UNITS[unit]:
            return f"{seconds / _UNITS[unit]:.1f}{unit}"
    return f"{seconds:.0f}s"


def _duration(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is no duration: give e.g. 30d, 12h, 90m or 45s")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def _size(path: Path) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _entries(store: Store) -> list[tuple[Path, Any]]:
    return [(variant, store.entry(variant)) for variant in store.all_variants()]


def _list(store: Store) -> int:
    now = time.time()
    print(f"{'builder':40} {'arguments':40} {'age':>7} {'used':>7} {'KB':>7} hash")
    for variant, entry in _entries(store):
        if entry is None:
            print(f"{variant}: {_NO_ENTRY}: never used")
            continue
        age, used = now - entry["recorded_ns"] / 1e9, now - last_used(variant)
        size = _size(variant) / 1024
        print(
            f"{entry['builder']:40} {entry['arguments']:40} {_age(age):>7} {_age(used):>7} {size:7.0f} "
            f"{entry['sis_hash'][:12]}"
        )
    return Exit.DONE


def _verify(store: Store) -> int:
    status = Exit.DONE
    for variant, entry in _entries(store):
        if entry is None:
            continue
        what = f"{entry['builder']}({entry['arguments']})"
        base = store.base(entry["base"])
        data = store.result_bytes(variant, entry, "call")
        if base is None or data is None:
            print(f"{what} {variant}: its base or call is missing or corrupt: not verified")
            status = Exit.DIFFERS
            continue
        if not os.path.isdir(base["cwd"]):
            print(f"{what}: its setup directory {base['cwd']} is gone: not verified")
            status = Exit.DIFFERS
            continue
        stored = _Stored(entry["key"], entry["builder"], entry["arguments"], data)
        builds = Builds(
            python=base["python"]["executable"],
            paths=base["sys_path"],
            cwd=base["cwd"],
            cache=store.root,
            results=(*DEFAULT_RESULTS, *CODE_RESULTS),  # an entry holds either
        )
        try:
            (result,) = builds.rebuild_many([stored])
        except (BuildError, OSError) as e:
            print(f"{what}: the rebuild failed: {e}")
            status = Exit.DIFFERS
            continue
        from sisyphus.hash import sis_hash_helper

        now = hashlib.sha256(sis_hash_helper(result)).hexdigest()
        same = now == entry["sis_hash"]
        print(
            f"{what}: {'same hash' if same else 'DIFFERS'} "
            f"{entry['sis_hash'][:12]}{'' if same else ' -> ' + now[:12]}"
        )
        status = status or (Exit.DONE if same else Exit.DIFFERS)
    return status


def _modified(path: Path) -> float:
    """When the file (or link: a dangling one is removed too) was last changed; 0 if it is gone."""
    try:
        return path.lstat().st_mtime
    except FileNotFoundError:
        return 0.0


def _prune(store: Store, age: float) -> int:
    now = time.time()
    kept: set[str] = set()
    for variant, entry in _entries(store):
        if last_used(variant) < now - age:
            store.remove(variant)
            print(f"removed {variant}")
        elif entry is not None:
            kept.update((entry["base"], entry["deps"]))
    unused = [path for part in ("bases", "deps") for path in (store.root / part).glob("*.*") if path.stem not in kept]
    for path in unused + list((store.root / "failed").glob("*.log")):
        if _modified(path) < now - age:
            path.unlink(missing_ok=True)
    shutil.rmtree(store.partial("prune"))  # making it removes what dead processes of this host left in tmp/
    return Exit.DONE


def parser() -> argparse.ArgumentParser:
    parser = command_parser(__name__, Exit, EXAMPLE)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--verify", action="store_true", help="build every entry anew and compare the hashes")
    what.add_argument("--prune", type=_duration, metavar="AGE", help="remove entries not used for AGE (30d, 12h)")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    store = Store(cache_root())
    if not store.root.is_dir():
        print(f"no build cache at {store.root}", file=sys.stderr)
        return Exit.DONE
    if args.verify:
        return _verify(store)
    if args.prune is not None:
        return _prune(store, args.prune)
    return _list(store)

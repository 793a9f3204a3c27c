"""Hashes in two processes: the Sisyphus hash of a config that holds a base net's serializer and DimRefs taken from
it as config values (as a recipe puts a dim into its config) must be the same in a fresh process as in this one."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from .dims import py
from .judge import serializer
from .rewrites import make_base


def config_hashes(seed: int, indices: list[int]) -> dict[tuple[int, str], str]:
    """(base index, scheme) -> the hash of a ``CheckedReturnnConfig`` with the base's serializer as its prolog and
    up to three DimRefs of the serialized net as config values (or the error it raised)."""
    from sisyphus.hash import short_hash

    from i6_rc_jobs.jobs.config_file import CheckedReturnnConfig

    hashes = {}
    for index in indices:
        base = make_base(seed, index)
        for scheme in ("dict", "graph"):
            try:
                written = serializer(base.net, scheme, base.staged)
                refs = _dim_refs(written.staged_networks if base.staged else written.network)
                config = {"behavior_version": 16, "dim": refs[0] if refs else None, "dims": refs[:3]}
                hashes[index, scheme] = short_hash(CheckedReturnnConfig(config, python_prolog=[written]))
            except Exception as exc:  # the same error in both processes is no finding
                hashes[index, scheme] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return hashes


def _dim_refs(value: Any) -> list[Any]:
    from i6_rc_jobs._serialization.refs import DimRef

    found: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, DimRef):
            found.append(v)
        elif type(v) is dict:
            for item in v.values():
                walk(item)
        elif type(v) in (list, tuple):
            for item in v:
                walk(item)

    walk(value)
    return found


def differences_between_processes(seed: int, indices: list[int]) -> list[tuple[str, str]]:
    """(signature, reproducer) for each (base, scheme) whose config hash differs between this process and a fresh
    one (spawned: another hash seed for str, nothing imported)."""
    here = config_hashes(seed, indices)
    there = _in_a_fresh_process(seed, indices)
    found = []
    for (index, scheme), value in sorted(here.items()):
        if there[index, scheme] != value:
            found.append(
                (f"{scheme}-process-config-hash", _reproducer(seed, index, scheme, value, there[index, scheme]))
            )
    return found


def _in_a_fresh_process(seed: int, indices: list[int]) -> dict[tuple[int, str], str]:
    """:func:`config_hashes` in a fresh interpreter. Not a spawned pool: its resource tracker process would outlive
    the call, up to the end of the calling process."""
    code = (
        "import pickle, sys\n"
        "from fuzz.determinism import config_hashes\n"
        "with open(sys.argv[1], 'wb') as f:\n"
        "    pickle.dump(config_hashes(int(sys.argv[2]), [int(i) for i in sys.argv[3:]]), f)\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="fuzz-hashes-") as tmp:
        out = os.path.join(tmp, "hashes.pickle")
        args = [sys.executable, "-c", code, out, str(seed), *map(str, indices)]
        done = subprocess.run(args, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"hashing in a fresh process failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        with open(out, "rb") as f:
            return pickle.load(f)


def _reproducer(seed: int, index: int, scheme: str, here: str, there: Optional[str]) -> str:
    base = make_base(seed, index)
    return "\n".join(
        [
            f"# {scheme} scheme: a config with this net's serializer and DimRefs from it as config values hashes as",
            f"# {here} in one process and {there} in another (run this twice)",
            "from sisyphus.hash import short_hash",
            "from i6_rc_jobs import ReturnnCommonSerializer",
            "from i6_rc_jobs.jobs.config_file import CheckedReturnnConfig",
            "from fuzz.determinism import _dim_refs",
            "from fuzz.dims import *",
            f"net = {py(base.net)}",
            f'part = "{"staged_networks" if base.staged else "network"}"',
            f'written = ReturnnCommonSerializer(extern_data=EXTERN_DATA, **{{part: net}}, hash_scheme="{scheme}")',
            "refs = _dim_refs(getattr(written, part))",
            'config = {"behavior_version": 16, "dim": refs[0] if refs else None, "dims": refs[:3]}',
            "print(short_hash(CheckedReturnnConfig(config, python_prolog=[written])))",
        ]
    )

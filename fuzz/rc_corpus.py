"""The second source of base nets: returnn_common's own test-suite models, as the peer suite (``tests/rc_peer/``)
has our serializer write them. :func:`collect` runs returnn_common's test files with the peer suite's plugin and
records every config written; :func:`load` reads them back as (test, extern_data, network), the dicts with RETURNN
dims, as RETURNN loads the written config; :func:`corpus_base` makes a base net of one, renamed at random."""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys
from typing import Any

from i6_rc_jobs.atomic_file import write_atomically

ROOT = pathlib.Path(__file__).resolve().parents[1]
RC_TESTS = ROOT / ".deps" / "src" / "returnn_common" / "tests"
SMALL = ("test_nn_array.py", "test_nn_math.py", "test_nn_masked_computation.py")
"""Test files of returnn_common whose models build in seconds; :func:`collect` takes them unless told others"""


def collect(path: pathlib.Path, files: tuple[str, ...] = SMALL, keyword: str = "") -> int:
    """Runs returnn_common's test files (names in its ``tests/``; ``keyword`` as pytest's ``-k``) in one pytest
    process with the peer suite's plugin, and writes the configs its serializer swap wrote to ``path`` (JSON lines:
    test, code); returns how many. Failing tests are fine: their configs count."""
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    partial.touch()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "FUZZ_RC_CORPUS": str(partial),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-c",
        str(RC_TESTS.parent / "pytest.ini"),
        "--rootdir",
        str(RC_TESTS.parent),
        "-p",
        "tests.rc_peer.plugin",
        "-p",
        "fuzz.rc_collect",
        "-p",
        "no:cacheprovider",
        *(["-k", keyword] if keyword else []),
        *(str(RC_TESTS / name) for name in files),
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = partial.read_text().splitlines()
    partial.unlink()
    if not lines:
        raise RuntimeError(f"returnn_common's tests {files} wrote no config (pytest: {done.stdout[-500:]})")
    write_atomically(str(path), ("\n".join(lines) + "\n").encode())
    return len(lines)


def load(path: pathlib.Path) -> list[tuple[str, str]]:
    """(test, config code) of each config in a collected corpus that holds one network (not staged ones)."""
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(e["test"], e["code"]) for e in entries if "\nnetwork = " in e["code"]]


def corpus_base(entry: tuple[str, str], rng: random.Random) -> tuple[dict, dict]:
    """(extern_data, network) of a corpus config, as RETURNN loads it, with up to three layers renamed."""
    from i6_rc_jobs.semantics import load_config

    from .rewrites import rw_rename

    config = load_config(entry[1])
    extern_data: dict[str, Any] = config.typed_value("extern_data")
    network: dict[str, Any] = config.typed_value("network")
    for _ in range(rng.randint(0, 3)):
        rw_rename(network, rng, in_loop=rng.random() < 0.3)
    return extern_data, network

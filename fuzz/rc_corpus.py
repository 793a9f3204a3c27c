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
CORPUS = pathlib.Path(__file__).with_name("rc_corpus.jsonl")
"""The corpus kept with the fuzzer: :func:`collect` of :data:`FILES`"""
FILES = tuple(
    f"test_nn_{name}.py"
    for name in (
        "array",
        "attention",
        "base",
        "cond",
        "conformer",
        "const",
        "container",
        "conv",
        "encoder",
        "loop",
        "loss",
        "masked_computation",
        "math",
        "normalization",
        "rand",
        "rec",
        "transformer",
        "utils",
    )
)
"""returnn_common's test files whose models the corpus holds (the others build no net dict, or only in eager mode)"""
MAX_CHARS = 12_000
"""Configs longer than this are left out: a Conformer takes seconds to build, and a pair builds it twice"""


def collect(path: pathlib.Path, files: tuple[str, ...] = FILES) -> int:
    """Runs returnn_common's test files (names in its ``tests/``) in one pytest process with the peer suite's
    plugin, and writes the first config its serializer swap wrote for each test, up to :data:`MAX_CHARS` long, to
    ``path`` (JSON lines: test, code); returns how many. Failing tests are fine: their configs count."""
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
        *(str(RC_TESTS / name) for name in files),
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines, tests = [], set()
    for line in partial.read_text().splitlines():
        entry = json.loads(line)
        if entry["test"] not in tests and len(entry["code"]) <= MAX_CHARS:
            tests.add(entry["test"])
            lines.append(line)
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

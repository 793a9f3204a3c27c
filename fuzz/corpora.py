"""Base nets from the test suites of returnn_common and RETURNN, as our serializer writes them: :func:`collect`
runs a suite's test files with a pytest plugin that records every config (returnn_common's: the peer suite's
serializer swap, ``fuzz/rc_collect.py``; RETURNN's: each net dict its layer tests construct, ``fuzz/
returnn_collect.py``); :func:`load` reads a corpus back (a base net of one entry, renamed at random, is
:func:`fuzz.rewrites.corpus_base`)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass
from typing import NamedTuple

from i6_rc_jobs._util.atomic_file import write_atomically

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_CHARS = 12_000
"""Configs longer than this are left out: a Conformer takes seconds to build, and a pair builds it twice"""


@dataclass(frozen=True)
class Suite:
    """A test suite whose models are a source of base nets."""

    name: str
    """How the fuzzer's report names the source"""
    root: pathlib.Path
    """The checkout whose ``tests/`` the suite is (with its ``pytest.ini``)"""
    files: tuple[str, ...]
    """Its test files (names in ``tests/``) that build net dicts"""
    plugins: tuple[str, ...]
    """The pytest plugins that record the configs (into the file named by ``FUZZ_CORPUS``)"""
    kept: pathlib.Path
    """The corpus kept with the fuzzer"""


RETURNN_COMMON = Suite(
    "returnn_common",
    ROOT / ".deps" / "src" / "returnn_common",
    tuple(
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
    ),  # the others build no net dict, or only in eager mode
    ("tests.rc_peer.plugin", "fuzz.rc_collect"),
    ROOT / "fuzz" / "rc_corpus.jsonl",
)
RETURNN = Suite(
    "RETURNN",
    ROOT / ".deps" / "src" / "returnn",
    ("test_TFNetworkLayer.py", "test_TFNetworkRecLayer.py", "test_TFNetworkSigProcLayer.py"),
    ("fuzz.returnn_collect",),
    ROOT / "fuzz" / "returnn_corpus.jsonl",
)
SUITES = {suite.name: suite for suite in (RETURNN_COMMON, RETURNN)}


class Entry(NamedTuple):
    """One config of a corpus: the suite and test it comes from, and its code."""

    suite: str
    test: str
    code: str


def collect(suite: Suite, path: pathlib.Path) -> int:
    """Runs the suite's test files in one pytest process with its recording plugins, and writes the first config
    recorded for each test, up to :data:`MAX_CHARS` long, to ``path`` (JSON lines: test, code); returns how many.
    Failing tests are fine: their configs count."""
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
        "FUZZ_CORPUS": str(partial),
    }
    plugins = [argument for plugin in suite.plugins for argument in ("-p", plugin)]
    command = [sys.executable, "-m", "pytest", "-q", "-c", str(suite.root / "pytest.ini"), "--rootdir", str(suite.root)]
    command += [*plugins, "-p", "no:cacheprovider", *(str(suite.root / "tests" / name) for name in suite.files)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines, tests = [], set()
    for line in partial.read_text().splitlines():
        entry = json.loads(line)
        if entry["test"] not in tests and len(entry["code"]) <= MAX_CHARS:
            tests.add(entry["test"])
            lines.append(line)
    partial.unlink()
    if not lines:
        raise RuntimeError(f"{suite.name}'s tests {suite.files} wrote no config (pytest: {done.stdout[-500:]})")
    write_atomically(str(path), ("\n".join(lines) + "\n").encode())
    return len(lines)


def load(suite: str, path: pathlib.Path) -> list[Entry]:
    """The configs of a collected corpus of the suite that hold one network (not staged ones)."""
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Entry(suite, e["test"], e["code"]) for e in entries if "\nnetwork = " in e["code"]]

"""Base nets from the test suites of returnn_common and RETURNN, as our serializer writes them: :func:`collect`
runs a suite's test files with a pytest plugin that records every config (returnn_common's: the peer suite's
serializer swap, ``fuzz/rc_collect.py``; RETURNN's: each net dict its layer tests construct, ``fuzz/
returnn_collect.py``); :func:`load` reads a corpus back (a base net of one entry, renamed at random, is
:func:`fuzz.rewrites.corpus_base`).

The corpora are not kept in the repository: :func:`cached` collects a suite's from the pinned checkouts when it is
first needed, into :data:`CACHE` (git-ignored), under the commits of rwth-i6.lock whose code the collection runs, so
that a new pin collects anew (a collection takes minutes)."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass
from typing import NamedTuple

from i6_rc_jobs._util.atomic_file import write_atomically
from tests.support.pins import pins

ROOT = pathlib.Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "fuzz"
"""Where :func:`cached` keeps the collected corpora"""
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
    runs: tuple[str, ...]
    """The projects of rwth-i6.lock whose code the collection runs: their pinned commits key the cached corpus"""

    def cache_path(self) -> pathlib.Path:
        """Where the corpus collected at the pinned commits is cached."""
        commits = pins()
        return CACHE / f"{self.name.lower()}-{'-'.join(commits[name][:12] for name in self.runs)}.jsonl"


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
    ("returnn_common", "returnn"),
)
RETURNN = Suite(
    "RETURNN",
    ROOT / ".deps" / "src" / "returnn",
    ("test_TFNetworkLayer.py", "test_TFNetworkRecLayer.py", "test_TFNetworkSigProcLayer.py"),
    ("fuzz.returnn_collect",),
    ("returnn",),
)
SUITES = {suite.name: suite for suite in (RETURNN_COMMON, RETURNN)}


class Entry(NamedTuple):
    """One config of a corpus: the suite and test it comes from, and its code."""

    suite: str
    test: str
    code: str


def collect(suite: Suite, path: pathlib.Path) -> int:
    """Runs the suite's test files with its recording plugins, in one pytest process per CPU (:func:`_runs`), and
    writes the first config recorded for each test, up to :data:`MAX_CHARS` long, to ``path`` (JSON lines: test,
    code), in the order of the suite's files; returns how many. Failing tests are fine: their configs count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = _runs(suite)
    partials = [path.with_name(f"{path.name}.{os.getpid()}.{i}.partial") for i in range(len(runs))]  # others may too
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        outputs = list(pool.map(functools.partial(_run, suite), runs, partials))
    lines, tests = [], set()
    for partial in partials:
        for line in partial.read_text().splitlines():
            entry = json.loads(line)
            if entry["test"] not in tests and len(entry["code"]) <= MAX_CHARS:
                tests.add(entry["test"])
                lines.append(line)
        partial.unlink()
    if not lines:
        raise RuntimeError(f"{suite.name}'s tests {suite.files} wrote no config (pytest: {outputs[-1][-500:]})")
    write_atomically(str(path), ("\n".join(lines) + "\n").encode())
    return len(lines)


def _runs(suite: Suite) -> list[tuple[str, ...]]:
    """The suite's test files in consecutive groups of about equal size (each file in the group its middle falls
    in), one per CPU: a collection takes minutes, most of it one process's CPU time."""
    sizes = [(suite.root / "tests" / name).stat().st_size for name in suite.files]
    count = min(os.cpu_count() or 1, len(sizes))
    runs: list[list[str]] = [[] for _ in range(count)]
    before = 0
    for name, size in zip(suite.files, sizes):
        runs[min(count - 1, (2 * before + size) * count // (2 * sum(sizes)))].append(name)
        before += size
    return [tuple(run) for run in runs if run]


def _run(suite: Suite, files: tuple[str, ...], partial: pathlib.Path) -> str:
    """Runs the test ``files`` of ``suite`` in pytest with its recording plugins into ``partial``; pytest's output."""
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
    command += [*plugins, "-p", "no:cacheprovider", *(str(suite.root / "tests" / name) for name in files)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True).stdout


def load(suite: str, path: pathlib.Path) -> list[Entry]:
    """The configs of a collected corpus of the suite that hold one network (not staged ones)."""
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Entry(suite, e["test"], e["code"]) for e in entries if "\nnetwork = " in e["code"]]


def cached(suite: Suite) -> pathlib.Path:
    """The suite's corpus collected at the pinned commits: from :data:`CACHE`, collected into it first if missing."""
    path = suite.cache_path()
    if not path.exists():
        collect(suite, path)
    return path

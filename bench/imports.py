"""Versioned imports, ours vs RETURNN's ``returnn.import_``, in one run on the same repositories. Run from the
repository root:

    .venv/bin/python -m bench.imports [--reps 5] [--out bench/results/imports.json]

Every measurement runs in fresh processes (both keep per-process state), on a small local repository reached through
its https name (git's insteadOf) and on returnn_common through its GitHub URL (this machine's mirror):
- first import of a version into an empty cache (clone, check out, import), time of the ``import_`` call;
- cached import in a new process, time of the ``import_`` call, once the version is older than the margin of a
  kept proof: first checked in full (by this user for the first time, which keeps its proof), then with the proof;
- 8 processes importing a new version into an empty cache at once: how many succeed, and whether a 9th process
  can import that version afterwards (a broken cache fails every later run).
Prints medians (the fastest run in parentheses: the machine may be shared) and the ratios RETURNN/ours of the
medians, and writes everything to the JSON file."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from tests.support.pins import version

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: Times the import_ call only (not importing the library), in a process of its own.
CHILD = """
import os, sys, time
while not os.path.exists(sys.argv[4]):
    time.sleep(0.001)
if sys.argv[1] == "ours":
    from i6_rc_jobs import import_
else:
    from returnn.import_ import import_
start = time.perf_counter()
module = import_(sys.argv[2], sys.argv[3], sys.argv[5])
print((time.perf_counter() - start) * 1e3)
"""


def _git(cwd: pathlib.Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def small_origin(directory: pathlib.Path) -> tuple[str, str, str, dict[str, str]]:
    """(repo, path, version, git environment) of a small repository made here: 20 modules, 3 commits."""
    origin = directory / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    for i, date in enumerate(["2024-01-02T03:04:05+00:00", "2024-02-03T04:05:06+00:00", "2024-03-04T05:06:07+00:00"]):
        for j in range(20):
            (origin / f"module_{j}.py").write_text(f"VALUE = {i * 100 + j}\n" + "x = 1\n" * 50)
        _git(origin, "add", "-A")
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        _git(origin, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", date, env=env)
    commit = _git(origin, "rev-parse", "HEAD~1").strip()
    git_env = {  # RETURNN spells the URL https://host:/owner/name: map both spellings
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": f"url.{origin}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://example.org/bench/origin",
        "GIT_CONFIG_KEY_1": f"url.{origin}.insteadOf",
        "GIT_CONFIG_VALUE_1": "https://example.org:/bench/origin",
    }
    return "example.org/bench/origin", "module_3.py", f"20240203-{commit[:12]}", git_env


def returnn_common() -> tuple[str, str, str, dict[str, str]]:
    """returnn_common at the commit rwth-i6.lock pins, its small top-level module. Where git maps the GitHub URL to a
    mirror (as on these machines), RETURNN's spelling ``https://github.com:/...`` is mapped to it too, so that both
    read the same mirror."""
    url = "https://github.com/rwth-i6/returnn_common"
    mapped = subprocess.run(
        ["git", "config", "--get-regexp", r"^url\..*\.insteadof$", f"^{url}$"], capture_output=True, text=True
    ).stdout.split()
    git_env = {}
    if mapped:
        base = mapped[0][len("url.") : -len(".insteadof")]
        git_env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"url.{base}.insteadOf",
            "GIT_CONFIG_VALUE_0": url.replace("github.com/", "github.com:/"),
        }
    return "github.com/rwth-i6/returnn_common", "_lazy_loader.py", version("returnn_common"), git_env


def _run(
    method: str, target: tuple[str, str, str, dict[str, str]], cache: pathlib.Path, count: int = 1
) -> list[tuple[int, str, str]]:
    """Starts ``count`` processes importing ``target`` into ``cache``, lets them go at once, returns (status, ms
    or '', stderr tail) for each."""
    repo, path, version, git_env = target
    cache.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        **git_env,
        "I6_RC_IMPORTS_CACHE": str(cache / "ours"),
        "RETURNN_PKG_PATH": str(cache / "returnn"),
        "RETURNN_PKG_IMPORT_PATH": str(cache / "returnn_import"),
        "XDG_CACHE_HOME": str(cache / "user"),  # where a user's bytecode and proofs are kept
    }
    (cache / "returnn").mkdir(exist_ok=True)  # RETURNN wants it to exist
    start = cache / f"start.{time.monotonic_ns()}"
    args = [sys.executable, "-c", CHILD, method, repo, path, str(start), version]
    children = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(count)]
    time.sleep(0.5 + 0.1 * count)  # all have imported the library and wait
    start.touch()
    results = []
    for child in children:
        out, err = child.communicate()
        last_line = out.decode().strip().rpartition("\n")[2]  # RETURNN's git prints on stdout too
        results.append((child.returncode, last_line, err.decode().strip()[-300:]))
    return results


def measure(target: tuple[str, str, str, dict[str, str]], reps: int, work: pathlib.Path) -> dict[str, Any]:
    result: dict[str, Any] = {"repo": target[0], "path": target[1], "version": target[2]}
    for method in ("ours", "returnn"):
        first, full, cached, errors = [], [], [], []
        for rep in range(reps):
            cache = work / f"{method}-{target[0].replace('/', '_')}-{rep}"
            [(status, ms, err)] = _run(method, target, cache)
            if status != 0:
                errors.append(err)
                continue
            first.append(float(ms))
            time.sleep(2.1)  # the version is older than the margin a kept proof needs (i6_rc_jobs/_imports/proven.py)
            for timings in (full, cached):  # checked in full (and its proof kept), then the kept proof
                [(status, ms, err)] = _run(method, target, cache)
                timings.append(float(ms)) if status == 0 else errors.append(err)
        together = []
        for rep in range(3):
            cache = work / f"{method}-{target[0].replace('/', '_')}-together-{rep}"
            runs = _run(method, target, cache, count=8)
            [(after, _, after_err)] = _run(method, target, cache)
            together.append(
                {"ok": sum(status == 0 for status, _, _ in runs), "later_import_ok": after == 0, "error": after_err}
            )
            errors.extend(err for status, _, err in runs if status != 0)
        result[method] = {
            "first_import_ms": statistics.median(first) if first else None,
            "cached_import_ms": statistics.median(cached) if cached else None,
            "cached_full_check_ms": statistics.median(full) if full else None,
            "cached_full_ms_all": full,
            "first_ms_all": first,
            "cached_ms_all": cached,
            "eight_at_once": together,
            "errors": errors[:3],
        }
    return result


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a and b else "-"


def report(results: list[dict[str, Any]]) -> None:
    print(
        f"{'repository':34s} {'method':8s} {'first import ms':>16s} {'cached, full ms':>16s} {'cached import ms':>17s}  "
        "8 at once (ok of 8, later ok)"
    )
    for r in results:
        for method in ("ours", "returnn"):
            m = r[method]
            together = ", ".join(f"{t['ok']}/8 {'yes' if t['later_import_ok'] else 'NO'}" for t in m["eight_at_once"])
            first = f"{m['first_import_ms']:.1f}" if m["first_import_ms"] else "fails"
            cached = (
                f"{m['cached_import_ms']:.2f} ({min(m['cached_ms_all']):.2f})" if m["cached_import_ms"] else "fails"
            )
            full = (
                f"{m['cached_full_check_ms']:.2f} ({min(m['cached_full_ms_all']):.2f})"
                if m["cached_full_ms_all"]
                else "fails"
            )
            print(f"{r['repo']:34s} {method:8s} {first:>16s} {full:>16s} {cached:>17s}  {together}")
        ours, theirs = r["ours"], r["returnn"]
        print(
            f"{'':34s} {'ratio':8s} {_ratio(theirs['first_import_ms'], ours['first_import_ms']):>16s} "
            f"{_ratio(theirs['cached_full_check_ms'], ours['cached_full_check_ms']):>16s} "
            f"{_ratio(theirs['cached_import_ms'], ours['cached_import_ms']):>17s}  (RETURNN / ours)"
        )
        for method in ("ours", "returnn"):
            for error in r[method]["errors"][:1]:
                print(f"  {method} error: {error.splitlines()[-1] if error else '?'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.imports", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "bench/results/imports.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        results = [measure(target, args.reps, work) for target in (small_origin(work), returnn_common())]
    report(results)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

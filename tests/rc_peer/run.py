"""
returnn_common's own test suite as our peer test: ``python -m tests.rc_peer.run [--serializer ours|theirs]``.

Runs every ``tests/test_*.py`` of the pinned returnn_common checkout, unmodified, one pytest process per file as
returnn_common's CI does (TF and RETURNN keep global state), as many at a time as there are CPUs, with
``tests/rc_peer/plugin.py`` injecting our changes (see there). Prints a table (test, outcome, first line of the
failure), writes a JSON report, and compares with ``expected_failures.txt``: the exit status is 1 if a test fails
that is not listed there for this serializer, or a listed test is not run at all; a listed test that passes is
reported (its entry can go).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RETURNN_COMMON = ROOT / ".deps" / "src" / "returnn_common"
EXPECTED = Path(__file__).with_name("expected_failures.txt")
MODES = ("ours", "theirs")


def read_expected(path: Path = EXPECTED) -> dict[str, dict[str, str]]:
    """Mode -> test id (``test_file.py::test_name``) -> cause, from lines ``<test id> <ours|theirs|both> <cause>``."""
    expected: dict[str, dict[str, str]] = {mode: {} for mode in MODES}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        test_id, modes, cause = line.split(maxsplit=2)
        if modes not in (*MODES, "both"):
            raise ValueError(f"{path}:{number}: modes must be ours, theirs or both, not {modes!r}")
        for mode in MODES if modes == "both" else (modes,):
            expected[mode][test_id] = cause
    return expected


def run_file(test_file: Path, mode: str, out_dir: Path) -> dict[str, dict[str, Any]]:
    """Runs one test file in its own pytest process; its results by test id (the log next to the report)."""
    report = out_dir / f"{test_file.stem}.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PYTHONDONTWRITEBYTECODE": "1",  # nothing written into the checkout
        "CUDA_VISIBLE_DEVICES": "",  # nvcc is there, no GPU: RETURNN would compile its native ops with CUDA
        "TF_CPP_MIN_LOG_LEVEL": "3",
        # TF 2.21's oneDNN Conv2D aborts the process in eager mode (test_asr_gt, test_nn_debug_eager_mode):
        # "Check failed: dtype() == expected_dtype (1 vs. 4) uint8 expected, got float"
        "TF_ENABLE_ONEDNN_OPTS": "0",
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(RETURNN_COMMON / "pytest.ini"),  # its own settings, as its CI runs it
        "--rootdir",
        str(RETURNN_COMMON),
        "-p",
        "tests.rc_peer.plugin",
        "-p",
        "no:cacheprovider",
        f"--rc-serializer={mode}",
        f"--rc-peer-report={report}",
        str(test_file),
    ]
    with open(out_dir / f"{test_file.stem}.log", "w") as log:
        status = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if not report.exists():
        return {test_file.name: {"outcome": "error", "message": f"pytest exited with {status} without a report"}}
    tests = json.loads(report.read_text())["tests"]
    for result in tests.values():
        if result["outcome"] == "crashed":
            result["message"] = f"the test process died (exit status {status})"
    return {test_id.removeprefix("tests/"): result for test_id, result in tests.items()}


def compare(results: dict[str, dict[str, Any]], expected: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """Unexpected failures, unexpected passes, and expected failures that did not run."""
    failed = {test_id for test_id, result in results.items() if result["outcome"] in ("failed", "error", "crashed")}
    unexpected_failures = sorted(failed - set(expected))
    unexpected_passes = sorted(test_id for test_id in expected if results.get(test_id, {}).get("outcome") == "passed")
    missing = sorted(set(expected) - set(results))
    return unexpected_failures, unexpected_passes, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--serializer", choices=MODES, default="ours", help="which serializer writes the configs")
    parser.add_argument("--out", type=Path, help="directory for the JSON report and the logs (default: a temp dir)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="test files run at a time")
    parser.add_argument("files", nargs="*", help="test file names (default: all tests/test_*.py)")
    args = parser.parse_args(argv)
    out_dir = args.out or Path(tempfile.mkdtemp(prefix=f"rc_peer_{args.serializer}_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [RETURNN_COMMON / "tests" / name for name in args.files] or sorted(RETURNN_COMMON.glob("tests/test_*.py"))

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = {
            k: v for part in pool.map(lambda f: run_file(f, args.serializer, out_dir), files) for k, v in part.items()
        }
    seconds = time.monotonic() - start

    expected = read_expected()[args.serializer]
    if args.files:  # only the files run
        expected = {test_id: cause for test_id, cause in expected.items() if test_id.split("::")[0] in args.files}
    unexpected_failures, unexpected_passes, missing = compare(results, expected)
    width = max(map(len, results), default=0)
    for test_id, result in sorted(results.items()):
        note = result["message"] or (f"(expected to fail: {expected[test_id]})" if test_id in expected else "")
        print(f"{test_id:<{width}}  {result['outcome']:<7}  {note}")
    passed = sum(result["outcome"] == "passed" for result in results.values())
    print(f"\nreturnn_common's tests, {args.serializer} serializer: {passed}/{len(results)} passed in {seconds:.0f} s")
    if args.serializer == "ours":
        checked = sum(result.get("scope_checks", 0) for result in results.values())
        print(f"graph parameter scopes checked against RETURNN's TF variables in {checked} nets")
    for title, test_ids in [
        ("FAILED, not in expected_failures.txt", unexpected_failures),
        ("passed, but listed in expected_failures.txt (remove the entry)", unexpected_passes),
        ("listed in expected_failures.txt, but did not run", missing),
    ]:
        if test_ids:
            print(f"{title}:\n" + "".join(f"  {test_id}\n" for test_id in test_ids))
    report = {
        "serializer": args.serializer,
        "seconds": round(seconds),
        "passed": passed,
        "total": len(results),
        "tests": results,
        "unexpected_failures": unexpected_failures,
        "unexpected_passes": unexpected_passes,
        "missing": missing,
    }
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(f"report and logs: {out_dir}")
    return 1 if unexpected_failures or missing else 0


if __name__ == "__main__":
    sys.exit(main())

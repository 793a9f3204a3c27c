"""
The peer target (tests/rc_peer): returnn_common's own tests run with our serializer in place of theirs, the plugin
reports each test's outcome, and it fails a test whose config code our serializer did not write, so the swap
cannot silently stop applying.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.rc_peer import plugin, run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # each runs returnn_common tests in a pytest process of its own


def _run_plugin(tmp_path: Path, test_code: str, mode: str = "ours") -> dict[str, dict]:
    """Runs a test file of ``test_code`` with the plugin in its own pytest process: the report's results by test."""
    (tmp_path / "test_peer.py").write_text(textwrap.dedent(test_code))
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.rc_peer.plugin",
            "-p",
            "no:cacheprovider",
            f"--rc-serializer={mode}",
        ]
        + [f"--rc-peer-report={report}", "--rootdir", str(tmp_path), str(tmp_path / "test_peer.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=600,
    )
    return {test_id.split("::")[1]: result for test_id, result in json.loads(report.read_text())["tests"].items()}


def test_report_has_each_outcome_and_the_first_line(tmp_path: Path):
    """Passed, failed (the first line of the failure), skipped (the reason), and a test that kills the process."""
    results = _run_plugin(
        tmp_path,
        r"""
        import os
        import pytest

        def test_ok():
            pass

        def test_fail():
            raise ValueError("first line\nsecond line")

        def test_skip():
            pytest.skip("not here")

        def test_abort():
            os.abort()
        """,
    )
    assert {name: (result["outcome"], result["message"]) for name, result in results.items()} == {
        "test_ok": ("passed", ""),
        "test_fail": ("failed", "ValueError: first line"),
        "test_skip": ("skipped", "Skipped: not here"),
        "test_abort": ("crashed", "the test process died in this test"),
    }


@pytest.mark.parametrize("mode, passes", [("ours", False), ("theirs", True)])
def test_config_code_not_written_by_ours_fails(tmp_path: Path, mode: str, passes: bool):
    """Config code that reaches returnn_common's helper without our serializer having written it fails the test."""
    code = r"""
        from returnn_common.tests.returnn_helpers import config_net_dict_via_serialized

        def test_foreign_code():
            config, net_dict = config_net_dict_via_serialized("network = {}\n")
            assert net_dict == {}
        """
    result = _run_plugin(tmp_path, code, mode)["test_foreign_code"]
    if passes:
        assert result["outcome"] == "passed", result
    else:
        assert (result["outcome"], result["message"]) == ("failed", f"AssertionError: {plugin.NOT_OURS}")


def test_peer_file_runs_with_our_serializer(tmp_path: Path):
    """A real test file of returnn_common (its GLU test needs rc_compat too) passes with our serializer writing."""
    assert run.main(["--out", str(tmp_path), "test_nn_math.py"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["serializer"] == "ours" and report["total"] == 4 and report["passed"] == 4
    assert all(result["ours_serializations"] >= 1 for result in report["tests"].values())

"""
The peer target (tests/rc_peer): returnn_common's own tests run with our serializer in place of theirs, and the
plugin fails a test whose config code our serializer did not write, so the swap cannot silently stop applying.
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


@pytest.mark.parametrize("mode, passes", [("ours", False), ("theirs", True)])
def test_config_code_not_written_by_ours_fails(tmp_path: Path, mode: str, passes: bool):
    """Config code that reaches returnn_common's helper without our serializer having written it fails the test."""
    (tmp_path / "test_foreign.py").write_text(textwrap.dedent("""\
        from returnn_common.tests.returnn_helpers import config_net_dict_via_serialized

        def test_foreign_code():
            config, net_dict = config_net_dict_via_serialized("network = {}\\n")
            assert net_dict == {}
        """))
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
        + [f"--rc-peer-report={report}", "--rootdir", str(tmp_path), str(tmp_path / "test_foreign.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=600,
    )
    (result,) = json.loads(report.read_text())["tests"].values()
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

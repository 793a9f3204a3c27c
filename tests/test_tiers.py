"""The test tiers (docs/development.md): ``./test.sh --fast`` leaves out the tests that train, bring up a Slurm cluster
or need the older RETURNNs, and the peer test; CI (I6_RC_REQUIRE_SLURM=1) can leave out none of the Slurm tests."""

import os
import subprocess
import sys

import pytest

from tests.support.sisyphus_setup import REPO

LEFT_OUT_BY_FAST = [  # what each marker is for: a training, a cluster, an older RETURNN
    "tests/test_sisyphus_stack.py::test_run_sh_task12ax_end_to_end",
    "tests/test_setup_fit.py::test_an_i6_setup_adds_the_package_and_trains_with_its_own_returnn",
    "tests/test_slurm.py::",
    "tests/test_returnn_range.py::",
]


def _env(**changes: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "I6_RC_REQUIRE_SLURM"}
    return {**env, "PYTHONPATH": str(REPO), **changes}


def test_fast_mode_collects_what_needs_no_training_cluster_or_older_returnn():
    proc = subprocess.run(
        [str(REPO / "test.sh"), "--fast", "--collect-only", "-q"], cwd=REPO, env=_env(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    collected = [line for line in proc.stdout.splitlines() if "::" in line]
    assert "tests/test_style.py::test_mypy_finds_nothing" in collected
    assert not [test for test in collected if test.startswith(tuple(LEFT_OUT_BY_FAST))]
    assert "returnn_common's tests" not in proc.stdout  # the peer test's summary: it did not run


def test_fast_mode_is_refused_where_ci_requires_the_slurm_tests():
    proc = subprocess.run(
        [str(REPO / "test.sh"), "--fast"], cwd=REPO, env=_env(I6_RC_REQUIRE_SLURM="1"), capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr == "test.sh: --fast leaves out the Slurm tests, which I6_RC_REQUIRE_SLURM=1 (CI) requires\n"


def test_deselecting_the_slurm_tests_is_an_error_where_ci_requires_them():
    command = [sys.executable, "-m", "pytest", "tests/test_slurm.py", "-m", "not slurm", "--collect-only", "-q"]
    required = subprocess.run(command, cwd=REPO, env=_env(I6_RC_REQUIRE_SLURM="1"), capture_output=True, text=True)
    assert required.returncode == pytest.ExitCode.USAGE_ERROR, required.stdout + required.stderr
    assert "I6_RC_REQUIRE_SLURM=1, but the Slurm tests are deselected" in required.stderr
    elsewhere = subprocess.run(command, cwd=REPO, env=_env(), capture_output=True, text=True)
    assert "deselected" in elsewhere.stdout and elsewhere.returncode != pytest.ExitCode.USAGE_ERROR, elsewhere.stderr

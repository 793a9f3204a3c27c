import os
import sys

import pytest

# Set before anything imports TensorFlow/RETURNN: this machine has nvcc, so RETURNN would otherwise try to compile its
# native ops with CUDA and fail; and TF's C++ logging would flood the output.
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def pytest_deselected(items):
    """With I6_RC_REQUIRE_SLURM=1 (CI), leaving out the Slurm tests (``-m "not slurm"``) is an error, as their skip is."""
    left_out = [item.nodeid for item in items if item.get_closest_marker("slurm")]
    if left_out and os.environ.get("I6_RC_REQUIRE_SLURM") == "1":
        raise pytest.UsageError(f"I6_RC_REQUIRE_SLURM=1, but the Slurm tests are deselected ({left_out[0]}, ...)")


def pytest_sessionfinish(session, exitstatus):
    """A test ends every process it starts: after the last fixture is torn down, no process started by this pytest
    may still run (a leftover holds memory and, for RETURNN, its compile locks)."""
    import psutil

    me = psutil.Process()
    left = [child for child in me.children(recursive=True) if child.status() != psutil.STATUS_ZOMBIE]
    _, alive = psutil.wait_procs(left, timeout=10)
    if alive:
        for child in alive:
            print(f"\nleft running by the tests (now killed): pid {child.pid}: {' '.join(child.cmdline())[:300]}")
            child.kill()
        session.exitstatus = 1


@pytest.fixture(autouse=True)
def _build_servers_end_with_the_test():
    """A test that builds in this process ends the build servers it started (they would live until pytest exits)."""
    yield
    if "i6_rc_jobs.builds.client" in sys.modules:
        sys.modules["i6_rc_jobs.builds.client"].stop_servers()

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


def _end_left_running() -> list[str]:
    """The processes started by this pytest that still run (not zombies), each described; all of them killed."""
    import psutil

    left = [child for child in psutil.Process().children(recursive=True) if child.status() != psutil.STATUS_ZOMBIE]
    _, alive = psutil.wait_procs(left, timeout=10)
    said = []
    for child in alive:
        try:
            said.append(f"{' '.join(child.cmdline())[:300]} (pid {child.pid})")
            child.kill()
        except psutil.NoSuchProcess:
            continue
    return said


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """A test ends every process it starts: once a test module's last fixture is torn down, no process started by
    this pytest may still run (a leftover holds memory and, for RETURNN, its compile locks). The module's last test
    fails at teardown, naming what was left running (which is killed)."""
    result = yield
    if nextitem is None or nextitem.module is not item.module:
        left = _end_left_running()
        if left:
            raise RuntimeError("left running by this test module (now killed): " + "; ".join(left))
    return result


def pytest_sessionfinish(session, exitstatus):
    """The same check at the end of the session, for what outlived even that."""
    left = _end_left_running()
    if left:
        print("\nleft running by the tests (now killed): " + "; ".join(left))
        session.exitstatus = 1


@pytest.fixture(autouse=True)
def _build_servers_end_with_the_test():
    """A test that builds in this process ends the build servers it started (they would live until pytest exits)."""
    yield
    if "i6_rc_jobs._builds.server_link" in sys.modules:
        sys.modules["i6_rc_jobs._builds.server_link"].stop_servers()

"""Real Sisyphus setup directories for tests: the example's settings.py plus extras, a config, and `sis manager`."""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import textwrap
from subprocess import PIPE

import psutil

REPO = pathlib.Path(__file__).resolve().parents[2]
SIS = REPO / ".venv" / "bin" / "sis"


def make_setup(directory: pathlib.Path, config: str) -> pathlib.Path:
    """A setup dir with the example's settings.py and ``config/__init__.py`` = ``config``."""
    (directory / "config").mkdir(parents=True)
    (directory / "work").mkdir()
    (directory / "settings.py").write_text((REPO / "recipe_examples" / "settings.py").read_text())
    (directory / "config" / "__init__.py").write_text(textwrap.dedent(config))
    return directory


def run_manager(directory: pathlib.Path, python_path: str = "", timeout: float = 600) -> subprocess.CompletedProcess:
    """``sis manager -r -co`` until it ends by itself; 'u' answers its question when all is done already.
    Workers inherit the manager's PYTHONPATH (Sisyphus sets its environment only once they run)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=f"{python_path}:{REPO}")
    command = [str(SIS), "manager", "-r", "-co"]
    with subprocess.Popen(command, cwd=directory, env=env, stdin=PIPE, stdout=PIPE, stderr=PIPE, text=True) as manager:
        try:
            out, err = manager.communicate("u\n", timeout=timeout)
        except subprocess.TimeoutExpired:
            end_with_children(manager.pid)
            raise
    return subprocess.CompletedProcess(command, manager.returncode, out, err)


def end_with_children(pid: int) -> None:
    """Kills a process and every process it started, also those in sessions of their own (the local engine starts
    each task in one): a test ends what it starts, also when it fails."""
    try:
        process = psutil.Process(pid)
        family = [*process.children(recursive=True), process]
    except psutil.NoSuchProcess:
        return
    for member in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()
    psutil.wait_procs(family, timeout=10)


def job_dirs(directory: pathlib.Path, prefix: str) -> list[pathlib.Path]:
    """The job directories whose class name starts with ``prefix``."""
    return sorted(p.parent for p in (directory / "work").rglob("job.save") if p.parent.name.startswith(prefix))

"""Real Sisyphus setup directories for tests: the example's settings.py plus extras, a config, and `sis manager`."""

from __future__ import annotations

import os
import pathlib
import subprocess
import textwrap

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
    return subprocess.run(
        [str(SIS), "manager", "-r", "-co"],
        cwd=directory,
        env=env,
        input="u\n",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def job_dirs(directory: pathlib.Path, prefix: str) -> list[pathlib.Path]:
    """The job directories whose class name starts with ``prefix``."""
    return sorted(p.parent for p in (directory / "work").rglob("job.save") if p.parent.name.startswith(prefix))

"""The code is formatted as the project says (black, line length 120, from pyproject.toml)."""

import subprocess
import sys

from tests.support.sisyphus_setup import REPO


def test_black_formatting():
    folders = ["i6_rc_jobs", "tests", "bench", "recipe_examples", "docs"]
    proc = subprocess.run(
        [sys.executable, "-m", "black", "--check", "-q", *folders], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr

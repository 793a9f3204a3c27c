"""The code is formatted, linted and type-checked as pyproject.toml says: black (line length 120), ruff (its rules) and
mypy (the package); each test fails with the tool's findings."""

import subprocess
import sys

from tests.support.sisyphus_setup import REPO

FOLDERS = ["i6_rc_jobs", "tests", "bench", "fuzz", "recipe_examples", "docs"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True)


def test_black_formatting():
    proc = _run("black", "--check", "-q", *FOLDERS)
    assert proc.returncode == 0, proc.stderr


def test_ruff_finds_nothing():
    proc = _run("ruff", "check", "--quiet", "--output-format", "concise", *FOLDERS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_nothing():
    proc = _run("mypy")  # the files and settings of pyproject.toml
    assert proc.returncode == 0, proc.stdout + proc.stderr

"""The set-up step: a second run is quick and changes nothing; a clone that fails says what failed and what to do."""

import os
import shutil
import subprocess
import time

from tests.support.pins import pins
from tests.support.sisyphus_setup import REPO


def test_second_run_is_quick_and_changes_nothing():
    pth = next((REPO / ".venv" / "lib").glob("python3.11/site-packages/i6_rc_jobs_deps.pth"))
    before = pth.read_text()
    start = time.monotonic()
    proc = subprocess.run([str(REPO / "setup.sh")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < 20
    assert proc.stdout == ""  # nothing was (re)installed, cloned or checked out
    assert pth.read_text() == before
    for name, commit in pins().items():
        head = subprocess.run(
            ["git", "-C", str(REPO / ".deps" / "src" / name), "rev-parse", "HEAD"], capture_output=True
        )
        assert head.stdout.decode().strip() == commit


def test_failing_clone_names_the_url_and_what_to_do(tmp_path):
    for name in ("setup.sh", "requirements.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    os.symlink(REPO / ".venv", tmp_path / ".venv")  # ready, so the step gets to the clones (and stops there)
    bogus = "https://github.invalid/rwth-i6/no-such-repo"
    (tmp_path / "rwth-i6.lock").write_text(f"sisyphus {bogus} 21ba6848130e6e725470af600b0925b95d2c388a\n")
    proc = subprocess.run([str(tmp_path / "setup.sh")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"setup.sh: cannot clone {bogus}: check access to github.com" in proc.stderr
    assert not (tmp_path / ".deps" / "recipe" / "i6_core").exists()


def test_installing_the_repository_installs_one_top_level_package(tmp_path):
    """What a setup gets from ``pip install`` of the repository: the package ``i6_rc_jobs`` and nothing beside it."""
    source, target = tmp_path / "repository", tmp_path / "site"
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, check=True)
    for name in tracked.stdout.split():  # a clean copy: building in the worktree would leave build/ there
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / name, source / name)
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    installed = sorted(p.name for p in target.iterdir() if not p.name.endswith((".dist-info", ".egg-info")))
    assert installed == ["i6_rc_jobs"]
    (top_level,) = target.glob("*.dist-info/top_level.txt")
    assert top_level.read_text().split() == ["i6_rc_jobs"]

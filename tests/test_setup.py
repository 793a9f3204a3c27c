"""The set-up step: a second run is quick and changes nothing; RETURNN's git submodules are at the commits it records;
a clone that fails says what failed and what to do, as does a missing system package."""

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


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()


def _returnn_checkouts() -> list:
    return [REPO / ".deps" / "src" / "returnn"] + sorted((REPO / ".deps" / "src").glob("returnn-*"))


def test_returnn_checkouts_have_their_submodules_at_the_recorded_commits():
    """As a user's ``git clone --recursive``; blocksparse (GPU only) may be left empty if its commit cannot be had."""
    for checkout in _returnn_checkouts():
        paths = _git("-C", str(checkout), "config", "-f", ".gitmodules", "--get-regexp", r"\.path$").splitlines()
        assert len(paths) == 6, paths
        for path in (line.split()[1] for line in paths):
            recorded = _git("-C", str(checkout), "rev-parse", f"HEAD:{path}")
            if path == "returnn/extern/blocksparse" and not (checkout / path / ".git").exists():
                continue
            assert _git("-C", str(checkout / path), "rev-parse", "HEAD") == recorded, checkout / path
        assert (checkout / "returnn/extern/HawkAaronWarpTransducer/warp-transducer/src/rnnt_entrypoint.cpp").is_file()


def test_a_submodule_at_another_commit_is_repaired():
    submodule = REPO / ".deps" / "src" / "returnn" / "returnn" / "extern" / "ParseOggVorbis"
    recorded = _git("-C", str(submodule.parents[2]), "rev-parse", "HEAD:returnn/extern/ParseOggVorbis")
    try:
        _git("-C", str(submodule), "checkout", "-q", "--detach", f"{recorded}~1")
        proc = subprocess.run([str(REPO / "setup.sh")], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert f"setup.sh: checked out returnn/returnn/extern/ParseOggVorbis at {recorded}\n" in proc.stdout
    finally:
        _git("-C", str(submodule), "checkout", "-q", "--detach", recorded)
    assert _git("-C", str(submodule), "rev-parse", "HEAD") == recorded


def test_without_the_system_blas_a_user_is_told_what_to_install(tmp_path):
    """The older RETURNNs link against the system BLAS: setup.sh --returnn-range as a user on a machine without it
    names the package and the command, before it changes anything. The machine's BLAS is hidden by an empty ld.so
    cache in a mount namespace, the user is uid 1000 of a user namespace (root or not)."""
    empty_cache = tmp_path / "ld.so.cache"
    empty_cache.touch()
    as_user = (
        f'mount --bind {empty_cache} /etc/ld.so.cache && exec unshare --user --map-user=1000 --map-group=1000 "$@"'
    )
    proc = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", as_user, "sh"]
        + [str(REPO / "setup.sh"), "--returnn-range"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (
        "setup.sh: the older RETURNNs need the system BLAS: run 'sudo apt-get install libblas-dev', then this again"
    )


def test_failing_clone_names_the_url_and_what_to_do(tmp_path):
    for name in ("setup.sh", "requirements-dev.lock", "requirements-torch.lock"):
        shutil.copy(REPO / name, tmp_path / name)
    os.symlink(REPO / ".venv", tmp_path / ".venv")  # ready, so the step gets to the clones (and stops there)
    bogus = "https://github.invalid/rwth-i6/no-such-repo"
    (tmp_path / "rwth-i6.lock").write_text(f"sisyphus {bogus} 21ba6848130e6e725470af600b0925b95d2c388a\n")
    proc = subprocess.run([str(tmp_path / "setup.sh")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"setup.sh: cannot clone {bogus}: check access to github.com" in proc.stderr
    assert not (tmp_path / ".deps" / "recipe" / "i6_core").exists()


def test_installing_the_repository_installs_one_top_level_package(tmp_path):
    """What a setup gets from ``pip install`` of the repository: the package ``i6_rc_jobs`` and its console script,
    nothing beside them."""
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
    assert installed == ["bin", "i6_rc_jobs"]
    assert [p.name for p in (target / "bin").iterdir()] == ["i6-rc"]  # the console script
    (top_level,) = target.glob("*.dist-info/top_level.txt")
    assert top_level.read_text().split() == ["i6_rc_jobs"]

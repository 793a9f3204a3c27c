"""Versioned imports with real git: a local origin repository reached through its https name (git's insteadOf, as a
user's mirror or ssh setting would), and the real returnn_common through its GitHub URL."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import logging
import os
import pickle
import py_compile
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from sisyphus.hash import sis_hash_helper

import i6_rc_jobs

from i6_rc_jobs import VersionedImportError, import_
from i6_rc_jobs._imports.cache import ENV, LOCK_TIMEOUT_ENV, TREES
from i6_rc_jobs._util.atomic_dir import into_place
from i6_rc_jobs._imports.dev import ENV as DEV_ENV
from tests.support.pins import version as pinned_version
from tests.support.sisyphus_setup import job_dirs, make_setup, run_manager

REPO = "example.org/test/origin"


@dataclass
class Origin:
    path: Path
    cache: Path
    commits: list[str]  # full commits, oldest first

    def version(self, i: int, digits: int = 12) -> str:
        date = _git(self.path, "log", "-1", "--format=%cd", "--date=format:%Y%m%d", self.commits[i]).strip()
        return f"{date}-{self.commits[i][:digits]}"

    def commit(self, files: dict[str, str], date: str) -> None:
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text)
        _git(self.path, "add", "-A")
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        _git(self.path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", date, env=env)
        self.commits.append(_git(self.path, "rev-parse", "HEAD").strip())


def _git(cwd: Path, *args: str, env=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def origin(tmp_path, monkeypatch) -> Origin:
    path = tmp_path / "origin"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    made = Origin(path, tmp_path / "cache", [])
    made.commit(
        {
            "pkg/__init__.py": "from .helper import VALUE\n",
            "pkg/helper.py": "VALUE = 1\n\n\ndef value():\n    return VALUE\n",
            "setups-data/my-model.py": "NAME = 'dashed'\n",
            "train.config": "num_epochs = 3\n\n\ndef epochs():\n    return num_epochs\n",
            "a.b.py": "DOTTED = True\n",
            "some.dir/x.py": "X = 1\n",
            "x.config": "X = 'config'\n",
            "x_config.py": "X = 'py'\n",
            "clash/train.config": "num_epochs = 'dotted'\n",
            "clash/train-config": "num_epochs = 'dashed'\n",
            "clash/both.py": "BOTH = 'file'\n",
            "clash/both/__init__.py": "BOTH = 'package'\n",
            "clash/tools.py": "TOOLS = 'file'\n",
            "clash/tools/data.txt": "not a package\n",
            "clash/plain/x.py": "X = 'namespace'\n",
            "clash/plain.py": "PLAIN = 'file'\n",
            "clash/x.config": "X = 'config'\n",
            "clash/x_config.py": "X = 'py'\n",
        },
        "2024-01-02T03:04:05+01:00",
    )
    made.commit({"pkg/helper.py": "VALUE = 2\n\n\ndef value():\n    return VALUE\n"}, "2024-02-03T04:05:06+01:00")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{path}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"https://{REPO}")
    monkeypatch.setenv(ENV, str(made.cache))
    for name in [name for name in sys.modules if name.startswith("i6_rc_jobs.versioned.")]:
        del sys.modules[name]  # the same commits are made again by every test
    return made


def _child(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env={**os.environ, **env}, capture_output=True, text=True
    )


def test_two_versions_of_one_module_live_side_by_side_with_their_relative_imports(origin):
    first, second = import_(REPO, "pkg", origin.version(0)), import_(REPO, "pkg", origin.version(1, digits=7))
    assert (first.VALUE, second.VALUE) == (1, 2)
    assert first.helper is not second.helper
    assert import_(REPO, "pkg/helper.py", origin.version(0)) is first.helper


def _colliding_commits(origin: Origin) -> tuple[str, str]:
    """Two new commits of ``origin`` (on its last one, 2024-02-03) whose hashes share their first 7 hex digits:
    messages are numbered until two commits collide, found by hashing them in Python as git does (about 20,000
    tries, the same ones every time), and then written with git."""
    tree = _git(origin.path, "rev-parse", "HEAD^{tree}").strip()
    head = f"tree {tree}\nparent {origin.commits[-1]}\n"
    head += "author t <t@t> 1706929506 +0100\ncommitter t <t@t> 1706929506 +0100\n\n"
    seen: dict[str, tuple[str, bytes]] = {}
    for i in itertools.count():
        body = f"{head}{i}\n".encode()
        commit = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        first = seen.setdefault(commit[:7], (commit, body))
        if first[0] != commit:
            break
    for made, made_body in (first, (commit, body)):
        written = (
            subprocess.run(
                ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
                cwd=origin.path,
                input=made_body,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        assert written == made
        _git(origin.path, "branch", f"b{made}", made)
    return first[0], commit


def test_a_commit_prefix_of_two_commits_is_refused_as_ambiguous_by_git_and_by_the_cache(origin):
    first, second = _colliding_commits(origin)
    prefix = first[:7]
    assert second.startswith(prefix) and second != first
    with pytest.raises(VersionedImportError, match=f"version 20240203-{prefix}: the commit prefix is ambiguous: .*"):
        import_(REPO, "pkg", f"20240203-{prefix}")  # git says so: nothing is cached yet
    assert import_(REPO, "pkg", f"20240203-{first}").VALUE == import_(REPO, "pkg", f"20240203-{second}").VALUE == 2
    with pytest.raises(VersionedImportError, match=rf"the commit prefix is ambiguous: \['{prefix}"):
        import_(REPO, "pkg", f"20240203-{prefix}")  # the cache says so: both trees are there


def test_dashed_names_and_files_not_ending_in_py_are_imported_and_unpickled(origin):
    assert import_(REPO, "setups-data/my-model.py", origin.version(0)).NAME == "dashed"
    config = import_(REPO, "train.config", origin.version(0))
    assert config.num_epochs == 3 and config.__name__.endswith(".train_config")
    assert import_(REPO, "a.b.py", origin.version(0)).DOTTED
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())())"
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(config.epochs), capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"3\n"), done.stderr
    with pytest.raises(VersionedImportError, match=r"'x.config' would be the module x_config, which 'x_config.py' is"):
        import_(REPO, "x.config", origin.version(0))


@pytest.mark.parametrize(
    "path, taken_by",
    [("train.config", "train-config"), ("train-config", "train.config"), ("both.py", "both"), ("plain", "plain.py")],
)
def test_a_module_name_that_another_entry_would_be_imported_as_is_refused(origin, path, taken_by):
    match = f"'clash/{path}' would be the module .*, which {taken_by!r} is already"
    with pytest.raises(VersionedImportError, match=match):
        import_(REPO, f"clash/{path}", origin.version(0))


def test_entries_of_one_module_name_that_python_tells_apart_are_imported(origin):
    assert import_(REPO, "clash/both", origin.version(0)).BOTH == "package"  # a package comes first
    assert import_(REPO, "clash/tools.py", origin.version(0)).TOOLS == "file"  # a directory without __init__ last
    assert import_(REPO, "clash/x_config.py", origin.version(0)).X == "py"  # the finder's files after .py files
    with pytest.raises(VersionedImportError, match=r"'some.dir/x.py': a directory with a dot in its name cannot be"):
        import_(REPO, "some.dir/x.py", origin.version(0))


def test_a_cached_version_needs_neither_git_nor_the_origin_and_the_cache_can_be_moved(origin, tmp_path):
    cached, other = origin.version(0), origin.version(1)
    import_(REPO, "pkg", cached)
    moved = tmp_path / "moved-cache"
    shutil.move(origin.cache, moved)
    shutil.rmtree(origin.path)
    code = f"""
        from i6_rc_jobs import import_
        print(import_({REPO!r}, "pkg", {cached!r}).VALUE)
    """
    done = _child(code, PATH="/nonexistent", **{ENV: str(moved)})  # no git on PATH
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr
    done = _child(code.replace(cached, other), PATH="/nonexistent", **{ENV: str(moved)})
    assert done.returncode != 0 and "git is not installed" in done.stderr


@pytest.mark.parametrize(
    "repo, path, version, message",
    [
        ("example.org/test", "pkg", "20240102-0123456", "repository 'example.org/test': expected host/owner/name"),
        ("example.org/../origin", "pkg", "20240102-0123456", "repository 'example.org/../origin'"),
        ("example.org/test/...git", "pkg", "20240102-0123456", "repository 'example.org/test/...git'"),
        (
            "file://example.org/x",
            "pkg",
            "20240102-0123456",
            "repository 'file://example.org/x': a file:// URL names an",
        ),
        (REPO, "pkg", "2024-0123456", "version '2024-0123456': expected <date>-<commit>"),
        (REPO, "pkg", "20240102-012345", "version '20240102-012345'"),
        (REPO, "pkg", "20240102-0123456G", "version '20240102-0123456G'"),
        (REPO, "../pkg", "20240102-0123456", "path '../pkg': expected a relative path"),
        (REPO, "/pkg", "20240102-0123456", "path '/pkg'"),
    ],
)
def test_malformed_names_are_refused_before_anything_is_fetched(origin, repo, path, version, message):
    with pytest.raises(VersionedImportError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        import_(repo, path, version)
    assert not origin.cache.exists()


def test_a_repository_on_disk_by_its_path_or_file_url_is_imported_at_versions_as_any_other(origin, tmp_path):
    """One's own repository (on disk, or a group's server mounted): by its absolute path or its file:// URL, with the
    same versions, cached per commit, read-only; a process with only the cache unpickles its objects, and one whose
    cache lacks the version is told the fetch command with the repository's path."""
    path, version = str(origin.path), origin.version(0)
    by_path = import_(path, "pkg", version)
    assert import_(f"file://{path}/", "pkg", origin.version(0)) is by_path and by_path.VALUE == 1
    assert import_(path, "pkg", origin.version(1)).VALUE == 2
    (place,) = (origin.cache / TREES / "file").iterdir()
    assert place.name.startswith(f"{origin.path.parent.name}-")
    assert by_path.__file__ == str(place / "origin" / origin.commits[0] / "pkg" / "__init__.py")
    assert not stat.S_IMODE(os.stat(by_path.__file__).st_mode) & 0o222
    wrong = "20240103-" + origin.commits[0][:12]
    with pytest.raises(
        VersionedImportError, match=f"^{path} version {wrong}: .* the version would be {origin.version(0)}"
    ):
        import_(path, "pkg", wrong)
    pickled = pickle.dumps(by_path.helper.value)
    shutil.move(origin.path, tmp_path / "moved-away")
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())())"
    done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"1\n"), done.stderr
    node_cache = tmp_path / "node-cache"
    shutil.copytree(origin.cache / "git", node_cache / "git")
    done = subprocess.run(
        [sys.executable, "-c", code], input=pickled, capture_output=True, env={**os.environ, ENV: str(node_cache)}
    )
    said = done.stderr.decode().strip().splitlines()[-1]
    assert said.endswith(f"fetch it first: python -m i6_rc_jobs fetch {path} {version}"), said


def test_a_date_that_is_not_the_commits_is_refused_naming_the_right_version(origin):
    wrong = "20240103-" + origin.commits[0][:12]
    with pytest.raises(VersionedImportError) as error:
        import_(REPO, "pkg", wrong)
    assert f"dated 20240102030405, not 20240103: the version would be {origin.version(0)}" in str(error.value)
    with pytest.raises(VersionedImportError, match="dated 20240102030405, not 20240103"):
        import_(REPO, "pkg", wrong)  # also when the commit is in the cache already
    with pytest.raises(VersionedImportError, match=r"no file or directory 'nope.py' in it"):
        import_(REPO, "nope.py", origin.version(0))


def test_commits_made_after_the_first_fetch_are_fetched_and_an_unknown_one_refused(origin):
    import_(REPO, "pkg", origin.version(0))
    origin.commit({"pkg/helper.py": "VALUE = 3\n"}, "2024-03-04T05:06:07+01:00")
    assert import_(REPO, "pkg", origin.version(2)).VALUE == 3
    _git(origin.path, "checkout", "-q", "-b", "feature", origin.commits[0])  # a branch the default one lacks
    origin.commit({"pkg/helper.py": "VALUE = 4\n"}, "2024-04-05T06:07:08+01:00")
    _git(origin.path, "checkout", "-q", "main")
    assert import_(REPO, "pkg", origin.version(3)).VALUE == 4
    with pytest.raises(VersionedImportError, match=f"no commit abcdef1 in https://{REPO}"):
        import_(REPO, "pkg", "20240304-abcdef1")


def test_eight_processes_importing_a_new_version_at_once_all_get_it(origin, tmp_path):
    start = tmp_path / "start"
    code = f"""
        import os, sys, time
        from i6_rc_jobs import import_
        open(os.path.join({str(tmp_path)!r}, "ready." + sys.argv[1]), "w").close()
        while not os.path.exists({str(start)!r}):
            time.sleep(0.001)
        print(import_({REPO!r}, "pkg", {origin.version(1)!r}).VALUE)
    """
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for i in range(8)
    ]
    while len(list(tmp_path.glob("ready.*"))) < 8 and all(child.poll() is None for child in children):
        time.sleep(0.01)  # all have imported the library and wait
    start.touch()
    results = [(child.wait(), child.stdout.read().decode(), child.stderr.read().decode()) for child in children]
    assert all(code == 0 and out == "2\n" for code, out, _ in results), results
    trees = origin.cache / TREES / "example.org" / "test" / "origin"
    assert os.listdir(trees) == [origin.commits[1]]
    assert os.listdir(origin.cache / "tmp") == []


def test_what_killed_processes_left_half_made_is_removed_and_what_others_make_is_kept(origin):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    left = [
        origin.cache / "tmp" / f".tree.{host}.{dead.pid}.abc123",  # a tree being extracted
        origin.cache / "git" / "example.org" / "test" / f".origin.git.{host}.{dead.pid}.def456",  # a clone
    ]
    others = [origin.cache / "tmp" / f".tree.other-host.example.{dead.pid}.ghi789", origin.cache / "tmp" / "notes"]
    for directory in left + others:
        directory.mkdir(parents=True)
    assert import_(REPO, "pkg", origin.version(0)).VALUE == 1
    assert [d.exists() for d in left + others] == [False, False, True, True]


def test_a_tree_put_in_place_by_another_host_meanwhile_is_kept(tmp_path):
    target, partial = tmp_path / "tree", tmp_path / "partial"
    for directory, text in ((target, "first"), (partial, "second")):
        directory.mkdir()
        (directory / "file.py").write_text(text)
    into_place(partial, target)
    assert (target / "file.py").read_text() == "first"


def test_a_version_with_a_symbolic_link_out_of_the_repository_is_refused(origin):
    (origin.path / "pkg_link").symlink_to("pkg")  # inside the repository: fine
    origin.commit({}, "2024-03-04T05:06:07+01:00")
    assert import_(REPO, "pkg_link", origin.version(2)).VALUE == 2
    (origin.path / "sub").mkdir()
    (origin.path / "sub" / "up").symlink_to("..")  # inside, but a path through it can lead out
    for i, target in enumerate(("/etc", "../../..", "sub/up/../outside.py"), 3):
        (origin.path / "escape").unlink(missing_ok=True)
        (origin.path / "escape").symlink_to(target)
        origin.commit({}, f"2024-03-0{i + 2}T05:06:07+01:00")
        with pytest.raises(VersionedImportError, match="the symbolic link 'escape' points out of the repository"):
            import_(REPO, "pkg", origin.version(i))
        assert not list((origin.cache / TREES).rglob("escape"))


def test_the_files_of_a_version_are_read_only(origin):
    module = import_(REPO, "pkg/helper.py", origin.version(0))
    assert not stat.S_IMODE(os.stat(module.__file__).st_mode) & 0o222


def test_fetch_command_fills_the_cache_for_processes_without_git(origin):
    done = _child(
        f"import sys; from i6_rc_jobs.__main__ import main; sys.exit(main(['fetch', {REPO!r}, {origin.version(1)!r}]))"
    )
    assert done.returncode == 0 and origin.commits[1] in done.stdout, done.stderr
    code = f"from i6_rc_jobs import import_; print(import_({REPO!r}, 'pkg', {origin.version(1)!r}).VALUE)"
    done = _child(code, PATH="/nonexistent")
    assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr


def test_returnn_common_from_its_github_url_at_the_pinned_version(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "cache"))
    version = pinned_version("returnn_common")
    loader = import_("github.com/rwth-i6/returnn_common", "_lazy_loader.py", version)
    commit = _git(Path(".deps/src/returnn_common"), "rev-parse", version.split("-")[1]).strip()
    assert loader.__file__ == str(
        tmp_path / "cache" / TREES / "github.com/rwth-i6/returnn_common" / commit / "_lazy_loader.py"
    )
    assert loader.LazyLoader.__module__ == loader.__name__
    package = sys.modules[loader.__name__.rpartition(".")[0]]
    assert package.__file__.endswith(f"{commit}/__init__.py")  # the repository is a package: its __init__ ran


def test_development_mode_imports_the_working_copy_and_says_what_it_holds(origin, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(DEV_ENV, str(tmp_path / "dev"))
    with caplog.at_level(logging.WARNING, logger="i6_rc_jobs._imports"):
        assert import_(REPO, "pkg", None).VALUE == 2  # cloned at the origin's head
    assert f"at commit {origin.version(1)}" in caplog.text and "without changes" in caplog.text
    clean_hash = sis_hash_helper(import_(REPO, "pkg/helper.py", None).value)

    copy = tmp_path / "dev" / "example.org" / "test" / "origin"
    (copy / "pkg" / "helper.py").write_text("VALUE = 5\n\n\ndef value():\n    return VALUE\n")  # unstaged
    (copy / "staged.py").write_text("STAGED = True\n")
    _git(copy, "add", "staged.py")
    (copy / "untracked.py").write_text("UNTRACKED = True\n")
    (copy / "my notes.txt").write_text("quoted by git status\n")
    for name in [name for name in sys.modules if name.startswith("i6_rc_jobs.versioned.")]:
        del sys.modules[name]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="i6_rc_jobs._imports"):
        assert import_(REPO, "pkg", None).VALUE == 5
    assert "M pkg/helper.py; A staged.py; ?? my notes.txt; ?? untracked.py" in caplog.text, caplog.text
    assert sis_hash_helper(import_(REPO, "pkg/helper.py", None).value) != clean_hash  # jobs see the edit
    patch = Path(caplog.text.split("): ")[-1].strip())
    assert patch.parent == origin.cache / "dev-patches"
    # the patch gives back exactly the working copy, on a clean checkout of the commit it names
    clean = tmp_path / "clean"
    _git(tmp_path, "clone", "-q", str(origin.path), str(clean))
    _git(clean, "apply", str(patch))
    for name in ("pkg/helper.py", "staged.py", "untracked.py", "my notes.txt"):
        assert (clean / name).read_text() == (copy / name).read_text()

    # a worker unpickling a function of the working copy gets it only while the copy is what the name says; neither
    # the bytecode Python writes into the copy nor the worker's own git diff settings count as changes
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())())"
    pickled = pickle.dumps(import_(REPO, "pkg/helper.py", None).value)
    worker = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    order = tmp_path / "order"
    order.write_text("untracked.py\n")
    settings = {
        **{"diff.noprefix": "true", "diff.context": "7", "diff.algorithm": "patience", "diff.renames": "copies"},
        **{"core.abbrev": "12", "core.quotePath": "false", "diff.suppressBlankEmpty": "true"},
        "diff.orderFile": str(order),
    }
    worker["GIT_CONFIG_COUNT"] = str(1 + len(settings))
    for i, (key, value) in enumerate(settings.items(), 1):
        worker[f"GIT_CONFIG_KEY_{i}"], worker[f"GIT_CONFIG_VALUE_{i}"] = key, value
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True, env=worker)
        assert (done.returncode, done.stdout) == (0, b"5\n"), done.stderr
    assert not list(copy.rglob("__pycache__"))  # bytecode is this user's, outside the copy
    (copy / "untracked.py").write_text("UNTRACKED = False\n")
    done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True, env=worker)
    assert done.returncode != 0 and b"has changed since" in done.stderr, done.stderr


def test_objects_of_a_version_unpickle_in_a_process_that_never_imported_it(origin, tmp_path):
    pickled = pickle.dumps([import_(REPO, "pkg", origin.version(i)).helper.value for i in (0, 1)])
    code = "import pickle, sys; print([f() for f in pickle.loads(sys.stdin.buffer.read())])"
    done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True)
    assert (done.returncode, done.stdout) == (0, b"[1, 2]\n"), done.stderr
    elsewhere = {**os.environ, ENV: str(tmp_path / "empty-cache")}
    done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True, env=elsewhere)
    assert (
        done.returncode != 0
        and b"is not in the import cache" in done.stderr
        and b"python -m i6_rc_jobs fetch" in done.stderr
    )


def test_a_sisyphus_worker_runs_a_job_holding_a_function_of_a_version(origin, tmp_path):
    setup = make_setup(
        tmp_path / "setup",
        f"""
        from i6_core.returnn.config import ReturnnConfig
        from sisyphus import tk
        from i6_rc_jobs import CreateConfigJob
        from i6_rc_jobs import import_

        def main():
            helper = import_({REPO!r}, "pkg/helper.py", {origin.version(1)!r})
            config = ReturnnConfig({{"num_epochs": 1}}, python_prolog=[helper.value], black_formatting=False)
            tk.register_output("returnn.config", CreateConfigJob(config).out_config)
        """,
    )
    run_manager(setup)
    written = (setup / "output" / "returnn.config").read_text()
    assert "def value():\n    return VALUE" in written
    job_save = job_dirs(setup, "CreateConfigJob")[0] / "job.save"
    assert b"i6_rc_jobs.versioned.example_org.test.origin.c" + origin.commits[1].encode() in gzip.decompress(
        job_save.read_bytes()
    )


def test_sisyphus_hashes_a_function_of_a_version_by_its_commit_in_any_process(origin):
    functions = [import_(REPO, "pkg", origin.version(i)).helper.value for i in (0, 1)]
    hashes = [sis_hash_helper(f) for f in functions]
    assert hashes[0] != hashes[1]
    code = "import pickle, sys; from sisyphus.hash import sis_hash_helper; f = pickle.loads(sys.stdin.buffer.read())\n"
    code += "sys.stdout.buffer.write(sis_hash_helper(f))"
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(functions[1]), capture_output=True)
    assert (done.returncode, done.stdout) == (0, hashes[1]), done.stderr


def _returnn_before_its_code_object_cache(tmp_path: Path) -> Path:
    """RETURNN's better_exchook.py as it was before it had a code object cache (the parent of commit 4f05ac7ef,
    2025-05-08), the one module of a returnn package put first on sys.path."""
    old = tmp_path / "old-returnn"
    (old / "returnn/util").mkdir(parents=True)
    (old / "returnn/__init__.py").write_text("")
    (old / "returnn/util/__init__.py").write_text("")
    source = _git(Path(".deps/src/returnn"), "show", "4f05ac7ef~1:returnn/util/better_exchook.py")
    assert "_func_from_code_object_cache" not in source
    (old / "returnn/util/better_exchook.py").write_text(source)
    return old


def test_returnn_tells_two_copies_of_one_function_apart_in_processes_with_versioned_modules(tmp_path):
    """Whether RETURNN's module is loaded before or after i6_rc_jobs.versioned, also with a RETURNN that had no such
    cache yet; without i6_rc_jobs.versioned, RETURNN takes one copy for the other (the premise: should RETURNN fix its
    cache, this says that i6_rc_jobs._compat.code_identity can go)."""
    code = """
        import importlib.util, sys
        module = "returnn.util.better_exchook"
        if sys.argv[1] == "before":
            import returnn.util.better_exchook
        if sys.argv[1] != "without":
            import i6_rc_jobs.versioned
        if sys.argv[1] == "after":  # found through the versioned modules' finder, whose loader does all a loader does
            assert "def get_func_from_code_object" in importlib.util.find_spec(module).loader.get_source(module)
        from returnn.util.better_exchook import get_func_from_code_object
        copies = []
        for file in ("/one/copy.py", "/other/copy.py"):
            namespace = {}
            exec(compile("def f(x):\\n    return x + 1\\n", file, "exec"), namespace)
            copies.append(namespace["f"])
        assert copies[0].__code__ == copies[1].__code__ and copies[0] is not copies[1]
        found = [get_func_from_code_object(f.__code__) for f in copies]
        print(importlib.util.find_spec(module).origin, [copies.index(f) for f in found])
    """
    old = _returnn_before_its_code_object_cache(tmp_path)
    found = {}
    for returnn, path in (("pinned", ""), ("old", str(old))):
        env = {**os.environ, "PYTHONPATH": path}
        for when in ("before", "after", "without"):
            done = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(code), when], capture_output=True, text=True, env=env
            )
            assert done.returncode == 0, done.stderr[-3000:]
            origin, found[returnn, when] = done.stdout.strip().split(" ", 1)
            assert origin.startswith(path or str(Path(".deps/src/returnn").resolve())), origin
    assert found == {
        **{("pinned", when): "[0, 1]" for when in ("before", "after")},
        ("pinned", "without"): "[0, 0]",
        **{("old", when): "[0, 1]" for when in ("before", "after", "without")},
    }


@pytest.mark.slow
def test_models_built_with_returnn_common_at_a_version_and_installed_serialize_alike_in_any_order(tmp_path):
    """Built alone, or one after the other in one process in any order, also with two versions: the same code. (The
    same function in two copies has equal code objects; without i6_rc_jobs._compat.code_identity, RETURNN's cache
    took one copy for the other and returnn_common named the attention layers dot, dot_0 instead of energy, att.)"""
    build = """
        import sys
        from i6_rc_jobs import ReturnnCommonSerializer, rc_compat
        from i6_rc_jobs import import_
        from sisyphus.hash import sis_hash_helper

        def build(nn):
            nn = rc_compat.apply(nn)
            nn.reset_default_root_name_ctx()
            time, feat = nn.SpatialDim("time"), nn.FeatureDim("feat", 8)
            data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time, feat]))
            model = nn.SelfAttention(in_dim=feat, proj_dim=feat, key_dim_total=feat, value_dim_total=feat, num_heads=2)
            model(data, axis=time).mark_as_default_output()
            serializer = ReturnnCommonSerializer.from_returnn_common(model)
            return serializer.get() + sis_hash_helper(serializer).hex()

        for which in sys.argv[1:]:
            if which == "installed":
                from returnn_common import nn
            else:
                nn = import_("github.com/rwth-i6/returnn_common", "nn", which)
                assert nn.__name__.startswith("i6_rc_jobs.versioned.github_com.rwth_i6.returnn_common.c"), nn.__name__
            sys.stderr.write("\\0" + build(nn))
    """
    version, before = pinned_version("returnn_common"), pinned_version("returnn_common", back=1)
    env = {**os.environ, ENV: str(tmp_path / "cache"), "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    written = {}
    orders = [["installed"], [version], ["installed", version, "installed"], [version, "installed", version]]
    for order in orders + [[before, version, before]]:  # two versions (the one before changed nothing in nn/)
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(build), *order], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr[-3000:]
        written[" ".join(order)] = done.stderr.split("\0")[1:]
    assert all(len(codes) == len(order.split()) for order, codes in written.items())
    first = written["installed"][0]
    assert '"energy": {' in first and '"att_weights": {' in first
    assert {code for codes in written.values() for code in codes} == {first}, written


@pytest.fixture
def shared_dir():
    """A directory every user can reach (pytest's own tmp_path is in root's 0700 directory), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="i6-rc-shared-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _as_nobody(code: str, cache: Path, *args: str) -> subprocess.CompletedProcess:
    """Runs Python ``code`` as the user nobody, with a copy of this checkout's i6_rc_jobs beside the cache ``cache``
    (the checkout may sit in a directory closed to others, as `mktemp -d` makes them): another user of a shared
    cache, who may read it but not write to it."""
    source = cache.parent / "source"
    if not source.exists():
        package = Path(i6_rc_jobs.__file__).parent
        shutil.copytree(package, source / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    env = ["env", f"HOME={cache.parent}", f"{ENV}={cache}", f"PYTHONPATH={source}", "PYTHONDONTWRITEBYTECODE=1"]
    command = ["runuser", "-u", "nobody", "--", *env, _python_of_nobody(), "-c", textwrap.dedent(code), *args]
    return subprocess.run(command, capture_output=True, text=True)


def _python_of_nobody() -> str:
    """This Python if nobody may run it, else the system's (this one may be under root's home, closed to others)."""
    for python in (sys.executable, "/usr/bin/python3"):
        if subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", "pass"], capture_output=True).returncode == 0:
            return python
    raise AssertionError("no Python that the user nobody may run")


def _all_paths(root: Path) -> list[Path]:
    return [root, *root.rglob("*")]


def test_a_cache_filled_by_one_user_is_read_by_another(origin, shared_dir, monkeypatch):
    """With the umask 022, everything is readable, and writable only by its owner; in a setgid directory of a group,
    with the umask 002, everything belongs to that group and is writable by it (tempfile's 0700 locked others out)."""
    group = 65534  # nobody's group, nogroup
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{origin.path}.insteadOf")  # no hard links to the origin's
    for name, umask in (("cache", 0o022), ("group-cache", 0o002)):
        cache = shared_dir / name
        if umask == 0o002:
            cache.mkdir()
            os.chown(cache, -1, group)
            cache.chmod(0o2775)
        monkeypatch.setenv(ENV, str(cache))
        old = os.umask(umask)
        try:
            import_(REPO, "pkg", origin.version(0))
        finally:
            os.umask(old)
        directories = [path for path in _all_paths(cache) if path.is_dir() and not path.is_symlink()]
        trees = cache / TREES  # trees/<host>/<owner>/<name>/<commit>/... are sealed
        sealed = {path for path in directories if trees in path.parents and len(path.relative_to(trees).parts) >= 4}
        assert {stat.S_IMODE(path.stat().st_mode) & 0o777 for path in set(directories) - sealed} == {0o777 & ~umask}
        assert {stat.S_IMODE(path.stat().st_mode) for path in sealed} == {0o555}, name
        if umask == 0o002:
            assert {path.lstat().st_gid for path in _all_paths(cache)} == {group}
        code = f"from i6_rc_jobs import import_; print(import_({REPO!r}, 'pkg', {origin.version(0)!r}).VALUE)"
        done = _as_nobody(code, cache)
        assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr


def test_a_version_not_in_a_cache_this_user_may_not_write_is_one_line_naming_the_cache(origin, shared_dir, monkeypatch):
    cache = shared_dir / "cache"
    monkeypatch.setenv(ENV, str(cache))
    import_(REPO, "pkg", origin.version(0))
    code = f"""
        from i6_rc_jobs import VersionedImportError, import_
        try:
            import_({REPO!r}, "pkg", {origin.version(1)!r})
        except VersionedImportError as e:
            print(e)
    """
    done = _as_nobody(code, cache)
    message = f"{REPO} version {origin.version(1)} is not in the import cache {cache}, which is not writable for this"
    assert done.returncode == 0 and done.stdout.startswith(message) and done.stdout.count("\n") == 1, done
    code = "import sys; from i6_rc_jobs.__main__ import main; sys.exit(main(sys.argv[1:]))"
    done = _as_nobody(code, cache, "fetch", REPO, origin.version(1))
    assert (done.returncode, done.stderr.count("\n")) == (2, 1) and done.stderr.startswith(f"error: {message}"), done


def _drop_blob(git_dir: Path, commit: str, path: str) -> None:
    """Leaves ``git_dir`` as a fetch killed midway does: the commit and its trees there, one of its files' blobs not
    (packs are unpacked into loose objects first, so that one object can go)."""
    for pack in list((git_dir / "objects" / "pack").glob("*.pack")):
        data = pack.read_bytes()
        for file in pack.parent.glob(f"{pack.stem}.*"):
            file.unlink()
        subprocess.run(["git", "--git-dir", str(git_dir), "unpack-objects", "-q"], input=data, check=True)
    blob = _git(git_dir, "rev-parse", f"{commit}:{path}").strip()
    (git_dir / "objects" / blob[:2] / blob[2:]).unlink()
    assert _git(git_dir, "cat-file", "-t", commit).strip() == "commit"


def test_a_version_whose_fetch_was_killed_midway_is_fetched_again(origin):
    git_dir = origin.cache / "git" / "example.org" / "test" / "origin.git"
    import_(REPO, "pkg", origin.version(0))
    _drop_blob(git_dir, origin.commits[1], "pkg/helper.py")
    assert import_(REPO, "pkg", origin.version(1)).VALUE == 2
    origin.commit({"pkg/helper.py": "VALUE = 3\n"}, "2024-03-04T05:06:07+01:00")
    _git(git_dir, "fetch", "-q", "origin", "+refs/heads/*:refs/heads/*")
    _drop_blob(git_dir, origin.commits[2], "pkg/helper.py")
    done = _child(
        f"import sys; from i6_rc_jobs.__main__ import main; sys.exit(main(['fetch', {REPO!r}, {origin.version(2)!r}]))"
    )
    assert done.returncode == 0 and origin.commits[2] in done.stdout, done.stderr
    assert import_(REPO, "pkg", origin.version(2)).VALUE == 3


def test_a_branch_or_tag_named_like_the_commit_prefix_does_not_shadow_the_commit(origin):
    first, second = origin.version(1, digits=7), origin.version(0, digits=8)
    _git(origin.path, "branch", first.split("-")[1], origin.commits[0])
    _git(origin.path, "tag", second.split("-")[1], origin.commits[1])
    assert import_(REPO, "pkg", first).VALUE == 2
    assert import_(REPO, "pkg", second).VALUE == 1


def test_development_mode_counts_git_ignored_files_as_changes(origin, tmp_path, monkeypatch, caplog):
    """An ignored module is imported and run like any other, and data files beside it are read: all are changes, in
    the log, the patch and the package name, but bytecode (ignored here too) is none."""
    origin.commit({".gitignore": "__pycache__/\n*.local.py\nlocal/\n"}, "2024-03-04T05:06:07+01:00")
    monkeypatch.setenv(DEV_ENV, str(tmp_path / "dev"))
    clean = import_(REPO, "pkg/helper.py", None).__name__
    copy = tmp_path / "dev" / "example.org" / "test" / "origin"
    (copy / "pkg" / "settings.local.py").write_text("VALUE = 'ignored'\n")
    (copy / "local").mkdir()
    (copy / "local" / "data.txt").write_text("read by the module\n")
    with caplog.at_level(logging.WARNING, logger="i6_rc_jobs._imports"):
        module = import_(REPO, "pkg/helper.py", None)
    assert "with changes: !! local/data.txt; !! pkg/settings.local.py\n" in caplog.text, caplog.text
    assert module.__name__ != clean
    patch = Path(caplog.text.split("): ")[-1].strip())
    checkout = tmp_path / "clean"
    _git(tmp_path, "clone", "-q", str(origin.path), str(checkout))
    _git(checkout, "apply", str(patch))
    for name in ("pkg/settings.local.py", "local/data.txt"):
        assert (checkout / name).read_text() == (copy / name).read_text()
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())())"
    pickled = pickle.dumps(module.value)
    worker = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True, env=worker)
    assert (done.returncode, done.stdout) == (0, b"2\n"), done.stderr
    (copy / "pkg" / "settings.local.py").write_text("VALUE = 'changed'\n")
    done = subprocess.run([sys.executable, "-c", code], input=pickled, capture_output=True, env=worker)
    assert done.returncode != 0 and b"has changed since" in done.stderr, done.stderr


def test_development_mode_says_where_the_call_is_and_the_edit_that_pins_it(origin, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(DEV_ENV, str(tmp_path / "dev"))
    with caplog.at_level(logging.WARNING, logger="i6_rc_jobs._imports"):
        line = sys._getframe().f_lineno + 1
        import_(REPO, "pkg/helper.py", None)
    assert f" is imported, not a version, at {__file__}:{line}\n" in caplog.text, caplog.text
    edit = (
        f'  - import_("{REPO}", "pkg/helper.py", None)\n  + import_("{REPO}", "pkg/helper.py", "{origin.version(1)}")'
    )
    assert edit in caplog.text, caplog.text


def test_functions_of_versioned_modules_are_written_and_hashed_by_their_versioned_names(origin):
    """A net dict's function from a versioned module: imported by the written config from that version (in a process
    that knows only the cache), and hashed with it: two versions of one function hash apart."""
    from i6_rc_jobs import ReturnnCommonSerializer

    values = [import_(REPO, "pkg/helper.py", origin.version(i)).value for i in (0, 1)]
    serializers = [ReturnnCommonSerializer(network={"x": {"class": "eval", "eval": value}}) for value in values]
    assert serializers[0]._sis_hash() != serializers[1]._sis_hash()
    code = serializers[1].get()
    assert f"from {values[1].__module__} import value\n" in code and origin.commits[1][:12] in values[1].__module__
    child = _child(
        f"""
        namespace = {{}}
        exec({code!r}, namespace)
        print(namespace["network"]["x"]["eval"]())
        """,
        **{ENV: str(origin.cache)},
    )
    assert child.returncode == 0 and child.stdout == "2\n", child.stderr


def test_a_version_missing_from_a_cache_with_a_clone_of_its_repository_names_the_exact_fetch_command(origin, tmp_path):
    """A process unpickling a function of a version that its cache lacks, while the cache has a clone of the
    repository (an older version fetched there): one line with the repository and version to fetch, as the clone
    spells and dates them."""
    import_(REPO, "pkg", origin.version(0))  # the node's cache: a clone of the origin, and the first version's tree
    node_cache = tmp_path / "node-cache"
    shutil.copytree(origin.cache / "git", node_cache / "git")
    _git(node_cache / "git" / REPO.rsplit("/", 1)[0] / "origin.git", "fetch", "-q", "origin", "+main:main")
    pickled = pickle.dumps(import_(REPO, "pkg", origin.version(1)).helper.value)
    code = "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"
    done = subprocess.run(
        [sys.executable, "-c", code], input=pickled, capture_output=True, env={**os.environ, ENV: str(node_cache)}
    )
    module = f"i6_rc_jobs.versioned.example_org.test.origin.c{origin.commits[1]}"
    assert done.stderr.decode().strip().splitlines()[-1] == (
        f"i6_rc_jobs._imports.errors.VersionedImportError: {REPO} commit {origin.commits[1]} is not in the import cache "
        f"{node_cache} ({module}): fetch it first: python -m i6_rc_jobs fetch {REPO} {origin.version(1)}"
    )


# What the shared cache checks before it serves a version, against what anyone who may write to it could do.

IMPORT = "from i6_rc_jobs import import_; print(import_({repo!r}, 'pkg', {version!r}).VALUE)"


def _tree(origin: Origin, i: int) -> Path:
    return origin.cache / TREES / "example.org" / "test" / "origin" / origin.commits[i]


def _writable(path: Path) -> None:
    """As the owner of a tree could (or any user, where the cache left it group-writable)."""
    for directory in (path, *path.parents):
        if directory.name == TREES:
            break
        directory.chmod(0o755 if directory.is_dir() else 0o644)


def test_a_changed_or_added_file_of_a_fetched_version_is_refused_naming_it(origin):
    import_(REPO, "pkg", origin.version(0))
    helper = _tree(origin, 0) / "pkg" / "helper.py"
    _writable(helper)
    helper.write_text("VALUE = 666\n\n\ndef value():\n    return VALUE\n")
    done = _child(IMPORT.format(repo=REPO, version=origin.version(0)))
    assert done.returncode != 0 and "666" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert f"version {origin.version(0)}: 'pkg/helper.py' in {_tree(origin, 0)} is not the commit's" in last, last
    assert "fetch the version again" in last
    helper.write_text("VALUE = 1\n\n\ndef value():\n    return VALUE\n")
    assert _child(IMPORT.format(repo=REPO, version=origin.version(0))).stdout == "1\n"
    (helper.parent / "__pycache__").mkdir()
    (helper.parent / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"planted")
    done = _child(IMPORT.format(repo=REPO, version=origin.version(0)))
    assert "'pkg/__pycache__/helper.cpython-311.pyc' in" in done.stderr and "is not in the commit" in done.stderr


def _rewrite_keeping_size_and_mtime(tree: Path) -> None:
    """As the file's owner can: its mode, size and mtime as they were; its ctime is the kernel's."""
    helper = tree / "pkg" / "helper.py"
    before = helper.stat()
    helper.chmod(0o644)
    helper.write_text(helper.read_text().replace("VALUE = 1", "VALUE = 6"))
    os.utime(helper, ns=(before.st_atime_ns, before.st_mtime_ns))
    helper.chmod(0o444)


def _plant_bytecode(tree: Path) -> None:
    _writable(tree / "pkg")
    (tree / "pkg" / "__pycache__").mkdir()
    (tree / "pkg" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"planted")


def _replace_by_a_copy(tree: Path) -> None:
    helper = tree / "pkg" / "helper.py"
    _writable(helper)
    shutil.copy2(helper, tree / "pkg" / "copy")
    os.replace(tree / "pkg" / "copy", helper)


@pytest.mark.parametrize(
    "attack, refused",
    [
        (_rewrite_keeping_size_and_mtime, "'pkg/helper.py' in {tree} is not the commit's"),
        (_plant_bytecode, "'pkg/__pycache__/helper.cpython-311.pyc' in {tree} is not in the commit"),
        (_replace_by_a_copy, None),  # the same content: proven again in full, and served
    ],
)
def test_a_kept_proof_spares_reading_the_files_and_a_change_since_is_checked_in_full(
    origin, tmp_path, monkeypatch, attack, refused
):
    from i6_rc_jobs._imports import proof, proven

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(proven, "RACY_NS", 20_000_000)  # the kernel's clock ticks in milliseconds
    import_(REPO, "pkg", origin.version(0))
    tree = _tree(origin, 0)
    time.sleep(0.05)
    monkeypatch.setattr(proof, "_verified", {})
    proof.verify(tree, "v0")  # in full, and kept: the files are older than the margin
    full_check = proof._on_disk

    def no_reading(*args):
        raise AssertionError("the files were read")

    monkeypatch.setattr(proof, "_verified", {})
    monkeypatch.setattr(proof, "_on_disk", no_reading)
    assert proof.verify(tree, "v0")[0] == origin.commits[0]  # the kept proof, no file read

    attack(tree)
    monkeypatch.setattr(proof, "_verified", {})
    with pytest.raises(AssertionError, match="the files were read"):
        proof.verify(tree, "v0")  # the stat no longer proves it: checked in full
    monkeypatch.setattr(proof, "_on_disk", full_check)
    monkeypatch.setattr(proof, "_verified", {})
    if refused is None:
        assert proof.verify(tree, "v0")[0] == origin.commits[0]
    else:
        with pytest.raises(VersionedImportError, match=re.escape(refused.format(tree=tree))):
            proof.verify(tree, "v0")


def test_a_kept_proof_that_others_could_write_is_not_used(origin, tmp_path, monkeypatch):
    from i6_rc_jobs._imports import proof, proven

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(proven, "RACY_NS", 20_000_000)
    import_(REPO, "pkg", origin.version(0))
    tree = _tree(origin, 0)
    time.sleep(0.05)
    monkeypatch.setattr(proof, "_verified", {})
    proof.verify(tree, "v0")
    kept = list((tmp_path / "home-cache" / "i6_rc_jobs" / "proofs").iterdir())
    assert len(kept) == 1 and proven.holds(tree, (tree / proof.LISTING).read_bytes())
    kept[0].chmod(0o622)
    assert not proven.holds(tree, (tree / proof.LISTING).read_bytes())
    kept[0].chmod(0o600)
    (tmp_path / "home-cache" / "i6_rc_jobs" / "proofs").chmod(0o770)  # a directory the group may write
    assert not proven.holds(tree, (tree / proof.LISTING).read_bytes())


def test_a_forged_tree_of_a_version_nobody_fetched_is_refused(origin):
    import_(REPO, "pkg", origin.version(0))
    forged = _tree(origin, 1)
    subprocess.run(["cp", "-a", str(_tree(origin, 0)), str(forged)], check=True)
    _writable(forged / ".i6_rc_version")
    (forged / ".i6_rc_version").write_text(f"{origin.commits[1]} 20240203040506\n")
    done = _child(IMPORT.format(repo=REPO, version=origin.version(1)))
    assert done.returncode != 0 and f".i6_rc_commit in {forged} is not the commit {origin.commits[1]}" in done.stderr


def test_a_version_is_read_only_down_to_its_directories(origin):
    import_(REPO, "pkg", origin.version(0))
    tree = _tree(origin, 0)
    modes = {path.relative_to(tree).as_posix(): path.lstat().st_mode & 0o7777 for path in [tree, *tree.rglob("*")]}
    assert modes["."] == modes["pkg"] == 0o555 and modes["pkg/helper.py"] == 0o444, modes
    assert {mode for mode in modes.values()} == {0o444, 0o555}


def test_bytecode_planted_in_the_development_copy_with_the_sources_mtime_and_size_does_not_run(origin, tmp_path):
    dev = tmp_path / "dev"
    done = _child(f"from i6_rc_jobs import import_; import_({REPO!r}, 'pkg', None)", **{DEV_ENV: str(dev)})
    assert done.returncode == 0, done.stderr
    helper = dev / "example.org" / "test" / "origin" / "pkg" / "helper.py"
    source, stat_before = helper.read_text(), helper.stat()
    planted = source.replace("VALUE = 2", "VALUE = 9")
    assert len(planted) == len(source)
    helper.write_text(planted)
    py_compile.compile(str(helper), doraise=True)  # __pycache__/helper.cpython-311.pyc
    helper.write_text(source)
    os.utime(helper, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    code = f"from i6_rc_jobs import import_; print(import_({REPO!r}, 'pkg', None).VALUE)"
    done = _child(code, **{DEV_ENV: str(dev)})
    assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr
    assert "without changes" in done.stderr  # the planted bytecode is no change: it never runs


def test_a_clone_in_the_cache_whose_config_would_run_a_command_is_refused_and_its_hooks_never_run(origin, tmp_path):
    import_(REPO, "pkg", origin.version(0))
    git_dir = origin.cache / "git" / "example.org" / "test" / "origin.git"
    marker = tmp_path / "ran"
    (git_dir / "info" / "attributes").write_text("* filter=x\n")
    _git(git_dir, "config", "filter.x.smudge", f"touch {marker}; cat")
    done = _child(IMPORT.format(repo=REPO, version=origin.version(1)))
    assert done.returncode != 0 and f"{git_dir}/config sets filter.x.smudge" in done.stderr, done.stderr
    _git(git_dir, "config", "--unset", "filter.x.smudge")
    hook = git_dir / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    origin.commit({"pkg/helper.py": "VALUE = 3\n"}, "2024-03-04T05:06:07+01:00")
    done = _child(IMPORT.format(repo=REPO, version=origin.version(2)))
    assert (done.returncode, done.stdout) == (0, "3\n"), done.stderr
    assert not marker.exists()


HOLD = """
import fcntl, os, sys, time
f = open(sys.argv[1], "a" if len(sys.argv) > 2 else "r")
fcntl.flock(f, fcntl.LOCK_EX)
if len(sys.argv) > 2:  # says who it is, forks a child that keeps the lock, and ends
    f.write(f"{os.getpid()} someone {os.uname().nodename} {time.time()}\\n")
    f.flush()
    child = os.fork()
    if child == 0:
        os.close(1)
        os.close(2)
        time.sleep(60)
        os._exit(0)
    print(child, flush=True)
    os._exit(0)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_lock_held_by_another_user_is_waited_for_a_bounded_time_naming_the_holder(origin, shared_dir, monkeypatch):
    cache = shared_dir / "cache"
    monkeypatch.setenv("I6_RC_IMPORTS_CACHE", str(cache))
    import_(REPO, "pkg", origin.version(0))
    lock = cache / "locks" / "example.org" / "test" / "origin.lock"
    lock.chmod(0o644)  # others may read it: and so lock it
    holder = subprocess.Popen(
        ["runuser", "-u", "nobody", "--", _python_of_nobody(), "-c", textwrap.dedent(HOLD), str(lock)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so that its Python, runuser's child, ends with it
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        monkeypatch.setenv(LOCK_TIMEOUT_ENV, "1")
        start = time.monotonic()
        held_by = rf"waited 1 s for the lock {lock}, held by pid \d+ on {socket.gethostname()} since .* \(user nobody\)"
        with pytest.raises(VersionedImportError, match=held_by):
            import_(REPO, "pkg", origin.version(1))
        assert time.monotonic() - start < 10
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()


def test_a_lock_whose_holder_has_ended_is_taken_over(origin):
    import_(REPO, "pkg", origin.version(0))
    lock = origin.cache / "locks" / "example.org" / "test" / "origin.lock"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(HOLD), str(lock), "fork"], capture_output=True)
    child = int(done.stdout)
    try:
        start = time.monotonic()
        assert import_(REPO, "pkg", origin.version(1)).VALUE == 2
        assert time.monotonic() - start < 10
    finally:
        os.kill(child, 9)

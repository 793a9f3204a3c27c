"""Content hashes of model code with real torch, each manager start a process of its own (as ``sis manager``): a
code edit moves the hash, a cosmetic edit keeps it, an edit of a helper module the model imports moves it, a pinned
library is identified by its commit, and by its files where they are not its commit's; ``watch_code`` says which job's code changed and
hash-diff names it; the manager never imports torch."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from i6_rc_jobs._builds.store import Store
from i6_rc_jobs._cli.explain import explain
from tests.support.sisyphus_setup import REPO

pytestmark = pytest.mark.slow  # each manager start starts a build server that imports torch

MODEL = textwrap.dedent('''
    """A torch model of the setup."""
    import torch

    from act_helper import activation


    class Model(torch.nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim)

        def forward(self, x):
            return activation(self.linear(x))


    def train_step(*, model, extern_data, **_kwargs):
        return model(extern_data["data"].raw_tensor)
    ''')
HELPER = "import torch\n\n\ndef activation(x):\n    return torch.relu(x)\n"
#: A manager start: prints the hashes of the markers named on the command line, and whether it imported torch.
MANAGER = textwrap.dedent("""
    import json
    import pickle
    import sys

    from sisyphus.hash import sis_hash_helper

    from i6_rc_jobs import by_content

    pairs = zip(sys.argv[1::2], sys.argv[2::2])
    markers = {name + kwargs: by_content(name, **json.loads(kwargs)) for name, kwargs in pairs}
    hashes = {name: sis_hash_helper(marker).hex() for name, marker in markers.items()}
    digests = {name: marker.fingerprint().to_json() for name, marker in markers.items()}
    print(json.dumps({"hashes": hashes, "fingerprints": digests, "torch": "torch" in sys.modules}))
    with open("markers.pickle", "wb") as f:
        pickle.dump(markers, f)
    """)
SETTLE_S = 0.05


@pytest.fixture
def setup_dir(tmp_path):
    (tmp_path / "my_model.py").write_text(MODEL)
    (tmp_path / "act_helper.py").write_text(HELPER)
    (tmp_path / "manager.py").write_text(MANAGER)
    return tmp_path


def _env(directory: Path, **more: str) -> dict[str, str]:
    return {
        **os.environ,
        **more,
        "PYTHONPATH": os.pathsep.join([str(directory), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }


def start(directory: Path, *markers: tuple[str, dict], **env: str) -> dict:
    """One manager start in ``directory``: the hashes and fingerprints of the markers, by name (the first marker of
    each name)."""
    time.sleep(SETTLE_S)
    argv = [arg for name, kwargs in markers for arg in (name, json.dumps(kwargs))]
    done = subprocess.run(
        [sys.executable, "manager.py", *argv], cwd=directory, env=_env(directory, **env), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["torch"] is False  # the manager never imports torch, the build server does
    for part in ("hashes", "fingerprints"):
        by_name: dict[str, object] = {}
        for key, value in result[part].items():
            by_name.setdefault(key.partition("{")[0], value)
        result[part] = {**by_name, **result[part]}
    return result


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_code_edits_move_the_hash_and_cosmetic_ones_keep_it(setup_dir):
    model = ("my_model:Model", {"dim": 8})
    step = ("my_model:train_step", {})
    first = start(setup_dir, model, step, ("my_model:Model", {"dim": 16}))
    assert first["hashes"]['my_model:Model{"dim": 8}'] != first["hashes"]['my_model:Model{"dim": 16}']
    fp = first["fingerprints"]["my_model:Model"]
    assert sorted(fp["modules"]) == ["act_helper", "my_model"]  # what importing and constructing loaded
    assert fp["constructed"] and not first["fingerprints"]["my_model:train_step"]["constructed"]
    assert set(fp["libraries"]) == {"torch", "numpy"}
    assert first["hashes"]["my_model:Model"] != first["hashes"]["my_model:train_step"]

    _edit(setup_dir / "my_model.py", '"""A torch model of the setup."""', '"""The model."""\n# a comment')
    _edit(setup_dir / "my_model.py", "def forward(self, x):", "def forward(self, x: torch.Tensor) -> torch.Tensor:")
    _edit(
        setup_dir / "my_model.py",
        "self.linear = torch.nn.Linear(dim, dim)",
        "self.linear = torch.nn.Linear(\n dim, dim\n )",
    )
    again = start(setup_dir, model, step)
    assert [again["hashes"][k] == first["hashes"][k] for k in ("my_model:Model", "my_model:train_step")] == [True] * 2

    before = pickle.loads((setup_dir / "markers.pickle").read_bytes())
    _edit(setup_dir / "my_model.py", "return activation(self.linear(x))", "return activation(self.linear(x)) * 2")
    edited = start(setup_dir, model, step)
    after = pickle.loads((setup_dir / "markers.pickle").read_bytes())  # pickled with the code they hashed by
    key = 'my_model:Model{"dim": 8}'
    said = list(explain({"get_model": before[key]}, {"get_model": after[key]}))
    assert said[0] == f"['get_model'].code: module my_model ({setup_dir / 'my_model.py'}): Model.forward changed"
    assert said[1:3] == ["    --- my_model", "    +++ my_model"]  # the diff of the snapshots of the code each hashed
    assert [line for line in said[3:] if line.startswith(("    -", "    +"))] == [
        "    -        return activation(self.linear(x))",
        "    +        return activation(self.linear(x)) * 2",
    ]
    assert edited["hashes"]["my_model:Model"] != first["hashes"]["my_model:Model"]
    assert edited["hashes"]["my_model:train_step"] == first["hashes"]["my_model:train_step"]  # it never reaches Model


STEPS = textwrap.dedent("""
    import torch


    def helper(x):
        return x * 2.0


    def search_helper(x):
        return x.argmax(-1)


    class Model(torch.nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim)

        def forward(self, x):
            return helper(self.linear(x))


    def search_step(*, model, extern_data, **_kwargs):
        return search_helper(model(extern_data["data"].raw_tensor))
    """)


def test_only_what_the_model_reaches_counts(setup_dir):
    """An edit of ``search_step`` keeps the hash of a model in the same file that never reaches it; an edit of a
    helper the model calls moves it."""
    (setup_dir / "steps.py").write_text(STEPS)
    model = ("steps:Model", {"dim": 8})
    first = start(setup_dir, model)
    assert first["fingerprints"]["steps:Model"]["modules"]["steps"]["counted"] == ["Model", "helper"]
    _edit(setup_dir / "steps.py", "x.argmax(-1)", "x.argmax(1)")
    _edit(setup_dir / "steps.py", "return search_helper(", "return 2 * search_helper(")
    unreached = start(setup_dir, model)
    assert unreached["hashes"] == first["hashes"]
    assert unreached["fingerprints"]["steps:Model"]["digest"] == first["fingerprints"]["steps:Model"]["digest"]
    _edit(setup_dir / "steps.py", "x * 2.0", "x * 3.0")
    reached = start(setup_dir, model)
    assert reached["hashes"] != first["hashes"]
    from i6_rc_jobs._code_hash.fingerprint import CodeFingerprint

    old, new = (CodeFingerprint.from_json(r["fingerprints"]["steps:Model"]) for r in (first, reached))
    assert list(old.changes(new)) == [f"module steps ({setup_dir / 'steps.py'}): helper changed"]


def test_an_imported_helper_module_moves_the_hash(setup_dir):
    model = ("my_model:Model", {"dim": 8})
    before = start(setup_dir, model)
    _edit(setup_dir / "act_helper.py", "torch.relu(x)", "torch.tanh(x)")
    after = start(setup_dir, model)
    assert after["hashes"] != before["hashes"]
    from i6_rc_jobs._code_hash.fingerprint import CodeFingerprint

    old, new = (CodeFingerprint.from_json(r["fingerprints"]["my_model:Model"]) for r in (before, after))
    assert list(old.changes(new)) == [f"module act_helper ({setup_dir / 'act_helper.py'}): activation changed"]


def _git(directory: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True, env=env)


def test_a_pinned_library_counts_by_its_commit_and_by_its_files_where_they_are_not_the_commits(
    setup_dir, tmp_path_factory
):
    checkout = tmp_path_factory.mktemp("checkout")
    (checkout / "mylib").mkdir()
    (checkout / "mylib" / "__init__.py").write_text("def scale():\n    return 2.0\n")
    _git(checkout, "init", "-q")
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-qm", "first")
    (setup_dir / "mylib").symlink_to(checkout / "mylib")  # as recipe/ links a checkout
    (setup_dir / "act_helper.py").write_text(HELPER.replace("import torch", "import mylib\nimport torch"))
    _edit(setup_dir / "act_helper.py", "torch.relu(x)", "torch.relu(x) * mylib.scale()")
    libraries = ["mylib", "torch", "numpy"]
    model = ("my_model:Model", {"dim": 8, "libraries": libraries})
    first = start(setup_dir, model)
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert first["fingerprints"]["my_model:Model"]["libraries"]["mylib"] == f"git {head.strip()}"
    assert "mylib" not in first["fingerprints"]["my_model:Model"]["modules"]

    (checkout / "mylib" / "__init__.py").write_text("def scale():\n    return 3.0\n")  # not committed
    edited = start(setup_dir, model)
    assert edited["hashes"] != first["hashes"]
    assert edited["fingerprints"]["my_model:Model"]["libraries"]["mylib"].startswith("files ")  # not the commit's
    _git(checkout, "commit", "-qam", "second")
    second = start(setup_dir, model)
    assert second["hashes"] not in (first["hashes"], edited["hashes"])
    assert second["fingerprints"]["my_model:Model"]["libraries"]["mylib"].startswith("git ")


def test_returnn_is_identified_by_its_pinned_commit(setup_dir):
    (setup_dir / "rf_model.py").write_text(textwrap.dedent("""
            import returnn.frontend as rf
            from returnn.tensor import Dim


            def get_model(*, epoch: int, step: int, **_kwargs):
                dim = Dim(8, name="feature")
                return rf.Linear(dim, dim)
            """))
    result = start(setup_dir, ("rf_model:get_model", {"epoch": 1, "step": 0}))
    pinned = next(
        line.split()[2] for line in (REPO / "rwth-i6.lock").read_text().splitlines() if line.startswith("returnn ")
    )
    fp = result["fingerprints"]["rf_model:get_model"]
    assert fp["libraries"]["returnn"] == f"git {pinned}"
    assert fp["constructed"] and list(fp["modules"]) == ["rf_model"]


TRAIN_JOB = textwrap.dedent("""
    from sisyphus.job import Job


    class Train(Job):
        def __init__(self, dim):
            self.dim = dim
            self.out = self.output_path("out")

        def tasks(self):
            return []
    """)
#: A manager start whose config watches the code of two jobs; with "setup", the first job is set up (made).
WATCHING = textwrap.dedent("""
    import logging
    import sys

    from train_job import Train

    from i6_rc_jobs import by_content, watch_code

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    jobs = [Train(dim) for dim in (8, 16)]
    for job in jobs:
        watch_code(job, by_content("my_model:Model", dim=job.dim), "my_model:train_step")
    if sys.argv[1:] == ["setup"]:
        jobs[0]._sis_setup_directory()
    print("JOBS", *[job._sis_path() for job in jobs])
    """)


def test_watch_code_says_which_jobs_code_changed_since_they_were_made(setup_dir):
    (setup_dir / "watching.py").write_text(WATCHING)
    (setup_dir / "train_job.py").write_text(TRAIN_JOB)
    (setup_dir / "settings.py").write_text("")

    def manager(*args: str) -> tuple[list[str], list[str]]:
        time.sleep(SETTLE_S)
        done = subprocess.run(
            [sys.executable, "watching.py", *args],
            cwd=setup_dir,
            env=_env(setup_dir),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        jobs = next(line.split()[1:] for line in done.stdout.splitlines() if line.startswith("JOBS"))
        return jobs, [line for line in done.stderr.splitlines() if "changed since it was made" in line]

    jobs, warnings = manager("setup")  # the first job is set up: its code is recorded when this manager ends
    assert warnings == []
    record = Path(setup_dir, jobs[0], "code-fingerprint.json")
    assert json.loads(record.read_text()).keys() == {
        "by_content(my_model.Model, dim=8)",
        "by_content(my_model.train_step)",
    }
    assert not Path(setup_dir, jobs[1]).exists()
    assert manager()[1] == []  # nothing changed

    _edit(setup_dir / "my_model.py", "class Model", "# a comment\nclass Model")
    assert manager()[1] == []
    _edit(setup_dir / "act_helper.py", "torch.relu(x)", "torch.tanh(x)")
    _, warnings = manager()
    assert len(warnings) == 1  # one line, for the job made with the old code only
    assert warnings[0].startswith(f"model code of {os.path.relpath(jobs[0], 'work')} changed since it was made: ")
    assert "by_content(my_model.Model, dim=8): module act_helper" in warnings[0] and "activation changed" in warnings[0]

    # hash-diff names the change between two jobs made with different code
    manager("setup")  # records nothing anew for the first job: its record stays the one of when it was made
    other = Path(setup_dir, jobs[0] + "-copy")
    os.rename(Path(setup_dir, jobs[0]), other)
    manager("setup")  # the first job made again, with today's code
    done = subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "hash-diff", str(other), jobs[0]],
        cwd=setup_dir,
        env=_env(setup_dir),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert "code of by_content(my_model.Model, dim=8): module act_helper" in done.stdout
    assert "activation changed" in done.stdout
    assert "    -    return torch.relu(x)\n    +    return torch.tanh(x)" in done.stdout  # read from the snapshots


def test_the_servers_kept_fingerprints_are_no_dependency_of_its_builds(setup_dir, tmp_path_factory):
    """The kept fingerprints hold other servers' files too (other setups, other preloads); the server's look at them
    when it saves them is its bookkeeping: an entry lists only what its build read."""
    from i6_rc_jobs._builds.fingerprint import kept_path

    home = tmp_path_factory.mktemp("home")
    kept = home / kept_path().relative_to(Path.home())
    kept.parent.mkdir(parents=True)
    planted = home / "another-setups-file.py"
    planted.write_text("")
    data = json.loads(kept_path().read_text()) if kept_path().exists() else {"format": 1, "files": {}}
    data["files"][str(planted)] = ["0" * 64, 0, 0, 0, 0, 0, 0]  # a fingerprint another server kept
    kept.write_text(json.dumps(data))
    kept.chmod(0o600)
    start(setup_dir, ("my_model:Model", {"dim": 8}), HOME=str(home))
    [entry] = (setup_dir / "cache" / "entries").glob("*/*/entry.json")
    deps = Store(setup_dir / "cache").deps(json.loads(entry.read_text())["deps"])
    assert deps is not None
    files = deps["files"]
    assert str(planted) not in files
    assert {path for path in files if path.startswith(str(setup_dir))} == {
        str(setup_dir / name) for name in ("act_helper.py", "my_model.py")
    }
    assert len(files) < 10  # and what torch loads when a model is constructed on the meta device

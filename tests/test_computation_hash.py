"""``by_content(..., computation=Inputs.of(...))`` in manager processes with real torch: a refactor of the model's
forward that computes the same keeps the Sisyphus hash where the code hash moves, an edit that computes otherwise
moves it, and hash-diff names the op; a method the capture never runs counts by its code (an edit of it moves the
hash), and so does construction then; a capture that is refused leaves the code hash, said in one line."""

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

from tests.support.sisyphus_setup import REPO

pytestmark = pytest.mark.slow  # each manager start starts a build server that imports torch

MODEL = textwrap.dedent('''
    """A torch model of the setup."""
    import torch


    class Model(torch.nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim)
            self.out = torch.nn.Linear(dim, dim)

        def forward(self, x):
            hidden = torch.relu(self.linear(x))
            return self.out(hidden) + x
    ''')
#: A manager start: the hashes of ``by_content("my_model:Model", dim=8, computation=...)`` and of the same marker
#: hashed by its code, and the log; the markers are pickled for hash-diff.
MANAGER = textwrap.dedent("""
    import json
    import logging
    import pickle
    import sys

    from sisyphus.hash import sis_hash_helper

    from i6_rc_jobs import Inputs, by_content

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr, force=True)
    inputs = Inputs.of(("B", "T", 8), T=(2, 50))
    computed = by_content("my_model:Model", dim=8, computation=inputs)
    by_code = by_content("my_model:Model", dim=8)
    hashes = {"computation": sis_hash_helper(computed).hex(), "code": sis_hash_helper(by_code).hex()}
    with open(sys.argv[1], "wb") as f:
        pickle.dump(computed, f)
    print(json.dumps({"hashes": hashes, "torch": "torch" in sys.modules}))
    """)


@pytest.fixture
def setup_dir(tmp_path):
    (tmp_path / "my_model.py").write_text(MODEL)
    (tmp_path / "manager.py").write_text(MANAGER)
    return tmp_path


def start(directory: Path, name: str) -> tuple[dict, str]:
    """One manager start: the hashes, and what it logged."""
    time.sleep(0.05)  # (the build cache tells edits by modification time and size)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(directory), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    done = subprocess.run(
        [sys.executable, "manager.py", str(directory / f"{name}.pickle")],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["torch"] is False  # the build captures the model, not the manager
    return result["hashes"], done.stderr


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _changes(directory: Path, before: str, after: str) -> list[str]:
    """What ``ByContent.changes`` says between two pickled markers, in a process with their build cache."""
    code = (
        "import pickle, sys\n"
        "a, b = (pickle.load(open(p, 'rb')) for p in sys.argv[1:])\n"
        "print('\\n'.join(a.changes(b)))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(directory), str(REPO)]), "CUDA_VISIBLE_DEVICES": ""}
    env["I6_RC_BUILD_CACHE"] = str(directory / "cache")
    done = subprocess.run(
        [sys.executable, "-c", code, str(directory / f"{before}.pickle"), str(directory / f"{after}.pickle")],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_a_refactor_keeps_the_hash_an_edit_of_what_is_computed_moves_it(setup_dir):
    model = setup_dir / "my_model.py"
    first, log = start(setup_dir, "first")
    assert "by_content(my_model.Model, dim=8): hashed by what it computes" in log
    again, _ = start(setup_dir, "again")
    assert again == first  # alike in another process
    _edit(
        model,
        "        hidden = torch.relu(self.linear(x))\n        return self.out(hidden) + x",
        "        return x + self.out(self._hidden(x))\n\n    def _hidden(self, x):\n"
        "        return torch.nn.functional.relu(self.linear(x))",
    )
    refactored, _ = start(setup_dir, "refactored")
    assert refactored["code"] != first["code"]  # the code hash cannot tell a refactor from a change
    assert refactored["computation"] == first["computation"]
    _edit(model, "torch.nn.functional.relu(self.linear(x))", "torch.nn.functional.gelu(self.linear(x))")
    changed, _ = start(setup_dir, "changed")
    assert changed["computation"] != first["computation"]
    said = _changes(setup_dir, "refactored", "changed")
    assert any(line.startswith("computation: graph eval:") for line in said), said
    assert any("aten.gelu.default" in line for line in said), said


def test_a_method_the_capture_never_runs_counts_by_its_code_and_construction_with_it(setup_dir):
    model = setup_dir / "my_model.py"
    model.write_text(
        MODEL
        + textwrap.indent(
            textwrap.dedent("""
            def recognize(self, x, beam_size=4):
                return _best(self.forward(x), beam_size)
            """),
            "    ",
        )
        + "\n\ndef _best(scores, beam_size):\n    return scores.topk(beam_size)\n"
    )
    first, log = start(setup_dir, "first")
    said = "hashed by what it computes, and by the code of my_model:Model.recognize (not run by the capture), "
    said += "my_model:_best (may be called by my_model:Model.recognize), "
    assert said + "my_model:Model.__init__ (construction, read by code that counts)" in log
    _edit(model, "beam_size=4", "beam_size=8")
    recognize_edited, _ = start(setup_dir, "recognize_edited")
    assert recognize_edited["computation"] != first["computation"]
    said = _changes(setup_dir, "first", "recognize_edited")
    assert "code: module my_model" not in "\n".join(said)  # (ByContent.changes prefixes nothing; explain does)
    assert any("Model.recognize changed" in line for line in said), said
    _edit(model, "return scores.topk(beam_size)", "return scores.topk(beam_size, dim=1)")
    helper_edited, _ = start(setup_dir, "helper_edited")
    assert helper_edited["computation"] != recognize_edited["computation"]  # what recognize may call counts
    _edit(model, "self.out = torch.nn.Linear(dim, dim)", "self.out = torch.nn.Linear(dim, dim)\n        self.k = 1")
    init_edited, _ = start(setup_dir, "init_edited")
    assert init_edited["computation"] != helper_edited["computation"]  # construction counts by its code too


def test_a_step_function_beside_the_model_does_not_count_for_it(setup_dir):
    model = setup_dir / "my_model.py"
    model.write_text(MODEL + "\n\ndef search_step(*, model, data):\n    return model(data).argmax(-1)\n")
    first, log = start(setup_dir, "first")
    assert "hashed by what it computes\n" in log  # nothing by code: no method of the model, nothing it calls
    _edit(model, "argmax(-1)", "argmax(1)")
    edited, _ = start(setup_dir, "edited")
    assert edited["computation"] == first["computation"]  # it runs in its own marker's jobs, by its own hash


def test_a_refused_capture_leaves_the_code_hash_and_says_why(setup_dir):
    _edit(setup_dir / "my_model.py", "return self.out(hidden) + x", "return self.out(hidden) + x if x.sum() > 0 else x")
    hashes, log = start(setup_dir, "first")
    assert hashes["computation"] == hashes["code"]  # the hash of the marker without computation=: the code's
    assert "hashed by its code, not by what it computes: eval: torch.export fails: Unsupported: Data-dependent" in log
    with open(setup_dir / "first.pickle", "rb") as f:
        marker = pickle.load(f)
    assert marker.computation is not None

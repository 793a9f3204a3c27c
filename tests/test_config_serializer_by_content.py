"""``by_content(...)`` markers in a ReturnnConfigSerializer, with real builds and torch: written as the plain
reference after the lines that pin its code (tests/test_pinned_code.py), without importing it (nor torch) in the manager, hashed by the code it runs, and the written config trains a
step in RETURNN's torch engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.sisyphus_setup import REPO, make_setup, run_manager
from tests.test_code_hash import HELPER, MODEL

pytestmark = pytest.mark.slow  # each manager start starts a build server that imports torch

#: A manager start: the serializer's written code and hash, alike after a pickle round trip and a deep copy, and
#: whether the manager imported torch or the model.
MANAGER = textwrap.dedent("""
    import copy
    import json
    import pickle
    import sys

    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    serializer = ReturnnConfigSerializer(
        {
            "backend": "torch",
            "get_model": by_content("my_model:Model", dim=4),
            "train_step": by_content("my_model:train_step"),
        }
    )
    code, digest = serializer.get(), serializer._sis_hash().decode()
    for other in (pickle.loads(pickle.dumps(serializer)), copy.deepcopy(serializer)):
        assert (other.get(), other._sis_hash().decode()) == (code, digest)
    imported = sorted(name for name in ("torch", "my_model", "act_helper") if name in sys.modules)
    print(json.dumps({"code": code, "hash": digest, "imported": imported}))
    """)
WRITTEN = """\
from functools import partial
from my_model import Model, train_step as train_step_

backend = "torch"

get_model = partial(Model, dim=4)

train_step = train_step_
"""


@pytest.fixture
def setup_dir(tmp_path: Path) -> Path:
    (tmp_path / "my_model.py").write_text(MODEL)
    (tmp_path / "act_helper.py").write_text(HELPER)
    (tmp_path / "manager.py").write_text(MANAGER)
    return tmp_path


def start(directory: Path) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(directory), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    done = subprocess.run([sys.executable, "manager.py"], cwd=directory, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_written_as_the_plain_reference_without_importing_it_or_torch(setup_dir):
    result = start(setup_dir)
    pins, _, code = result["code"].partition("del _pin_model_code\n\n")
    assert code == WRITTEN
    snapshots = setup_dir / "cache" / "snapshots"
    for name in ("my_model", "act_helper"):  # what the build loaded, from the snapshots of what it hashed
        (file,) = snapshots.glob(f"*/*/{name}.py")
        assert f"'{name}': ('{file}', '{file.parent.name}', False, '{setup_dir / (name + '.py')}')" in pins
    assert result["imported"] == []


def test_a_code_edit_moves_the_hash_and_a_comment_keeps_it(setup_dir):
    first = start(setup_dir)["hash"]
    model = setup_dir / "my_model.py"
    model.write_text(model.read_text().replace("import torch\n", "import torch  # the framework\n"))
    assert start(setup_dir)["hash"] == first
    model.write_text(model.read_text().replace("activation(self.linear(x))", "activation(self.linear(x)) * 2"))
    assert start(setup_dir)["hash"] != first


def test_the_check_trains_a_step_from_the_written_config(tmp_path, monkeypatch):
    monkeypatch.setenv("I6_RC_BUILD_CACHE", str(tmp_path / "cache"))
    setup = make_setup(
        tmp_path / "setup",
        """
        from returnn.tensor import Dim, batch_dim
        from sisyphus import tk
        from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, by_content
        from i6_rc_jobs.serializers import ReturnnConfigSerializer

        def main():
            time_dim, in_dim, classes_dim = Dim(None, name="time"), Dim(9, name="input"), Dim(2, name="classes")
            values = {
                "extern_data": {
                    "data": {"dims": [batch_dim, time_dim, in_dim], "dtype": "float32"},
                    "classes": {"dims": [batch_dim, time_dim], "sparse_dim": classes_dim, "dtype": "int32"},
                },
                "get_model": by_content(
                    "task12ax_rf_model:Model", in_dim, classes_dim, model_dim=Dim(32, name="model")
                ),
                "train_step": by_content("task12ax_rf_model:train_step"),
            }
            config = CheckedReturnnConfig(
                {"backend": "torch", "behavior_version": 21, "train": {"class": "Task12AXDataset", "num_seqs": 10},
                 "batch_size": 1000, "optimizer": {"class": "adam"}, "learning_rate": 0.01},
                python_prolog=[ReturnnConfigSerializer(values, sys_path=["RECIPE"])],
            )
            job = CreateConfigJob(config, check=True)
            job.add_alias("check")
            tk.register_output("check", job.out_config)
        """.replace("RECIPE", str(REPO / "recipe_examples" / "recipe")),
    )
    run_manager(setup, python_path=str(REPO / "recipe_examples" / "recipe"))  # where the build finds the model
    written = (setup / "alias" / "check" / "output" / "returnn.config").read_text()
    assert "get_model = partial(Model, input_dim, classes_dim, model_dim=model_dim)" in written
    report = json.loads((setup / "alias" / "check" / "output" / "check_report.json").read_text())
    assert report["num_parameters"] == 17730 and set(report["losses"]) == {"train_loss_ce", "train_loss_fer"}

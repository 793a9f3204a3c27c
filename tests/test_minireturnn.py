"""MiniReturnn (the RETURNN fork of i6's PyTorch setups, pinned in rwth-i6.lock) as the config's RETURNN: a config of no
dims is made, hashed and written where ``returnn`` is MiniReturnn, which has no ``returnn.tensor``; model code that
imports MiniReturnn's own modules (``returnn.torch.context``) is hashed with the setup's RETURNN (``returnn_root``),
identified by its commit, pinned, and runs a train step in MiniReturnn's run context."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.pins import pins
from tests.support.sisyphus_setup import REPO

MINI_RETURNN = REPO / ".deps" / "src" / "MiniReturnn"

#: A manager start where ``returnn`` is MiniReturnn: a config of the old style (extern_data of shapes, no dims).
NO_DIMS = textwrap.dedent("""
    import json
    import sys

    import returnn
    from i6_rc_jobs import ReturnnConfigSerializer

    serializer = ReturnnConfigSerializer(
        {
            "backend": "torch",
            "extern_data": {"data": {"dim": 3, "shape": (None, 3)}, "classes": {"dim": 2, "sparse": True}},
            "learning_rates": [0.1, 0.2],
        }
    )
    with open("config.py", "w") as f:
        f.write(serializer.get())
    print(json.dumps({"returnn": returnn.__file__, "hash": serializer._sis_hash().decode(), "tensor": "returnn.tensor" in sys.modules}))
    """)
#: A job of MiniReturnn's: loads the config.
LOAD = textwrap.dedent("""
    import json
    import sys

    from returnn.config import Config

    config = Config()
    config.load_file(sys.argv[1])
    print(json.dumps(config.typed_value("extern_data")))
    """)


def _run(directory: Path, script: str, *argv: str, first: list[Path]) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, first), str(directory), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    done = subprocess.run([sys.executable, script, *argv], cwd=directory, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_config_of_no_dims_is_made_and_loaded_where_returnn_is_minireturnn(tmp_path):
    (tmp_path / "manager.py").write_text(NO_DIMS)
    (tmp_path / "job.py").write_text(LOAD)
    made = _run(tmp_path, "manager.py", first=[MINI_RETURNN])
    assert made["returnn"] == str(MINI_RETURNN / "returnn" / "__init__.py") and not made["tensor"]
    assert "returnn.tensor" not in (tmp_path / "config.py").read_text()
    loaded = _run(tmp_path, "job.py", "config.py", first=[MINI_RETURNN])
    assert loaded == {"classes": {"dim": 2, "sparse": True}, "data": {"dim": 3, "shape": [None, 3]}}


#: Model code as i6's PyTorch setups write it for MiniReturnn: the loss marked through MiniReturnn's run context.
MODEL = textwrap.dedent("""
    import torch
    from returnn.torch.context import get_run_ctx


    class Model(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim)


    def train_step(*, model, data, **_kwargs):
        get_run_ctx().mark_as_loss(name="sum", loss=model.linear(data["data"]).sum())
    """)
#: A manager start (upstream RETURNN on the path): the markers name the setup's RETURNN, MiniReturnn (argv[1], or
#: none).
MANAGER = textwrap.dedent("""
    import json
    import sys

    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    root = sys.argv[1] or None
    model = by_content("mr_model:Model", dim=4, returnn_root=root)
    serializer = ReturnnConfigSerializer(
        {"backend": "torch", "get_model": model, "train_step": by_content("mr_model:train_step", returnn_root=root)}
    )
    with open("config.py", "w") as f:
        f.write(serializer.get())
    libraries = model.fingerprint().libraries
    print(json.dumps({"hash": serializer._sis_hash().decode(), "returnn": libraries["returnn"]}))
    """)
#: A MiniReturnn job: loads the config, builds the model, runs one train step in MiniReturnn's run context.
JOB = textwrap.dedent("""
    import json
    import sys

    import torch
    from returnn.config import Config
    from returnn.torch import context

    config = Config()
    config.load_file(sys.argv[1])
    model = config.typed_value("get_model")()
    torch.nn.init.constant_(model.linear.weight, 1.0)
    torch.nn.init.constant_(model.linear.bias, 0.0)
    context.init_train_step_run_ctx(device="cpu", engine=None, epoch=1)
    config.typed_value("train_step")(model=model, data={"data": torch.ones(1, 4)})
    loss = context.get_run_ctx().total_loss().item()
    snapshot = getattr(sys.modules["mr_model"].__loader__, "snapshot", None)
    print(json.dumps({"loss": loss, "pinned": snapshot is not None}))
    """)


@pytest.mark.slow  # a build server that imports torch
def test_model_code_of_minireturnn_is_hashed_with_the_setups_returnn_and_runs_pinned_in_it(tmp_path):
    (tmp_path / "mr_model.py").write_text(MODEL)
    (tmp_path / "manager.py").write_text(MANAGER)
    (tmp_path / "job.py").write_text(JOB)
    made = _run(tmp_path, "manager.py", str(MINI_RETURNN), first=[])
    assert made["returnn"] == f"git {pins()['MiniReturnn']}"
    assert _run(tmp_path, "job.py", "config.py", first=[MINI_RETURNN]) == {"loss": 16.0, "pinned": True}
    upstream = subprocess.run(
        [sys.executable, "manager.py", ""],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
            "I6_RC_BUILD_CACHE": str(tmp_path / "cache"),
            "CUDA_VISIBLE_DEVICES": "",
        },
        capture_output=True,
        text=True,
    )  # with the manager's RETURNN, the upstream one, which has no returnn.torch.context
    assert upstream.returncode != 0
    assert "its build failed: ModuleNotFoundError: No module named 'returnn.torch.context'" in upstream.stderr


#: A model of MiniReturnn's kind on Task12AX (9 inputs, 2 classes): a train step that marks the frame CE, a forward
#: step whose hooks write the average of the outputs (a prior) to prior.txt.
CHECKED_MODEL = textwrap.dedent("""
    import torch


    class Model(torch.nn.Module):
        def __init__(self, **_kwargs):
            super().__init__()
            self.linear = torch.nn.Linear(9, 2)


    def train_step(*, model, data, run_ctx, **_kwargs):
        logits = model.linear(data["data"])
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), data["classes"].long(), reduction="sum")
        run_ctx.mark_as_loss(name="ce", loss=loss, inv_norm_factor=torch.sum(data["classes:size1"]))


    def forward_init_hook(run_ctx, **_kwargs):
        run_ctx.sums = torch.zeros(2)


    def forward_step(*, model, data, run_ctx, **_kwargs):
        run_ctx.sums += torch.softmax(model.linear(data["data"]), -1).sum((0, 1))


    def forward_finish_hook(run_ctx, **_kwargs):
        with open("prior.txt", "w") as f:
            f.write(" ".join(str(x) for x in (run_ctx.sums / run_ctx.sums.sum()).tolist()))
    """)
#: Writes the config of that model (argv[1]: with train_step, forward or both) as CreateConfigJob writes it.
CHECKED_MANAGER = textwrap.dedent("""
    import sys

    from i6_rc_jobs import CheckedReturnnConfig, ReturnnConfigSerializer
    from i6_rc_jobs.jobs.config_file import write_config_file

    import checked_model

    values = {"get_model": checked_model.Model}
    dataset = {"class": "Task12AXDataset", "num_seqs": 4}
    if "train" in sys.argv[1]:
        values["train_step"] = checked_model.train_step
    if "forward" in sys.argv[1]:
        values.update(
            forward_step=checked_model.forward_step,
            forward_init_hook=checked_model.forward_init_hook,
            forward_finish_hook=checked_model.forward_finish_hook,
        )
    options = {"backend": "torch", "batch_size": 1000, "optimizer": {"class": "adam"}, "train": dataset, "forward": dataset}
    config = CheckedReturnnConfig(options, python_prolog=[ReturnnConfigSerializer(values, sys_path=[sys.argv[2]])])
    write_config_file(config, "returnn.config")
    print("{}")
    """)


@pytest.mark.slow  # MiniReturnn's engine imports torch
@pytest.mark.parametrize("steps", ["train", "forward", "train+forward"])
def test_the_check_trains_and_forwards_a_config_of_minireturnn_with_its_engine(tmp_path, steps):
    from i6_rc_jobs._verify import torch_check

    (tmp_path / "checked_model.py").write_text(CHECKED_MODEL)
    (tmp_path / "manager.py").write_text(CHECKED_MANAGER)
    _run(tmp_path, "manager.py", steps, str(tmp_path), first=[])
    env = {**os.environ, "PYTHONPATH": str(MINI_RETURNN), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, torch_check.__file__, "returnn.config", "--report", "report.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["parameters"] == {"linear.weight": [2, 9], "linear.bias": [2]}
    assert ("losses" in report) == ("train" in steps)
    if "train" in steps:
        assert set(report["losses"]) == {"ce"} and report["losses"]["ce"] > 0

"""The pinned Sisyphus stack end to end: the real `sis manager` with a LocalEngine, and recipe_examples/run.sh."""

import ast
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
EXAMPLES = ROOT / "recipe_examples"

TINY_JOB = '''
import json
import os
import sys

from sisyphus import Job, Task


class WriteEnvJob(Job):
    """Writes the text and what the worker sees of its environment."""

    def __init__(self, text):
        self.text = text
        self.out_text = self.output_path("text.txt")
        self.out_env = self.output_path("env.json")

    def tasks(self):
        yield Task("run", mini_task=True)

    def run(self):
        with open(self.out_text.get_path(), "w") as f:
            f.write(self.text)
        names = ["CUDA_VISIBLE_DEVICES", "TF_CPP_MIN_LOG_LEVEL", "PATH"]
        env = {name: os.environ.get(name) for name in names}
        env["executable"] = sys.executable
        with open(self.out_env.get_path(), "w") as f:
            json.dump(env, f)
'''

TINY_CONFIG = """
from sisyphus import tk


def main():
    from tiny_jobs import WriteEnvJob

    job = WriteEnvJob("hello sisyphus")
    tk.register_output("tiny/text.txt", job.out_text)
    tk.register_output("tiny/env.json", job.out_env)
"""


def _env():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("I6_RC_JOBS_ROOT", None)
    return env


def _run(cmd, cwd, timeout):
    start = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    return proc, time.monotonic() - start


def _tail(proc, lines=60):
    return "\n".join((proc.stdout + "\n" + proc.stderr).splitlines()[-lines:])


def _job_dirs(work: Path):
    return sorted(p.parent for p in work.rglob("job.save"))


def _snapshot(work: Path):
    return {str(p.relative_to(work)): p.lstat().st_mtime_ns for p in work.rglob("*")}


def test_sis_manager_runs_a_job_with_local_engine(tmp_path):
    """A tiny job through the real `sis manager -r`, with the settings.py of recipe_examples/."""
    setup = tmp_path / "setup"
    (setup / "config").mkdir(parents=True)
    (setup / "recipe").mkdir()
    (setup / "work").mkdir()
    shutil.copy(EXAMPLES / "settings.py", setup / "settings.py")
    (setup / "config" / "__init__.py").write_text(textwrap.dedent(TINY_CONFIG))
    (setup / "recipe" / "tiny_jobs.py").write_text(textwrap.dedent(TINY_JOB))

    proc, secs = _run([str(VENV / "bin" / "sis"), "manager", "-r"], cwd=setup, timeout=180)
    assert proc.returncode == 0, _tail(proc)
    assert "All output calculated" in proc.stderr, _tail(proc)

    out = setup / "output" / "tiny" / "text.txt"
    assert out.read_text() == "hello sisyphus"
    (job_dir,) = _job_dirs(setup / "work")
    assert job_dir.parent == setup / "work" / "tiny_jobs" and job_dir.name.startswith("WriteEnvJob.")
    assert (job_dir / "finished").is_file()
    assert out.resolve() == job_dir / "output" / "text.txt"

    # The worker saw the environment settings.py gives it, and ran with the .venv python.
    import json

    env = json.loads((setup / "output" / "tiny" / "env.json").read_text())
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert env["PATH"].split(":")[0] == str(VENV / "bin")
    assert env["executable"] == str(VENV / "bin" / "python")
    assert secs < 60, f"a one-job setup took {secs:.0f} s: are the WAIT_PERIOD_* settings short?"


def _parse_learning_rates(text):
    """RETURNN's learning-rates file is Python: {epoch: EpochData(learningRate=..., error={...}), ...}."""

    def EpochData(learningRate, error):  # noqa: N802, N803 (the names RETURNN writes)
        return {"learning_rate": learningRate, "error": error}

    namespace = {"EpochData": EpochData, "np": np, "nan": float("nan"), "inf": float("inf"), "__builtins__": {}}
    return eval(text, namespace)  # noqa: S307 (RETURNN's own output, as i6_core reads it)


def example_epochs(out: Path) -> dict[int, dict]:
    """Checks the example's final checkpoint (the last epoch's TF index, meta and data files) and returns its learning
    rates file, parsed, after checking that it has every epoch."""
    num_epochs = _example_num_epochs()
    index = (out / "checkpoint").resolve()
    assert index.name == f"epoch.{num_epochs:03d}.index" and index.is_file()
    assert (index.parent / f"epoch.{num_epochs:03d}.meta").is_file()
    assert list(index.parent.glob(f"epoch.{num_epochs:03d}.data-*"))
    epochs = _parse_learning_rates((out / "learning_rates").read_text())
    assert sorted(epochs) == list(range(1, num_epochs + 1))
    return epochs


def _example_num_epochs() -> int:
    """NUM_EPOCHS of the example's config (read from its code: the config imports the setup's recipe/)."""
    tree = ast.parse((EXAMPLES / "config" / "task12ax.py").read_text())
    (value,) = [node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "NUM_EPOCHS"]
    return ast.literal_eval(value)


@pytest.mark.slow
def test_run_sh_task12ax_end_to_end(tmp_path):
    """recipe_examples/run.sh DIR trains a Conformer on Task12AX, which learns; a second run finds everything done."""
    setup = tmp_path / "setup"
    run_sh = str(EXAMPLES / "run.sh")
    proc, first_secs = _run([run_sh, str(setup)], cwd=tmp_path, timeout=1200)
    assert proc.returncode == 0, _tail(proc)
    assert (setup / "settings.py").is_file() and (setup / "config" / "task12ax.py").is_file()
    out = setup / "output" / "task12ax"

    # The RETURNN config, written by CreateConfigJob from the serializer, and checked by RETURNN in its job.
    config_text = (out / "returnn.config").read_text()
    assert config_text.startswith("#!rnn.py")
    namespace: dict = {}
    exec(compile(config_text, "returnn.config", "exec"), namespace)
    assert "output" in namespace["network"]
    assert namespace["extern_data"]["data"]["dims"][2].dimension == 9
    assert ((out / "returnn.config").resolve().parents[1] / "finished.check_networks.1").exists()

    # The final checkpoint, and the learning rates: every epoch with finite train and dev CE (score) and frame error
    # rate (error); the model learns: the last epoch's dev CE and frame error rate are below the first's.
    epochs = example_epochs(out)
    for epoch, data in epochs.items():
        assert math.isfinite(data["learning_rate"]) and data["learning_rate"] > 0
        scores = {k: v for k, v in data["error"].items() if not k.startswith(":meta:")}
        assert {"train_score", "train_error", "dev_score", "dev_error"} <= set(scores), (epoch, scores)
        assert all(math.isfinite(float(v)) for v in scores.values()), (epoch, scores)
    first, last = epochs[1]["error"], epochs[max(epochs)]["error"]
    assert last["dev_score"] < first["dev_score"] and last["dev_error"] < first["dev_error"], epochs

    # Beside it, the RETURNN-frontend model with the PyTorch backend: its config (values with their dims, get_model a
    # partial), checked by training one step (the check's report has the parameters), trained 2 epochs: it learns.
    rf_out = setup / "output" / "task12ax_rf"
    rf_config = {}
    exec(compile((rf_out / "returnn.config").read_text(), "returnn.config", "exec"), rf_config)
    assert rf_config["backend"] == "torch" and rf_config["get_model"].keywords["model_dim"].dimension == 32
    assert rf_config["extern_data"]["classes"]["dims"][1] is rf_config["extern_data"]["data"]["dims"][1]
    report = json.loads((rf_out / "check_report").read_text())
    assert report["num_parameters"] == 17730 and report["parameters"]["output.weight"] == [32, 2]
    assert (rf_out / "checkpoint").resolve().name == "epoch.002.pt"
    rf_epochs = _parse_learning_rates((rf_out / "learning_rates").read_text())
    assert sorted(rf_epochs) == [1, 2], rf_epochs
    rf_first, rf_last = rf_epochs[1]["error"], rf_epochs[2]["error"]
    assert rf_last["dev_loss_ce"] < rf_first["dev_loss_ce"] and rf_last["dev_loss_fer"] < rf_first["dev_loss_fer"]

    # A second run: nothing to do, nothing touched in work/, quick.
    work = setup / "work"
    jobs_before, files_before = _job_dirs(work), _snapshot(work)
    # CreateConfigJob and ReturnnTrainingJob for both Task12AX models; the CTC example's training and prior
    # (tests/test_ctc_example.py checks its outputs)
    assert len(jobs_before) == 6, jobs_before
    proc2, second_secs = _run([run_sh, str(setup)], cwd=tmp_path, timeout=300)
    assert proc2.returncode == 0, _tail(proc2)
    assert _job_dirs(work) == jobs_before
    assert _snapshot(work) == files_before
    assert second_secs < 60, f"second run took {second_secs:.0f} s"
    print(f"run.sh: first run {first_secs:.1f} s, second run {second_secs:.1f} s", file=sys.stderr)

    # The model came from the build cache: the manager imported neither TensorFlow nor returnn_common (Python's
    # import log of the manager process, which has every module it imported).
    manager = subprocess.run(
        [str(VENV / "bin" / "sis"), "manager", "-r", "-co"],
        cwd=setup,
        env=dict(_env(), PYTHONPROFILEIMPORTTIME="1", I6_RC_JOBS_ROOT=str(ROOT)),
        input="u\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    imported = [
        line.rsplit("|", 1)[1].strip() for line in manager.stderr.splitlines() if line.startswith("import time:")
    ]
    assert "i6_rc_jobs._builds.builds" in imported and "task12ax_model" in imported, _tail(manager)
    assert not [name for name in imported if "tensorflow" in name or "returnn_common" in name], _tail(manager)
    # The PyTorch model's module is imported (RETURNN's frontend, no backend), torch is not.
    assert "task12ax_rf_model" in imported, _tail(manager)
    assert not [name for name in imported if name == "torch" or name.startswith("torch.")], _tail(manager)

"""The CTC example of recipe_examples/ (config/ctc_conformer.py) end to end under the real `sis manager` with the
local engine: an i6_models Conformer trained with MiniReturnn, then its prior computed by a forward job; and its
model code hashed by content, so that an edit of the model file makes a new training job and a comment does not."""

import json
import math
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from tests.support.sisyphus_setup import REPO, run_manager
from tests.test_sisyphus_stack import _parse_learning_rates

EXAMPLES = REPO / "recipe_examples"
MODEL_FILE = "ctc_conformer_v1.py"
#: The example's config alone (config/__init__.py of the example runs all examples).
MAIN = '''
"""Only the CTC example."""


def main():
    from . import ctc_conformer

    ctc_conformer.run()
'''
#: Prints the ids of the jobs the config makes, loaded as the manager loads it.
JOB_IDS = """
    import json
    from sisyphus.graph import graph
    from sisyphus.loader import config_manager
    config_manager.load_configs()
    print(json.dumps({type(job).__name__: job._sis_id() for job in graph.jobs()}))
"""


def _setup(directory: Path) -> Path:
    """The example's settings.py, the CTC config (and task12ax.py, which it imports from) and recipe/."""
    (directory / "config").mkdir(parents=True)
    (directory / "recipe").mkdir()
    (directory / "work").mkdir()
    shutil.copy(EXAMPLES / "settings.py", directory)
    for name in ("ctc_conformer.py", "task12ax.py"):
        shutil.copy(EXAMPLES / "config" / name, directory / "config")
    (directory / "config" / "__init__.py").write_text(MAIN.lstrip())
    for path in (EXAMPLES / "recipe").glob("*.py"):
        shutil.copy(path, directory / "recipe")
    return directory


def _job_ids(setup: Path) -> dict[str, str]:
    cmd = [str(REPO / ".venv" / "bin" / "python"), "-c", textwrap.dedent(JOB_IDS)]
    done = subprocess.run(cmd, cwd=setup, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _in_setup(setup: Path) -> list[psutil.Process]:
    """The processes that run in the setup directory or name it (workers, RETURNN, build servers)."""
    found = []
    for process in psutil.process_iter():
        try:
            if str(setup) in " ".join(process.cmdline()) or process.cwd().startswith(str(setup)):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.slow
def test_ctc_conformer_trains_with_minireturnn_and_computes_its_prior(tmp_path):
    setup = _setup(tmp_path / "setup")
    start = time.monotonic()
    proc = run_manager(setup, timeout=900)
    secs = time.monotonic() - start
    assert "All output calculated" in proc.stderr, (proc.stdout + proc.stderr)[-5000:]
    # The manager's tasks end with it: the training's plot task may still finish; nothing runs on after that.
    _, alive = psutil.wait_procs(_in_setup(setup), timeout=60)
    assert not alive, [process.cmdline() for process in alive]

    # Trained with MiniReturnn for every epoch; it learns (the dev CTC loss per label falls).
    out = setup / "output" / "ctc_conformer"
    epochs = _parse_learning_rates((out / "learning_rates").read_text())
    assert sorted(epochs) == list(range(1, 9)), epochs
    dev = [epochs[epoch]["error"]["dev_loss_ctc"] for epoch in sorted(epochs)]
    assert all(math.isfinite(loss) for loss in dev) and dev[-1] < 0.8 * dev[0], dev
    assert (out / "checkpoint").resolve().name == "epoch.008.pt"

    # The prior: 10 digits and the blank (last), log probabilities that sum to 1; a CTC model puts most frames on
    # the blank (a binary number has more digits than its decimal one).
    prior = np.exp(np.loadtxt(out / "prior.txt"))
    assert prior.shape == (11,) and abs(prior.sum() - 1) < 1e-4, prior
    assert prior.argmax() == 10 and prior[10] > 0.4, prior

    # The training and the forward job hash by the model's code: a comment keeps both jobs, an edit makes new ones.
    trained = _job_ids(setup)
    work_ids = {path.parent.relative_to(setup / "work").as_posix() for path in (setup / "work").rglob("job.save")}
    assert set(trained.values()) == work_ids, (trained, work_ids)
    model = setup / "recipe" / MODEL_FILE
    code = model.read_text()
    model.write_text(code.replace("        super().__init__()\n", "        super().__init__()  # a comment\n", 1))
    assert _job_ids(setup) == trained
    edited = code.replace("activation=torch.nn.functional.silu,", "activation=torch.nn.functional.relu,", 1)
    assert edited != code
    model.write_text(edited)
    moved = _job_ids(setup)
    assert moved["ReturnnTrainingJob"] != trained["ReturnnTrainingJob"]
    assert moved["ReturnnForwardJobV2"] != trained["ReturnnForwardJobV2"]
    assert not _in_setup(setup)
    print(f"CTC example: manager {secs:.1f} s", flush=True)

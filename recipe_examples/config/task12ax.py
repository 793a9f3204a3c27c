"""Train a small returnn_common Conformer encoder on RETURNN's Task12AXDataset, a frame labelling task.

The model (recipe/task12ax_model.py) is built with returnn_common at a fixed version (a versioned import: the same
model whatever returnn_common is installed), out of the manager by ``i6_rc_jobs.build``, which caches it: the
manager imports neither returnn_common nor TensorFlow. The ReturnnConfig holds the plain-data serializer.
CreateConfigJob writes (and, with check=True, RETURNN-checks) the config file in cheap jobs; i6_core's
ReturnnTrainingJob trains the same config, a CheckedReturnnConfig, whose file is checked when that job writes it,
and starts once RETURNN's check of that config passed. Registered outputs: ``task12ax/returnn.config``,
``task12ax/checkpoint`` (index file of the final checkpoint), ``task12ax/learning_rates`` (per epoch: train and dev CE and frame error rate).
"""

import os
import sys

from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

from task12ax_model import BEHAVIOR_VERSION, conformer_model

from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, build

NUM_EPOCHS = 5


def repo_root() -> str:
    """The i6_rc_jobs checkout whose ./setup.sh made the running .venv (override: $I6_RC_JOBS_ROOT)."""
    root = os.environ.get("I6_RC_JOBS_ROOT") or os.path.dirname(os.path.abspath(sys.prefix))
    if not os.path.isfile(os.path.join(root, ".deps", "src", "returnn", "rnn.py")):
        raise RuntimeError(
            f"no RETURNN checkout under {root}/.deps: run sis with the .venv python of an i6_rc_jobs checkout "
            "after ./setup.sh, or set I6_RC_JOBS_ROOT"
        )
    return root


def returnn_config() -> CheckedReturnnConfig:
    config = {
        # A net dict needs the TF net-dict engine; in this RETURNN, backend="tensorflow" means RF code (and torch).
        "use_tensorflow": True,
        "behavior_version": BEHAVIOR_VERSION,
        "train": {"class": "Task12AXDataset", "num_seqs": 200},
        "dev": {"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1},
        "batch_size": 1000,
        "optimizer": {"class": "adam"},
        "learning_rate": 0.01,
    }
    # The serializer writes extern_data and network; no black in the workers' environment.
    # Built in a build process and cached (recipe/task12ax_model.py): a second manager run takes it from the cache.
    return CheckedReturnnConfig(config, python_prolog=[build(conformer_model)], black_formatting=False)


def check_and_train(config: CheckedReturnnConfig, name: str, num_epochs: int):
    """CreateConfigJob (checked by RETURNN) and ReturnnTrainingJob on CPU for ``config``, the training waiting for the
    check; registers ``<name>/returnn.config`` and ``<name>/learning_rates``. Returns both jobs."""
    root = repo_root()
    # hash_overwrite: the job hashes do not depend on where the checkout is; the versions are pinned anyway.
    returnn_root = tk.Path(os.path.join(root, ".deps", "src", "returnn"), hash_overwrite="RETURNN_ROOT")
    returnn_python_exe = tk.Path(os.path.join(root, ".venv", "bin", "python"), hash_overwrite="RETURNN_PYTHON_EXE")

    checked = CreateConfigJob(config, check=True)
    tk.register_output(f"{name}/returnn.config", checked.out_config)

    train_job = ReturnnTrainingJob(
        config,
        num_epochs=num_epochs,
        device="cpu",
        cpu_rqmt=1,
        mem_rqmt=4,
        time_rqmt=1,
        returnn_root=returnn_root,
        returnn_python_exe=returnn_python_exe,
    )
    # The training starts once the check is done, and not at all if it fails: an input that Sisyphus does not hash
    # (it hashes a job's arguments), so the training's hash is the one it has without it.
    train_job.add_input(checked.out_config)
    train_job.add_alias(f"{name}/train")
    tk.register_output(f"{name}/learning_rates", train_job.out_learning_rates)
    return checked, train_job


def run():
    _, train_job = check_and_train(returnn_config(), "task12ax", NUM_EPOCHS)
    tk.register_output("task12ax/checkpoint", train_job.out_checkpoints[NUM_EPOCHS].index_path)

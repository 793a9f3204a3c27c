"""Train a small LSTM on RETURNN's Task12AXDataset for 2 epochs with i6_core's ReturnnTrainingJob.

Registers the outputs ``task12ax/returnn.config``, ``task12ax/checkpoint`` (index file of the final checkpoint)
and ``task12ax/learning_rates``.
"""

import os
import sys

from sisyphus import tk

from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.returnn.training import ReturnnTrainingJob

NUM_EPOCHS = 2


def repo_root() -> str:
    """The i6_rc_jobs checkout whose ./setup.sh made the running .venv (override: $I6_RC_JOBS_ROOT)."""
    root = os.environ.get("I6_RC_JOBS_ROOT") or os.path.dirname(os.path.abspath(sys.prefix))
    if not os.path.isfile(os.path.join(root, ".deps", "src", "returnn", "rnn.py")):
        raise RuntimeError(
            f"no RETURNN checkout under {root}/.deps: run sis with the .venv python of an i6_rc_jobs checkout "
            "after ./setup.sh, or set I6_RC_JOBS_ROOT"
        )
    return root


def returnn_config() -> ReturnnConfig:
    # serializer: replace the hand-written net dict
    network = {
        "lstm": {"class": "rec", "unit": "nativelstm2", "n_out": 32, "from": "data"},
        "output": {"class": "softmax", "loss": "ce", "target": "classes", "from": "lstm"},
    }
    config = {
        # A net dict needs the TF net-dict engine; in this RETURNN, backend="tensorflow" means RF code (and torch).
        "use_tensorflow": True,
        "extern_data": {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}},
        "network": network,
        "train": {"class": "Task12AXDataset", "num_seqs": 200},
        "dev": {"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1},
        "batch_size": 1000,
        "optimizer": {"class": "adam"},
        "learning_rate": 0.01,
    }
    # No black in the workers' environment.
    return ReturnnConfig(config, black_formatting=False)


def run():
    root = repo_root()
    # hash_overwrite: the job hashes do not depend on where the checkout is; the versions are pinned anyway.
    returnn_root = tk.Path(os.path.join(root, ".deps", "src", "returnn"), hash_overwrite="RETURNN_ROOT")
    returnn_python_exe = tk.Path(os.path.join(root, ".venv", "bin", "python"), hash_overwrite="RETURNN_PYTHON_EXE")

    config = returnn_config()
    tk.register_output("task12ax/returnn.config", WriteReturnnConfigJob(config).out_returnn_config_file)

    train_job = ReturnnTrainingJob(
        config,
        num_epochs=NUM_EPOCHS,
        device="cpu",
        cpu_rqmt=1,
        mem_rqmt=4,
        time_rqmt=1,
        returnn_root=returnn_root,
        returnn_python_exe=returnn_python_exe,
    )
    train_job.add_alias("task12ax/train")
    tk.register_output("task12ax/checkpoint", train_job.out_checkpoints[NUM_EPOCHS].index_path)
    tk.register_output("task12ax/learning_rates", train_job.out_learning_rates)

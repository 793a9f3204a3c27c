"""Small trainings for tests of a setup: i6_core's ReturnnTrainingJob on Task12AX, one epoch, with the repository's
RETURNN, from a config checked by CreateConfigJob."""

from __future__ import annotations

import sys
from typing import Any

from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob
from tests.support.cases import staged
from tests.support.sisyphus_setup import REPO

#: As the example gives them: the job hashes do not depend on where the checkout is.
RETURNN_ROOT = str(REPO / ".deps" / "src" / "returnn")


def task12ax_config(layer_class: str = "linear", **config: Any) -> CheckedReturnnConfig:
    """One layer of ``layer_class`` and a softmax on Task12AX (its stage of epoch 1); ``config`` replaces or adds
    entries."""
    entries = {
        "use_tensorflow": True,
        "behavior_version": 21,
        "train": {"class": "Task12AXDataset", "num_seqs": 10},
        "batch_size": 500,
        "learning_rate": 0.01,
        **config,
    }
    serializer = staged()
    serializer.staged_networks[1]["ff0"]["class"] = layer_class
    serializer.close()
    return CheckedReturnnConfig(entries, python_prolog=[serializer], black_formatting=False)


def training(config: CheckedReturnnConfig, **options: Any) -> ReturnnTrainingJob:
    """One epoch on the CPU (``options`` replace these), with the repository's RETURNN and Python."""
    kwargs = {
        "num_epochs": 1,
        "device": "cpu",
        "cpu_rqmt": 1,
        "mem_rqmt": 2,
        "time_rqmt": 1,
        "returnn_root": tk.Path(RETURNN_ROOT, hash_overwrite="RETURNN_ROOT"),
        "returnn_python_exe": tk.Path(sys.executable, hash_overwrite="RETURNN_PYTHON_EXE"),
        **options,
    }
    return ReturnnTrainingJob(config, **kwargs)


def checked_training(
    config: CheckedReturnnConfig, *, wait_for_check: bool
) -> tuple[CreateConfigJob, ReturnnTrainingJob]:
    """The check and the training of one config; ``wait_for_check``: the training waits for the check (its
    config file as an input of the training, which Sisyphus does not hash)."""
    check = CreateConfigJob(config, check=True)
    train = training(config)
    if wait_for_check:
        train.add_input(check.out_config)
    return check, train

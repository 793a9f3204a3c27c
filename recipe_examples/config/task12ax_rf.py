"""Train a RETURNN-frontend model (recipe/task12ax_rf_model.py: one Conformer block of RETURNN's own ``rf``
ConformerEncoder and an ``rf.Linear`` output) with the PyTorch backend on Task12AX, beside the returnn_common example.

The config's values (extern_data with its dims, ``get_model`` as a ``functools.partial`` of the model class with its
dims, ``train_step``) sit in a ReturnnConfigSerializer: plain data, written as code with the dim prolog, hashed by
content. The manager imports the model module (RETURNN's frontend, without a backend) but neither torch nor
TensorFlow. CreateConfigJob writes the config and checks it by building the model with RETURNN's torch engine and
training it one step on CPU (its parameters are in ``task12ax_rf/check_report``); i6_core's ReturnnTrainingJob trains
it once the check passed. Registered outputs: ``task12ax_rf/returnn.config``, ``task12ax_rf/check_report``,
``task12ax_rf/checkpoint`` (the final PyTorch checkpoint), ``task12ax_rf/learning_rates``.
"""

import os

import task12ax_rf_model
from sisyphus import tk

from i6_rc_jobs import CheckedReturnnConfig
from i6_rc_jobs import ReturnnConfigSerializer

from .task12ax import check_and_train

NUM_EPOCHS = 2


def returnn_config() -> CheckedReturnnConfig:
    config = {
        "backend": "torch",  # read by i6_core's ReturnnTrainingJob (PyTorch checkpoints) and the check
        "behavior_version": task12ax_rf_model.BEHAVIOR_VERSION,
        "train": {"class": "Task12AXDataset", "num_seqs": 200},
        "dev": {"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1},
        "batch_size": 1000,
        "optimizer": {"class": "adam"},
        "learning_rate": 0.01,
    }
    # The model module's directory goes onto the config's sys.path (not hashed): RETURNN imports Model and train_step.
    values = ReturnnConfigSerializer(
        task12ax_rf_model.config_values(), sys_path=[os.path.dirname(os.path.abspath(task12ax_rf_model.__file__))]
    )
    return CheckedReturnnConfig(config, python_prolog=[values], black_formatting=False)


def run():
    checked, train_job = check_and_train(returnn_config(), "task12ax_rf", NUM_EPOCHS)
    tk.register_output("task12ax_rf/check_report", checked.out_check_report)
    tk.register_output("task12ax_rf/checkpoint", train_job.out_checkpoints[NUM_EPOCHS].path)

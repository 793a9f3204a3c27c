"""A CTC Conformer as i6's PyTorch setups make one (recipe/ctc_conformer_v1.py with its dataclass config
recipe/ctc_conformer_v1_cfg.py, built on i6_models), trained with MiniReturnn on CPU on RETURNN's generated
TaskNumberBaseConvertDataset (binary numbers in, their decimal digits out: never more labels than frames), then a
forward job that computes the prior (the average softmax over training data) as the lab does for CTC.

The config's values sit in a ReturnnConfigSerializer, the model and its steps as ``by_content(...,
returnn_root=MiniReturnn)``: hashed by the code they run (an edit of the model moves the training's and the
forward's hashes, a comment does not), built with the MiniReturnn the jobs run, and pinned, so that the jobs import
the code that was hashed. The manager imports only the dataclass config (neither torch nor i6_models); the build of
the code fingerprint imports the model, which imports i6_models: the pinned checkout is appended to the manager's
``sys.path`` (in a setup: ``recipe/i6_models`` a link to it) and given to the jobs as ``sys_path`` (the lab's
``ExternalImport`` of i6_models). MiniReturnn is only the jobs' ``returnn_root``: the manager keeps its RETURNN.
Registered outputs: ``ctc_conformer/learning_rates`` (train and dev CTC loss per epoch), ``ctc_conformer/checkpoint``
(the final PyTorch checkpoint), ``ctc_conformer/prior.txt`` (log prior, one line per label, the blank last).
"""

import os
import sys
from dataclasses import asdict

import ctc_conformer_v1_cfg
from ctc_conformer_v1_cfg import FrontendConfig, ModelConfig
from i6_core.returnn.forward import ReturnnForwardJobV2
from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

from i6_rc_jobs import CheckedReturnnConfig, ReturnnConfigSerializer, by_content

from .task12ax import repo_root

NUM_EPOCHS = 8
MODEL = "ctc_conformer_v1"
#: Binary numbers of 1 to 8 digits in, their decimal digits (0-9) out; the dev set fixed.
TASK = {"class": "TaskNumberBaseConvertDataset", "input_base": 2, "output_base": 10}
TRAIN = {**TASK, "min_input_seq_len": 1, "max_input_seq_len": 8, "num_seqs": 2000}
DEV = {**TRAIN, "num_seqs": 100, "fixed_random_seed": 1}


def model_config() -> ModelConfig:
    return ModelConfig(
        num_inputs=2,
        label_target_size=10,
        frontend_config=FrontendConfig(kernel_size=3, stride=1, dropout=0.0, activation_str="ReLU"),
        conformer_size=32,
        num_layers=2,
        num_heads=4,
        ff_dim=64,
        att_weights_dropout=0.0,
        mhsa_dropout=0.0,
        ff_dropout=0.0,
        conv_dropout=0.0,
        conv_kernel_size=3,
        final_dropout=0.0,
    )


def tools() -> tuple[tk.Path, tk.Path, str]:
    """The jobs' MiniReturnn and Python (hashed by name, as the lab's ``hash_overwrite`` does) and the i6_models
    checkout, each as ./setup.sh pinned it."""
    src = os.path.join(repo_root(), ".deps", "src")
    mini_returnn = tk.Path(os.path.join(src, "MiniReturnn"), hash_overwrite="MINI_RETURNN_ROOT")
    python = tk.Path(os.path.join(repo_root(), ".venv", "bin", "python"), hash_overwrite="RETURNN_PYTHON_EXE")
    return mini_returnn, python, os.path.join(src, "i6_models")


def serializer(values: dict, mini_returnn: tk.Path, i6_models: str) -> ReturnnConfigSerializer:
    """``get_model`` with the config as a dict and ``values`` (step names), each by its code."""
    net_args = {"model_config_dict": asdict(model_config())}
    code = {key: by_content(f"{MODEL}:{name}", returnn_root=mini_returnn) for key, name in values.items()}
    recipe = os.path.dirname(os.path.abspath(ctc_conformer_v1_cfg.__file__))
    return ReturnnConfigSerializer(
        {"get_model": by_content(f"{MODEL}:Model", returnn_root=mini_returnn, **net_args), **code},
        sys_path=[recipe, i6_models],
    )


def run():
    mini_returnn, python, i6_models = tools()
    if i6_models not in sys.path:
        sys.path.append(i6_models)  # for the build of the code's fingerprint, which imports the model
    train_config = CheckedReturnnConfig(
        {
            "train": TRAIN,
            "dev": DEV,
            "batch_size": 2000,
            "max_seqs": 50,
            "num_workers_per_gpu": 0,  # no data loader processes: small data
            "optimizer": {"class": "adam", "epsilon": 1e-8},
            "learning_rate": 1e-2,
        },
        post_config={"backend": "torch"},  # not hashed, as in the lab's configs
        python_prolog=[serializer({"train_step": "train_step"}, mini_returnn, i6_models)],
        black_formatting=False,
    )
    train_job = ReturnnTrainingJob(
        train_config,
        num_epochs=NUM_EPOCHS,
        device="cpu",
        cpu_rqmt=1,
        mem_rqmt=4,
        time_rqmt=1,
        returnn_root=mini_returnn,
        returnn_python_exe=python,
    )
    train_job.add_alias("ctc_conformer/train")
    tk.register_output("ctc_conformer/learning_rates", train_job.out_learning_rates)
    checkpoint = train_job.out_checkpoints[NUM_EPOCHS]
    tk.register_output("ctc_conformer/checkpoint", checkpoint.path)

    # The lab's prior job: the forward step and its hooks from the model file, over training data.
    prior_steps = {
        "forward_step": "prior_step",
        "forward_init_hook": "prior_init_hook",
        "forward_finish_hook": "prior_finish_hook",
    }
    prior_config = CheckedReturnnConfig(
        {
            "forward": {**TRAIN, "num_seqs": 500, "fixed_random_seed": 2},
            "batch_size": 2000,
            "max_seqs": 50,
            "num_workers_per_gpu": 0,
        },
        post_config={"backend": "torch"},
        python_prolog=[serializer(prior_steps, mini_returnn, i6_models)],
        black_formatting=False,
    )
    prior_job = ReturnnForwardJobV2(
        model_checkpoint=checkpoint,
        returnn_config=prior_config,
        returnn_python_exe=python,
        returnn_root=mini_returnn,
        output_files=["prior.txt"],
        device="cpu",
        cpu_rqmt=1,
        mem_rqmt=4,
        time_rqmt=1,
    )
    prior_job.add_alias("ctc_conformer/prior")
    tk.register_output("ctc_conformer/prior.txt", prior_job.out_files["prior.txt"])

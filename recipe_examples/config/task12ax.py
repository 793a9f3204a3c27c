"""Train a small returnn_common Conformer encoder on RETURNN's Task12AXDataset, a frame labelling task.

The model is built in the manager with returnn_common at a fixed version (a versioned import: the config builds
the same model whatever returnn_common is installed) and wrapped in a ReturnnCommonSerializer, so the
ReturnnConfig holds plain data. CreateConfigJob writes (and, with check=True, RETURNN-checks) the config file in
cheap jobs; i6_core's ReturnnTrainingJob trains the same config, a CheckedReturnnConfig, whose file is checked when
that job writes it, and starts once RETURNN's check of that config passed. Registered outputs: ``task12ax/returnn.config``, ``task12ax/checkpoint`` (index file of the
final checkpoint), ``task12ax/learning_rates`` (per epoch: train and dev CE and frame error rate).
"""

import os
import sys

from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, ReturnnCommonSerializer, rc_compat
from i6_rc_jobs.imports import import_

NUM_EPOCHS = 5
#: returnn_common as of 2025-10-20 (the commit this checkout is tested with).
RETURNN_COMMON = "github.com/rwth-i6/returnn_common", "20251020-f7ad63a58835"


def returnn_common_nn():
    """returnn_common's nn at RETURNN_COMMON, from the import cache (fetched on first use), made to build with the
    installed RETURNN (:func:`i6_rc_jobs.rc_compat.apply`: the Conformer's GLU needs it)."""
    repo, version = RETURNN_COMMON
    return rc_compat.apply(import_(repo, "nn", version))


def repo_root() -> str:
    """The i6_rc_jobs checkout whose ./setup.sh made the running .venv (override: $I6_RC_JOBS_ROOT)."""
    root = os.environ.get("I6_RC_JOBS_ROOT") or os.path.dirname(os.path.abspath(sys.prefix))
    if not os.path.isfile(os.path.join(root, ".deps", "src", "returnn", "rnn.py")):
        raise RuntimeError(
            f"no RETURNN checkout under {root}/.deps: run sis with the .venv python of an i6_rc_jobs checkout "
            "after ./setup.sh, or set I6_RC_JOBS_ROOT"
        )
    return root


def conformer_model() -> ReturnnCommonSerializer:
    """returnn_common's ConformerEncoder (one block of model dim 32, no downsampling: one output per input frame) with
    a linear output over the 2 classes, for the 9 features of Task12AX; CE loss, frame error rate as error.
    One block learns the task in 5 epochs; with two, RETURNN's recursive construction of the nested net dict exceeds
    Python's default recursion limit in rnn.py (RecursionError)."""
    nn = returnn_common_nn()

    class Model(nn.Module):
        def __init__(self, in_dim: nn.Dim, model_dim: nn.Dim, classes_dim: nn.Dim):
            super().__init__()
            self.encoder = nn.ConformerEncoder(
                in_dim,
                model_dim,
                num_layers=1,
                input_layer=None,
                ff_dim=nn.FeatureDim("ff", 64),
                num_heads=4,
                conv_kernel_size=8,
            )
            self.out = nn.Linear(model_dim, classes_dim)

        def __call__(self, x: nn.Tensor, *, spatial_dim: nn.Dim) -> nn.Tensor:
            x, _ = self.encoder(x, in_spatial_dim=spatial_dim)
            return self.out(x)

    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_dim = nn.FeatureDim("input", 9)
    classes_dim = nn.FeatureDim("classes", 2)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    classes = nn.get_extern_data(nn.Data("classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=classes_dim))
    model = Model(in_dim, nn.FeatureDim("model", 32), classes_dim)
    logits = model(data, spatial_dim=time_dim)
    nn.softmax(logits, axis=classes_dim).mark_as_default_output()
    nn.cross_entropy(target=classes, estimated=logits, estimated_type="logits", axis=classes_dim).mark_as_loss("ce")
    labels = nn.reduce(logits, mode="argmax", axis=classes_dim)
    nn.cast(nn.compare(labels, classes, kind="not_equal"), dtype="float32").mark_as_loss("fer", as_error=True)
    return ReturnnCommonSerializer.from_returnn_common(model)


def returnn_config() -> CheckedReturnnConfig:
    nn = returnn_common_nn()
    config = {
        # A net dict needs the TF net-dict engine; in this RETURNN, backend="tensorflow" means RF code (and torch).
        "use_tensorflow": True,
        "behavior_version": nn.min_returnn_behavior_version,
        "train": {"class": "Task12AXDataset", "num_seqs": 200},
        "dev": {"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1},
        "batch_size": 1000,
        "optimizer": {"class": "adam"},
        "learning_rate": 0.01,
    }
    # The serializer writes extern_data and network; no black in the workers' environment.
    return CheckedReturnnConfig(config, python_prolog=[conformer_model()], black_formatting=False)


def run():
    root = repo_root()
    # hash_overwrite: the job hashes do not depend on where the checkout is; the versions are pinned anyway.
    returnn_root = tk.Path(os.path.join(root, ".deps", "src", "returnn"), hash_overwrite="RETURNN_ROOT")
    returnn_python_exe = tk.Path(os.path.join(root, ".venv", "bin", "python"), hash_overwrite="RETURNN_PYTHON_EXE")

    config = returnn_config()
    checked = CreateConfigJob(config, check=True)
    tk.register_output("task12ax/returnn.config", checked.out_config)

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
    # The training starts once the check is done, and not at all if it fails: an input that Sisyphus does not hash
    # (it hashes a job's arguments), so the training's hash is the one it has without it.
    train_job.add_input(checked.out_config)
    train_job.add_alias("task12ax/train")
    tk.register_output("task12ax/checkpoint", train_job.out_checkpoints[NUM_EPOCHS].index_path)
    tk.register_output("task12ax/learning_rates", train_job.out_learning_rates)

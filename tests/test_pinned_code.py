"""Model code pinned by content, with real builds, torch and RETURNN: a job runs the code its hash names, whatever
the setup's files hold when it runs. The manager writes a config of ``by_content`` markers; the code is edited; the
config, loaded by RETURNN in a process of its own as a training or forward job would, still builds the hashed model
from the snapshots, checked by their SHA-256. What the code imports inside functions counts and is pinned; what was
absent stays absent; a live marker imports the live code, and says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.support.sisyphus_setup import REPO
from tests.test_code_hash import HELPER
from tests.test_code_hash import MODEL as CODE_HASH_MODEL

pytestmark = pytest.mark.slow  # each manager start starts a build server that imports torch

#: The model of tests/test_code_hash.py with what i6 setups add: a module present on some machines only, and the loss
#: module imported where the loss is computed.
MODEL = CODE_HASH_MODEL.replace(
    "from act_helper import activation\n",
    "from act_helper import activation\n\ntry:\n    import fused_op\nexcept ImportError:\n    fused_op = None\n",
).replace(
    '    return model(extern_data["data"].raw_tensor)',
    '    from my_losses import loss\n\n    return loss(model(extern_data["data"].raw_tensor))',
)
LOSSES = "def loss(x):\n    return x.sum()\n"
#: A manager start: writes the config of the markers to ``config.py`` and prints its hash (``live`` from argv).
MANAGER = textwrap.dedent("""
    import json
    import sys

    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    live = sys.argv[1:] == ["live"]
    serializer = ReturnnConfigSerializer(
        {
            "backend": "torch",
            "get_model": by_content("my_model:Model", dim=4, live=live),
            "train_step": by_content("my_model:train_step", live=live),
        }
    )
    with open(sys.argv[-1] if sys.argv[1:] and sys.argv[-1] != "live" else "config.py", "w") as f:
        f.write(serializer.get())
    print(json.dumps({"hash": serializer._sis_hash().decode(), "torch": "torch" in sys.modules}))
    """)
#: A job: RETURNN loads the config, builds the model and computes the loss of a fixed input (each of the 4 outputs is
#: -1.5 before the activation: the relu's loss is 0); prints it, whether ``fused_op`` is there and the snapshot each
#: setup module was run from.
JOB = textwrap.dedent("""
    import json
    import sys

    import torch
    from returnn.config import Config

    config = Config()
    config.load_file(sys.argv[1])
    model = config.typed_value("get_model")()
    torch.nn.init.constant_(model.linear.weight, 1.0)
    torch.nn.init.constant_(model.linear.bias, 0.0)

    class Data:
        raw_tensor = torch.tensor([[-1.0, -2.0, 0.5, 1.0]])  # each output: -1.5 before the activation

    loss = config.typed_value("train_step")(model=model, extern_data={"data": Data})
    names = ("my_model", "act_helper", "my_losses")
    files = {name: getattr(sys.modules[name].__loader__, "snapshot", None) for name in names}
    print(json.dumps({"loss": loss.item(), "fused_op": sys.modules["my_model"].fused_op is not None, "files": files}))
    """)


@pytest.fixture
def setup_dir(tmp_path: Path) -> Path:
    (tmp_path / "my_model.py").write_text(MODEL)
    (tmp_path / "act_helper.py").write_text(HELPER)
    (tmp_path / "my_losses.py").write_text(LOSSES)
    (tmp_path / "manager.py").write_text(MANAGER)
    (tmp_path / "job.py").write_text(JOB)
    return tmp_path


def _env(directory: Path, more: dict[str, str] | None) -> dict[str, str]:
    return {
        **os.environ,
        **(more or {}),
        "PYTHONPATH": os.pathsep.join([str(directory), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }


def _run(directory: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv], cwd=directory, env=_env(directory, env), capture_output=True, text=True
    )


def manager(directory: Path, *argv: str, env: dict[str, str] | None = None) -> dict:
    done = _run(directory, "manager.py", *argv, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["torch"] is False
    return {**result, "log": done.stderr}


def job(directory: Path, config: str = "config.py", env: dict[str, str] | None = None) -> dict:
    done = _run(directory, "job.py", config, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def job_refused(directory: Path, config: str = "config.py", env: dict[str, str] | None = None) -> str:
    done = _run(directory, "job.py", config, env=env)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip().splitlines()[-1]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_job_runs_the_code_its_hash_names_after_the_code_was_edited(setup_dir):
    hashed = manager(setup_dir)["hash"]
    before = job(setup_dir)
    assert before["loss"] == 0.0  # relu(-1.5), summed
    snapshots = setup_dir / "cache" / "snapshots"
    assert all(Path(file).is_relative_to(snapshots) for file in before["files"].values()), before["files"]
    _edit(setup_dir / "act_helper.py", "torch.relu(x)", "x")  # the activation, as the job would find it later
    _edit(setup_dir / "my_losses.py", "x.sum()", "x.sum() * 10")  # the loss, imported inside train_step
    assert job(setup_dir) == before  # the restarted training, the forward job a week later: the hashed code
    now = manager(setup_dir, "now.py")
    assert now["hash"] != hashed
    assert job(setup_dir, "now.py")["loss"] == pytest.approx(-1.5 * 4 * 10)


#: A manager start with the example's RETURNN-frontend model, copied into the setup as ``rf_model``: writes the
#: config to the file argv names.
RF_MANAGER = textwrap.dedent("""
    import sys

    import rf_model
    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    values = rf_model.config_values()
    values["get_model"] = by_content(values["get_model"])
    values["train_step"] = by_content("rf_model:train_step")
    values["backend"] = "torch"
    with open(sys.argv[1], "w") as f:
        f.write(ReturnnConfigSerializer(values).get())
    """)


def test_same_model_tells_apart_two_configs_whose_code_differed(setup_dir):
    """Both configs load in one process: each builds the code it pinned, not what that process imported first."""
    model = setup_dir / "rf_model.py"
    model.write_text((REPO / "recipe_examples" / "recipe" / "task12ax_rf_model.py").read_text())
    (setup_dir / "rf_manager.py").write_text(RF_MANAGER)
    for config in ("before.py", "after.py"):
        done = _run(setup_dir, "rf_manager.py", config)
        assert done.returncode == 0, done.stderr[-3000:]
        if config == "before.py":  # what it computes, not its shapes
            _edit(model, 'ce.mark_as_loss("ce")', '(ce * 2.0).mark_as_loss("ce")')
    for pair, said in ((["before.py", "before.py"], "same model"), (["before.py", "after.py"], "loss ce on the fixed")):
        done = _run(setup_dir, "-m", "i6_rc_jobs", "same-model", *pair)
        assert said in done.stdout, done.stdout + done.stderr[-3000:]


def test_a_module_imported_only_inside_a_function_counts(setup_dir):
    first = manager(setup_dir)["hash"]
    code = (setup_dir / "config.py").read_text()
    assert "'my_losses': (" in code
    _edit(setup_dir / "my_losses.py", "x.sum()", "x.mean()")
    assert manager(setup_dir)["hash"] != first


def test_a_module_absent_where_the_code_was_hashed_stays_absent_and_its_coming_moves_the_hash(setup_dir):
    first = manager(setup_dir)["hash"]
    assert "frozenset({'fused_op'})" in (setup_dir / "config.py").read_text()
    (setup_dir / "fused_op.py").write_text("SPEED = 2\n")  # now installed where the job runs
    assert job(setup_dir)["fused_op"] is False  # as hashed
    now = manager(setup_dir, "now.py")
    assert now["hash"] != first
    assert job(setup_dir, "now.py")["fused_op"] is True


def test_a_changed_missing_or_shadowed_snapshot_is_refused_in_one_line(setup_dir):
    manager(setup_dir)
    (helper,) = (setup_dir / "cache" / "snapshots").glob("*/*/act_helper.py")
    original = helper.read_bytes()
    helper.chmod(0o644)
    helper.write_bytes(original + b"\nactivation = abs\n")
    assert job_refused(setup_dir) == (
        f"ImportError: {helper}: the snapshot of the model code, changed since it was hashed (its SHA-256 differs)"
    )
    helper.unlink()
    assert job_refused(setup_dir) == (
        f"ImportError: {helper}: the snapshot of the model code cannot be read (No such file or directory)"
    )
    helper.write_bytes(original)
    config = setup_dir / "config.py"
    config.write_text("import act_helper\n" + config.read_text())  # the live module, imported first
    assert job_refused(setup_dir) == (
        f"ImportError: act_helper was imported before the pinned model code, from {setup_dir / 'act_helper.py'}"
    )


def test_a_live_marker_imports_the_live_code_and_says_so(setup_dir):
    result = manager(setup_dir, "live")
    assert "by_content(my_model.Model, live=True): its jobs import the setup's code as it is when they run" in (
        result["log"]
    )
    assert "_pin_model_code" not in (setup_dir / "config.py").read_text()
    _edit(setup_dir / "act_helper.py", "torch.relu(x)", "x")
    assert job(setup_dir)["loss"] == pytest.approx(-1.5 * 4)


#: A model that reads its sizes from a file beside it when it is constructed, as i6 models read priors.
SIZED_MODEL = textwrap.dedent("""
    import json
    import os

    import torch


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            with open(os.path.join(os.path.dirname(__file__), "sizes.json")) as f:
                self.linear = torch.nn.Linear(*json.load(f))
    """)


def test_a_file_the_model_reads_counts_and_is_checked_where_the_job_runs(setup_dir):
    (setup_dir / "sized_model.py").write_text(SIZED_MODEL)
    sizes = setup_dir / "sizes.json"
    sizes.write_text("[4, 4]")
    (setup_dir / "manager.py").write_text(MANAGER.replace('"my_model:Model", dim=4', '"sized_model:Model"'))
    first = manager(setup_dir)["hash"]
    assert f"{str(sizes)!r}: " in (setup_dir / "config.py").read_text()
    sizes.write_text("[4, 8]")
    assert job_refused(setup_dir) == (
        f"ImportError: {sizes}: read by the model code when it was hashed, changed since it was hashed (its SHA-256 "
        "differs)"
    )
    assert manager(setup_dir, "now.py")["hash"] != first


#: A manager start with two configs, one of a model whose construction fails: prints both hashes, what writing the
#: broken one's config says, and whether the other's config was written.
FAILING_MANAGER = textwrap.dedent("""
    import json
    import sys

    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    good = ReturnnConfigSerializer({"get_model": by_content("my_model:Model", dim=4)})
    bad = ReturnnConfigSerializer({"get_model": by_content("broken_model:Model", dim=4)})
    hashes, said = [good._sis_hash().decode(), bad._sis_hash().decode()], None
    try:
        bad.get()
    except Exception as e:
        said = f"{type(e).__name__}: {e}"
    written = "_pin_model_code" in good.get()
    print(json.dumps({"hashes": hashes, "said": said, "good": written, "torch": "torch" in sys.modules}))
    """)
BROKEN_MODEL = textwrap.dedent("""
    import torch


    class Model(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            raise ValueError(f"no model of dim {dim}")
    """)


def test_a_model_whose_build_fails_fails_its_own_jobs_only(setup_dir):
    (setup_dir / "manager.py").write_text(FAILING_MANAGER)
    (setup_dir / "broken_model.py").write_text(BROKEN_MODEL)
    first = manager(setup_dir)
    line = (
        "by_content(broken_model.Model, dim=4): its build failed: ValueError: no model of dim 4 "
        f"({setup_dir / 'broken_model.py'}:8)"
    )
    assert first["said"] == f"BuildError: {line}" and first["good"]
    assert f"{line} (its jobs fail with this line; the other jobs go on)" in first["log"]
    assert manager(setup_dir)["hashes"] == first["hashes"]  # the failure hashes alike at every start
    _edit(setup_dir / "broken_model.py", "raise ValueError", "self.linear = torch.nn.Linear(dim, dim)  #")
    fixed = manager(setup_dir)
    assert fixed["hashes"][0] == first["hashes"][0] and fixed["hashes"][1] != first["hashes"][1]


#: A model that scales its input by an environment variable, read when its module is imported.
ENV_MODEL = MODEL.replace(
    "from act_helper import activation\n",
    "import os\n\nfrom act_helper import activation\n\nSCALE = float(os.getenv('MODEL_SCALE', '1'))\n",
).replace("return activation(self.linear(x))", "return activation(self.linear(x)) * SCALE")


def test_an_environment_variable_the_models_code_reads_counts_and_is_checked_where_the_job_runs(setup_dir):
    (setup_dir / "env_model.py").write_text(ENV_MODEL)
    (setup_dir / "manager.py").write_text(MANAGER.replace('"my_model:Model"', '"env_model:Model"'))
    first = manager(setup_dir)["hash"]
    # what the model's code read, and nothing that only the libraries and tools read (PYTHONPATH, their settings)
    assert "    {\n        'MODEL_SCALE': None,\n    },\n" in (setup_dir / "config.py").read_text()
    assert job(setup_dir)["loss"] == 0.0
    assert job_refused(setup_dir, env={"MODEL_SCALE": "-2"}) == (
        "ImportError: environment variable MODEL_SCALE: not set where the model code was hashed, which reads it"
    )
    now = manager(setup_dir, "now.py", env={"MODEL_SCALE": "-2"})["hash"]
    assert now != first
    assert job(setup_dir, "now.py", env={"MODEL_SCALE": "-2"})["loss"] == 0.0
    assert job_refused(setup_dir, "now.py", env={"MODEL_SCALE": "3"}) == (
        "ImportError: environment variable MODEL_SCALE: set otherwise where the model code was hashed, which reads it"
    )


#: Models that ask which machine they run on: one catches the refusal, one asks for the GPU when it is built.
ASKING_MODELS = textwrap.dedent("""
    import socket

    import torch

    try:
        HOST = socket.gethostname()
    except Exception:
        HOST = "anywhere"


    class Model(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim)
    """)
GPU_MODEL = textwrap.dedent("""
    import torch


    class Model(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.linear = torch.nn.Linear(dim, dim, bias=not torch.cuda.is_available())
    """)


def test_a_model_that_asks_which_machine_it_runs_on_fails_its_own_jobs_where_it_asks(setup_dir):
    (setup_dir / "asking_model.py").write_text(ASKING_MODELS)
    (setup_dir / "gpu_model.py").write_text(GPU_MODEL)
    for model, line in (
        (
            "asking_model",
            f"RuntimeError: {setup_dir / 'asking_model.py'}:7 asks socket.gethostname() while the model "
            "code is recorded; choose in the config",
        ),
        (
            "gpu_model",
            "RuntimeError: torch.cuda.is_available() asked while the model code is recorded: where the job "
            "runs the answer differs, so the hash would not name what runs; choose in the config and pass it as an "
            f"argument ({setup_dir / 'gpu_model.py'}:8)",
        ),
    ):
        (setup_dir / "manager.py").write_text(FAILING_MANAGER.replace("broken_model", model))
        result = manager(setup_dir)
        assert result["said"] == f"BuildError: by_content({model}.Model, dim=4): its build failed: {line}"
        assert result["good"]  # the other model's config is written


#: A C extension of the setup, as setups build their own fused operations.
EXTENSION = textwrap.dedent("""
    #include <Python.h>

    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fastscale", NULL, -1, NULL};

    PyMODINIT_FUNC PyInit_fastscale(void) {
        PyObject *made = PyModule_Create(&module);
        PyModule_AddIntConstant(made, "SCALE", SCALE);
        return made;
    }
    """)


def _compile_extension(directory: Path, scale: int) -> Path:
    source = directory / "fastscale.c"
    source.write_text(EXTENSION)
    built = directory / f"fastscale{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-DSCALE={scale}", f"-I{include}", str(source), "-o", str(built)], check=True
    )
    return built


def test_the_setups_own_c_extension_counts_by_its_bytes_and_is_checked_where_the_job_runs(setup_dir):
    built = _compile_extension(setup_dir, 2)
    _edit(setup_dir / "act_helper.py", "import torch\n", "import torch\n\nimport fastscale\n")
    first = manager(setup_dir)["hash"]
    assert f"{str(built)!r}: " in (setup_dir / "config.py").read_text()
    _compile_extension(setup_dir, 3)  # rebuilt
    assert job_refused(setup_dir) == (
        f"ImportError: {built}: read by the model code when it was hashed, changed since it was hashed (its SHA-256 "
        "differs)"
    )
    assert manager(setup_dir, "now.py")["hash"] != first


#: A model of i6_models' parts: a feed-forward block of the Conformer.
I6_MODELS_MODEL = textwrap.dedent("""
    import torch
    from i6_models.parts.conformer.feedforward import ConformerPositionwiseFeedForwardV1, ConformerPositionwiseFeedForwardV1Config


    class Model(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            config = ConformerPositionwiseFeedForwardV1Config(dim, 2 * dim, 0.0, torch.nn.functional.silu)
            self.ff = ConformerPositionwiseFeedForwardV1(config)
    """)


def test_a_copy_of_a_library_without_its_commit_counts_by_its_files_and_is_checked_where_the_job_runs(setup_dir):
    """A copy of i6_models without ``.git`` still says "version 1.0.0", whatever its files say."""
    shutil.copytree(REPO / ".deps" / "src" / "i6_models" / "i6_models", setup_dir / "i6_models")
    (setup_dir / "i6m_model.py").write_text(I6_MODELS_MODEL)
    (setup_dir / "manager.py").write_text(MANAGER.replace('"my_model:Model"', '"i6m_model:Model"'))
    first = manager(setup_dir)["hash"]
    config = (setup_dir / "config.py").read_text()
    assert "'parts/conformer/feedforward.py': '" in config
    feedforward = setup_dir / "i6_models" / "parts" / "conformer" / "feedforward.py"
    _edit(feedforward, "import torch\n", "import torch\n\nACTIVATION_SCALE = 2\n")
    assert job_refused(setup_dir) == (
        f"ImportError: {feedforward}: a file of i6_models the model code loaded when it was hashed, changed since it "
        "was hashed (its SHA-256 differs)"
    )
    assert manager(setup_dir, "now.py")["hash"] != first


#: A RETURNN-frontend model whose get_model reads the job's config, as RETURNN-frontend setups do: its size, and the
#: module of its scale, imported by a computed name.
CONFIG_MODEL = textwrap.dedent("""
    import importlib

    import returnn.frontend as rf
    from returnn.config import get_global_config
    from returnn.tensor import Dim


    def get_model(*, epoch, step, **_kwargs):
        config = get_global_config()
        dim = Dim(config.int("model_size", 4), name="feature")
        model = rf.Linear(dim, dim)
        model.scale = importlib.import_module(config.typed_value("scale_module", "scale_one")).SCALE
        if config.bool("with_extern_dims", False):
            config.typed_value("extern_data")
        return model
    """)
#: A manager start of a config of that model: writes it to the file argv names, prints its hash.
CONFIG_MANAGER = textwrap.dedent("""
    import json
    import sys

    from returnn.tensor import Dim
    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    options = json.loads(sys.argv[2])
    time_dim = Dim(None, name="time")
    values = {
        "backend": "torch",
        "extern_data": {"data": {"dim_tags": [time_dim]}},
        "get_model": by_content("config_model:get_model", epoch=1, step=0),  # (RETURNN passes its own)
        **options,
    }
    serializer = ReturnnConfigSerializer(values)
    with open(sys.argv[1], "w") as f:
        f.write(serializer.get())
    print(json.dumps({"hash": serializer._sis_hash().decode(), "torch": "torch" in sys.modules}))
    """)
#: A job: RETURNN loads the config as its global config and gets the model; prints the model's size and scale.
CONFIG_JOB = textwrap.dedent("""
    import json
    import sys

    import returnn.frontend as rf
    from returnn.config import Config, global_config_ctx

    config = Config()
    config.load_file(sys.argv[1])
    rf.select_backend_torch()
    with global_config_ctx(config):
        model = config.typed_value("get_model")(epoch=1, step=0)
    print(json.dumps({"dim": model.in_dim.dimension, "scale": model.scale}))
    """)


def test_a_model_that_reads_the_jobs_config_while_it_is_built_is_built_with_it(setup_dir):
    (setup_dir / "config_model.py").write_text(CONFIG_MODEL)
    (setup_dir / "scale_one.py").write_text("SCALE = 1\n")
    (setup_dir / "scale_two.py").write_text("SCALE = 2\n")
    (setup_dir / "manager.py").write_text(CONFIG_MANAGER)
    (setup_dir / "job.py").write_text(CONFIG_JOB)
    options = {"model_size": 8, "scale_module": "scale_two", "learning_rate": 0.1}
    first = manager(setup_dir, "config.py", json.dumps(options))["hash"]
    assert "'scale_two': (" in (setup_dir / "config.py").read_text()  # what construction imported with the options
    assert job(setup_dir) == {"dim": 8, "scale": 2}
    _edit(setup_dir / "scale_two.py", "2", "3")  # the job still runs what was hashed
    assert job(setup_dir) == {"dim": 8, "scale": 2}
    assert manager(setup_dir, "now.py", json.dumps(options))["hash"] != first
    assert job(setup_dir, "now.py") == {"dim": 8, "scale": 3}
    done = _run(setup_dir, "manager.py", "dims.py", json.dumps({**options, "with_extern_dims": True}))
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        "i6_rc_jobs._builds.errors.BuildError: by_content(config_model.get_model, epoch=1, step=0): its build failed: RuntimeError: "
        "the model's construction reads the config's option 'extern_data', whose value is no plain value (a dim, a "
        f"function): read it where the model runs, or pass what construction needs as an argument ({setup_dir / 'config_model.py'}:15)"
    )


#: A model that reads its priors from a job's output, given as a ``tk.Path`` (the job may not have run yet).
PRIOR_MODEL = textwrap.dedent("""
    import torch


    class Model(torch.nn.Module):
        def __init__(self, priors):
            super().__init__()
            with open(priors) as f:
                self.priors = torch.nn.Parameter(torch.tensor([float(x) for x in f.read().split()]))
    """)
#: A manager start of a config of that model, with the path of its priors; prints the hash and whether it failed.
PRIOR_MANAGER = textwrap.dedent("""
    import json
    import sys

    from sisyphus import tk

    from i6_rc_jobs import ReturnnConfigSerializer, by_content

    marker = by_content("prior_model:Model", priors=tk.Path(sys.argv[1]))
    serializer = ReturnnConfigSerializer({"get_model": marker})
    with open("config.py", "w") as f:
        f.write(serializer.get())
    print(json.dumps({"hash": serializer._sis_hash().decode(), "failed": marker.failure, "torch": "torch" in sys.modules}))
    """)


def test_a_model_given_a_job_output_that_does_not_exist_yet_hashes_alike_before_and_after(setup_dir):
    (setup_dir / "prior_model.py").write_text(PRIOR_MODEL)
    (setup_dir / "manager.py").write_text(PRIOR_MANAGER)
    priors = setup_dir / "output" / "priors.txt"
    before = manager(setup_dir, str(priors))
    assert before["failed"] is None
    priors.parent.mkdir()
    priors.write_text("0.25 0.75")  # the job that makes it ran
    assert manager(setup_dir, str(priors))["hash"] == before["hash"]
    (setup_dir / "job.py").write_text(
        "import json, sys\nfrom returnn.config import Config\nconfig = Config()\nconfig.load_file(sys.argv[1])\n"
        "print(json.dumps(config.typed_value('get_model')().priors.tolist()))\n"
    )
    assert job(setup_dir) == [0.25, 0.75]


#: A get_model that cannot be built without an option of the job's config.
NEEDY_MODEL = textwrap.dedent("""
    import torch
    from returnn.config import get_global_config


    def get_model(*, epoch, step, **_kwargs):
        sizes = get_global_config().typed_value("sizes")
        return torch.nn.Linear(sizes["in"], sizes["out"])
    """)


def test_a_model_that_needs_an_option_of_the_jobs_config_to_be_built_is_built_with_it(setup_dir):
    (setup_dir / "config_model.py").write_text(NEEDY_MODEL)
    (setup_dir / "manager.py").write_text(CONFIG_MANAGER)
    first = manager(setup_dir, "config.py", json.dumps({"sizes": {"in": 3, "out": 5}, "learning_rate": 0.1}))
    assert "its build failed" not in first["log"]  # (the build without the job's config did fail: not said)
    other = manager(setup_dir, "other.py", json.dumps({"sizes": {"in": 3, "out": 6}, "learning_rate": 0.1}))
    assert other["hash"] != first["hash"]
    (setup_dir / "job.py").write_text(
        "import json, sys\nfrom returnn.config import Config, global_config_ctx\nconfig = Config()\n"
        "config.load_file(sys.argv[1])\nwith global_config_ctx(config):\n"
        "    print(json.dumps(list(config.typed_value('get_model')(epoch=1, step=0).weight.shape)))\n"
    )
    assert job(setup_dir, "other.py") == [6, 3]

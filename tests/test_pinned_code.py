"""Model code pinned by content, with real builds, torch and RETURNN: a job runs the code its hash names, whatever
the setup's files hold when it runs. The manager writes a config of ``by_content`` markers; the code is edited; the
config, loaded by RETURNN in a process of its own as a training or forward job would, still builds the hashed model
from the snapshots, checked by their SHA-256. What the code imports inside functions counts and is pinned; what was
absent stays absent; a live marker imports the live code, and says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def _env(directory: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(directory), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }


def _run(directory: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=directory, env=_env(directory), capture_output=True, text=True)


def manager(directory: Path, *argv: str) -> dict:
    done = _run(directory, "manager.py", *argv)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["torch"] is False
    return {**result, "log": done.stderr}


def job(directory: Path, config: str = "config.py") -> dict:
    done = _run(directory, "job.py", config)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def job_refused(directory: Path, config: str = "config.py") -> str:
    done = _run(directory, "job.py", config)
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

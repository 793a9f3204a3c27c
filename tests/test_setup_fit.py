"""i6_rc_jobs added to an i6 setup the two ways docs/guide/install.md describes, each followed as
written: an i6-style setup directory (recipe/ with i6_core and returnn_common, tools/ with RETURNN and Sisyphus,
settings.py, config/ with a returnn_common model) whose `sis manager` runs a RETURNN-checked CreateConfigJob and a
one-epoch ReturnnTrainingJob with the setup's RETURNN checkout.

The setup's Python is a fresh venv that sees the PyPI packages of this repository's .venv (TensorFlow, numpy, ...)
but none of the rwth-i6 code or i6_rc_jobs the .venv's own .pth files add: what runs can only come from the setup.
i6_rc_jobs comes from this repository's git at its HEAD commit (committed code, as a user would get it)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.pins import pins
from tests.support.sisyphus_setup import REPO

SETTINGS = """
import os
import sys


def engine():
    from sisyphus.localengine import LocalEngine

    return LocalEngine(cpus=2, gpus=0, mem=8)


# Workers get a clean environment: the setup's Python first on PATH, and no GPU (else RETURNN compiles its native
# ops with nvcc if it finds one).
DEFAULT_ENVIRONMENT_SET = {
    "PATH": ":".join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": 1,
    "MKL_NUM_THREADS": 1,
    "CUDA_VISIBLE_DEVICES": "",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}
WAIT_PERIOD_BETWEEN_CHECKS = 1
WAIT_PERIOD_CACHE = 1
WAIT_PERIOD_JOB_FS_SYNC = 1
WAIT_PERIOD_JOB_CLEANUP = 1
WAIT_PERIOD_MTIME_OF_INPUTS = 0
JOB_AUTO_CLEANUP = False
# The import cache of versioned modules: workers find the versions the manager imported there.
DEFAULT_ENVIRONMENT_KEEP = {"HOME", "PWD", "USER", "TMP", "TMPDIR", "I6_RC_IMPORTS_CACHE"}
"""

CONFIG = """
import sys

from sisyphus import tk


def main():
    import i6_core, returnn, returnn_common, sisyphus, i6_rc_jobs
    from i6_core.returnn.training import ReturnnTrainingJob
    from returnn_common import nn

    from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, ReturnnCommonSerializer, rc_compat
    from i6_rc_jobs import import_

    for module in (i6_core, returnn, returnn_common, sisyphus, i6_rc_jobs):
        print(f"manager imports {module.__name__} from {module.__file__}")
    nn = rc_compat.apply(nn)

    class Model(nn.Module):
        def __init__(self, in_dim: nn.Dim, hidden_dim: nn.Dim, classes_dim: nn.Dim):
            super().__init__()
            self.hidden = nn.Linear(in_dim, hidden_dim)
            self.out = nn.Linear(hidden_dim, classes_dim)

        def __call__(self, x: nn.Tensor) -> nn.Tensor:
            return self.out(nn.relu(self.hidden(x)))

    nn.reset_default_root_name_ctx()
    time_dim, in_dim, classes_dim = nn.SpatialDim("time"), nn.FeatureDim("input", 9), nn.FeatureDim("classes", 2)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    classes = nn.get_extern_data(nn.Data("classes", dim_tags=[nn.batch_dim, time_dim], sparse_dim=classes_dim))
    model = Model(in_dim, nn.FeatureDim("hidden", 16), classes_dim)
    logits = model(data)
    nn.softmax(logits, axis=classes_dim).mark_as_default_output()
    nn.cross_entropy(target=classes, estimated=logits, estimated_type="logits", axis=classes_dim).mark_as_loss("ce")
    config = CheckedReturnnConfig(
        {
            "use_tensorflow": True,
            "behavior_version": nn.min_returnn_behavior_version,
            "train": {"class": "Task12AXDataset", "num_seqs": 20},
            "dev": {"class": "Task12AXDataset", "num_seqs": 5, "fixed_random_seed": 1},
            "batch_size": 1000,
            "optimizer": {"class": "adam"},
            "learning_rate": 0.01,
        },
        python_prolog=[ReturnnCommonSerializer.from_returnn_common(model)],
        python_epilog=[import_(*HELPERS).describe],  # a function of a versioned module: workers import it by name
        black_formatting=False,
    )
    returnn_root = tk.Path("tools/returnn")
    tk.register_output("returnn.config", CreateConfigJob(config, check=True, returnn_root=returnn_root).out_config)
    train = ReturnnTrainingJob(
        config, num_epochs=1, device="cpu", cpu_rqmt=1, mem_rqmt=2, time_rqmt=1, returnn_root=returnn_root
    )
    tk.register_output("learning_rates", train.out_learning_rates)
"""

PACKAGES = ("i6_core", "returnn", "returnn_common", "sisyphus", "i6_rc_jobs")


def _run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([os.fspath(part) for part in command], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _clone(source: Path, target: Path, commit: str) -> None:
    _run("git", "clone", "-q", "--shared", "--no-checkout", source, target)
    _run("git", "-C", target, "checkout", "-q", "--detach", commit)


def _versioned_helpers(directory: Path) -> tuple[str, str, str]:
    """A one-commit repository, ``example.org/test/helpers`` for versioned imports (git's insteadOf maps it here)."""
    directory.mkdir()
    (directory / "helpers.py").write_text('def describe():\n    return "a function of a versioned module"\n')
    date = "2024-01-02T03:04:05+01:00"
    dated = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    _run("git", "init", "-q", directory)
    _run("git", "-C", directory, "add", "helpers.py")
    _run("git", "-C", directory, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "helpers", env=dated)
    commit = _run("git", "-C", directory, "rev-parse", "HEAD").stdout.strip()
    return "example.org/test/helpers", "helpers.py", f"20240102-{commit[:12]}"


def _setup_python(directory: Path) -> Path:
    """A venv whose packages are those of this repository's .venv, found through a path entry, so that the .pth files
    there (which add .deps and the editable i6_rc_jobs) are not read."""
    _run(sys.executable, "-m", "venv", "--without-pip", directory)
    site = _run(directory / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    Path(site.stdout.strip(), "venv_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return directory / "bin" / "python"


@pytest.mark.slow
@pytest.mark.parametrize("way", ["pip install", "checkout beside recipe"])
def test_an_i6_setup_adds_the_package_and_trains_with_its_own_returnn(tmp_path, way):
    start = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "I6_RC_JOBS_ROOT")}
    python = _setup_python(tmp_path / "python")
    setup = tmp_path / "setup"
    for name in ("i6_core", "returnn_common"):
        _clone(REPO / ".deps" / "src" / name, setup / "recipe" / name, pins()[name])
    for name in ("returnn", "sisyphus"):
        _clone(REPO / ".deps" / "src" / name, setup / "tools" / name, pins()[name])
    (setup / "recipe" / "returnn").symlink_to("../tools/returnn/returnn")  # for returnn_common in the manager
    (setup / "settings.py").write_text(textwrap.dedent(SETTINGS))
    (setup / "config").mkdir()
    helpers = _versioned_helpers(tmp_path / "helpers")
    (setup / "config" / "__init__.py").write_text(f"HELPERS = {helpers!r}\n" + textwrap.dedent(CONFIG))
    (setup / "work").mkdir()
    for package in PACKAGES:  # the setup's Python has none of them: what runs below is the setup's
        done = subprocess.run(
            [python, "-c", f"import {package}"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert f"No module named '{package}'" in done.stderr, (package, done.stderr)

    head = _run("git", "-C", REPO, "rev-parse", "HEAD").stdout.strip()
    if way == "pip install":  # no build isolation: the test needs no package index
        pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-build-isolation"]
        _run(*pip, f"git+file://{REPO}@{head}", env=env)
    else:
        _clone(REPO, setup / "i6_rc_jobs-src", head)
        (setup / "recipe" / "i6_rc_jobs").symlink_to("../i6_rc_jobs-src/i6_rc_jobs")
    prepared = time.monotonic()
    manager = subprocess.run(
        [python, "tools/sisyphus/sis", "manager", "-r", "-co"],
        cwd=setup,
        env={
            **env,
            "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "I6_RC_IMPORTS_CACHE": str(tmp_path / "import-cache"),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"url.{tmp_path / 'helpers'}.insteadOf",
            "GIT_CONFIG_VALUE_0": "https://example.org/test/helpers",
        },
        input="u\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = manager.stdout + manager.stderr
    assert "All output calculated" in log, log[-5000:]

    i6_rc_jobs = {"pip install": python.parents[1], "checkout beside recipe": setup / "i6_rc_jobs-src"}[way]
    homes = {"i6_core": "recipe", "returnn": "tools/returnn", "returnn_common": "recipe", "sisyphus": "tools/sisyphus"}
    for package in PACKAGES:
        home = i6_rc_jobs if package == "i6_rc_jobs" else setup / homes[package]
        (line,) = [line for line in manager.stdout.splitlines() if line.startswith(f"manager imports {package} ")]
        assert Path(line.split(" from ")[1]).resolve().is_relative_to(home.resolve()), line
    config = (setup / "output" / "returnn.config").resolve()
    assert config.read_text().startswith("#!rnn.py") and "def describe():" in config.read_text()
    job_save = gzip.decompress((config.parents[1] / "job.save").read_bytes())
    assert b"i6_rc_jobs.versioned.example_org.test.helpers.c" in job_save  # one package: the worker found it
    (check_log,) = config.parents[1].glob("log.check_networks.1")
    assert f" from {setup / 'tools' / 'returnn'}\n" in check_log.read_text(), check_log.read_text()[-3000:]
    assert "epoch 1: RETURNN constructed" in check_log.read_text()
    learning_rates = (setup / "output" / "learning_rates").read_text()
    assert "dev_score" in learning_rates and "train_score" in learning_rates, learning_rates
    (train_log,) = (setup / "work" / "i6_core").rglob("log.run.1")
    assert f"Python {python}\n" in train_log.read_text(), train_log.read_text()[-3000:]  # RETURNN: tools/returnn's
    print(f"{way}: prepared in {prepared - start:.1f} s, sis manager {time.monotonic() - prepared:.1f} s")

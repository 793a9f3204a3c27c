"""The RETURNN a setup has: every RETURNN of ``returnn-range/`` (the oldest one written configs support and one in the
middle, each with the TensorFlow of its time in a Python of its own, made by ``./setup.sh --returnn-range``) checks and
trains for an epoch, in a real Sisyphus setup, the configs the pinned stack writes: the example's (returnn_common's
Conformer) and an LSTM (RETURNN compiles its NativeLstm2 op with g++). A RETURNN older than the range is refused by
the check in one line that names the range, with or without a version string."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from i6_rc_jobs._verify.returnn_check import OLDEST_RETURNN
from tests.support.sisyphus_setup import REPO, make_setup, run_manager

RANGE = sorted(path.stem for path in (REPO / "returnn-range").glob("*.txt"))
MODELS = ("conformer", "lstm")
pytestmark = pytest.mark.returnn_range
#: The last RETURNN before ``BehaviorVersion._get_state``, with which the check failed in an AttributeError.
TOO_OLD = "1b57b9498^"

CONFIG = """
from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, ReturnnCommonSerializer
from tests import rc_models

from . import task12ax


def main():
    conformer = task12ax.returnn_config()  # the example's, as it trains it
    extern_data, network = rc_models.task12ax_lstm()
    lstm = CheckedReturnnConfig(
        dict(conformer.config),
        python_prolog=[ReturnnCommonSerializer(extern_data=extern_data, network=network)],
        black_formatting=False,
    )
    for name, (root, python) in RETURNNS.items():
        returnn = {"returnn_root": tk.Path(root), "returnn_python_exe": tk.Path(python)}
        for model, config in (("conformer", conformer), ("lstm", lstm)) if python else ():
            check = CreateConfigJob(config, check=True, **returnn)
            check.add_alias(f"{name}/{model}/check")
            tk.register_output(f"{name}/{model}/returnn.config", check.out_config)
            train = ReturnnTrainingJob(
                config, num_epochs=1, device="cpu", cpu_rqmt=1, mem_rqmt=4, time_rqmt=1, **returnn
            )
            train.add_alias(f"{name}/{model}/train")
            tk.register_output(f"{name}/{model}/learning_rates", train.out_learning_rates)
        if not python:  # too old: only the check, with this Python
            check = CreateConfigJob(conformer, check=True, returnn_root=tk.Path(root))
            check.add_alias(f"{name}/check")
            tk.register_output(f"{name}/returnn.config", check.out_config)
"""

# RETURNN before 2026-01-02 (a4fb6a911) ignores CUDA_VISIBLE_DEVICES="" and compiles its native ops with the nvcc it
# finds on PATH; DISABLE_CUDA=1 is its own switch for that. A cache of compiled ops of this setup's own: NativeLstm2 is
# compiled in every run.
SETTINGS_EXTRA = """
DEFAULT_ENVIRONMENT_SET["DISABLE_CUDA"] = "1"
DEFAULT_ENVIRONMENT_SET["RETURNN_CACHE_DIR"] = {cache!r}
"""


def _pin(name: str, package: str) -> str:
    """The version ``returnn-range/<name>.txt`` pins ``package`` to."""
    text = (REPO / "returnn-range" / f"{name}.txt").read_text()
    return re.search(rf"^{package}==(\S+)$", text, re.MULTILINE | re.IGNORECASE).group(1)


@pytest.fixture(scope="module")
def returnn_range() -> None:
    """The venvs and checkouts of the range (seconds when they are there)."""
    made = subprocess.run([str(REPO / "setup.sh"), "--returnn-range"], capture_output=True, text=True, timeout=1800)
    assert made.returncode == 0, made.stdout + made.stderr


@pytest.fixture(scope="module")
def setup(returnn_range, tmp_path_factory) -> Path:
    """One Sisyphus setup whose manager (the pinned stack) writes both configs, and checks and trains them with every
    RETURNN of the range; and checks the example's with a RETURNN too old, from git and from a copy without .git."""
    libraries = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    assert re.search(r"\slibblas\.so \(", libraries), (
        "RETURNN before 2026-01-02 links NativeLstm2 for the CPU against the system's BLAS (-lblas): "
        "apt-get install libblas-dev"
    )
    tmp = tmp_path_factory.mktemp("returnn-range")
    too_old = tmp / "returnn-too-old"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO / ".deps" / "src" / "returnn"), str(too_old)])
    subprocess.run(["git", "-C", str(too_old), "checkout", "-q", "--detach", TOO_OLD], check=True)
    no_git = tmp / "returnn-too-old-no-git"
    shutil.copytree(too_old, no_git, ignore=shutil.ignore_patterns(".git"))
    returnns = {
        name: (str(REPO / ".deps" / "src" / f"returnn-{name}"), str(REPO / f".venv-returnn-{name}" / "bin" / "python"))
        for name in RANGE
    }
    returnns.update({"too-old": (str(too_old), ""), "too-old-no-git": (str(no_git), "")})
    directory = make_setup(tmp / "setup", f"RETURNNS = {returnns!r}\n" + textwrap.dedent(CONFIG))
    shutil.copy(REPO / "recipe_examples" / "config" / "task12ax.py", directory / "config")
    shutil.copytree(REPO / "recipe_examples" / "recipe", directory / "recipe")  # the example's model, as run.sh does
    with open(directory / "settings.py", "a") as settings:
        settings.write(SETTINGS_EXTRA.format(cache=str(tmp / "returnn-cache")))
    manager = run_manager(directory, timeout=1800)
    print(manager.stdout[-3000:], manager.stderr[-3000:], file=sys.stderr)
    return directory


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", RANGE)
def test_a_returnn_of_the_range_checks_and_trains_the_written_config(setup, name, model):
    alias = setup / "alias" / name / model
    version = f"RETURNN 1.{name.replace('-', '')}."
    check_log = (alias / "check" / "log.check_networks.1").read_text()
    assert f"{version}" in check_log and f"from {REPO}/.deps/src/returnn-{name}\n" in check_log, check_log[-3000:]
    assert re.search(r"^epoch 1: RETURNN constructed \d+ layers$", check_log, re.MULTILINE), check_log[-3000:]
    train_log = (alias / "train" / "log.run.1").read_text()
    assert f"RETURNN starting up, version 1.{name.replace('-', '')}." in train_log, train_log[:3000]
    assert f"TensorFlow: {_pin(name, 'tensorflow[-_]cpu')} " in train_log, train_log[:3000]
    if model == "lstm":  # RETURNN compiled NativeLstm2 for the CPU with g++, against this TensorFlow
        assert '"unit": "nativelstm2"' in (alias / "check" / "output" / "returnn.config").read_text()
        ops = (setup.parent / "returnn-cache").glob("returnn_tf_cache/ops/NativeLstm2/*/info.py")
        (info,) = [p for p in ops if f"/.venv-returnn-{name}/" in p.read_text()]
        assert re.search(r"'compiler_bin': '\S*g\+\+',", info.read_text()), info.read_text()
        assert "'with_cuda': False," in info.read_text() and (info.parent / "NativeLstm2.so").is_file()
    learning_rates = (setup / "output" / name / model / "learning_rates").read_text()
    assert re.search(r"^1: EpochData\(", learning_rates, re.MULTILINE), learning_rates
    assert "'dev_score'" in learning_rates and "'train_score'" in learning_rates, learning_rates


@pytest.mark.parametrize("name", ["too-old", "too-old-no-git"])
def test_a_returnn_older_than_the_range_is_refused_in_one_line_that_names_the_range(setup, name):
    job = setup / "alias" / name / "check"
    assert (job / "error.check_networks.1").exists() and (job / "output" / "returnn.config").exists()
    version = "1.0.0" if name.endswith("no-git") else "1.20230919.092759"
    line = (
        f"error: RETURNN {version} from {setup.parent / f'returnn-{name}'} is too old: i6_rc_jobs's written configs "
        f"and its check support RETURNN {OLDEST_RETURNN[1]} and later; give CreateConfigJob (and the training) "
        "returnn_root=... a newer RETURNN checkout"
    )
    log = (job / "log.check_networks.1").read_text()
    assert f"RuntimeError: CreateConfigJob check with {sys.executable}: {line}" in log, log[-3000:]
    assert "AttributeError" not in log and "Traceback" not in log.split(line)[0], log[-3000:]


def test_a_manager_with_a_returnn_older_than_the_serializer_reads_says_so_in_one_line(returnn_range):
    """The RETURNN that trains may be of the range; the one the manager converts dims with may not: a setup whose
    recipe/returnn is that RETURNN builds its model with returnn_common, and the serializer says what to do."""
    oldest = REPO / ".deps" / "src" / f"returnn-{RANGE[0]}"
    code = "from tests import rc_models\nfrom i6_rc_jobs import ReturnnCommonSerializer\n"
    code += "extern_data, network = rc_models.task12ax_lstm()\n"
    code += "ReturnnCommonSerializer(extern_data=extern_data, network=network)\n"
    env = dict(os.environ, PYTHONPATH=f"{oldest}:{REPO}")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1
    line = re.escape(
        "ImportError: the serializer reads dims as RETURNN 2026-07-29 (823b520e5) and later make them (bounded_by, "
        f"derived capacities), but the manager imports RETURNN 1.{RANGE[0].replace('-', '')}.HHMMSS from {oldest}: "
        "give the manager (recipe/returnn) a RETURNN of then or later; the one that trains (returnn_root) may be older"
    ).replace("HHMMSS", r"\d{6}")
    assert re.fullmatch(line, done.stderr.strip().splitlines()[-1]), done.stderr[-3000:]

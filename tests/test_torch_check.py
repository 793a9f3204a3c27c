"""The torch check (``torch_check.py CONFIG``, what ``CreateConfigJob(check=True)`` runs for a PyTorch config), with
real torch and RETURNN: a failure is said in one line naming the stage and the frame of the user's code; a forward
config runs one batch through ``forward_step`` with its ``forward_callback``. And what the manager refuses before any
check: a raw RETURNN Dim in a PyTorch config, a module RETURNN or Sisyphus's workers would not find."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from i6_core.returnn.config import ReturnnConfig
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, ReturnnConfigSerializer, SerializationError
from i6_rc_jobs._verify import torch_check
from i6_rc_jobs.jobs.config_file import write_config_file
from tests.support import torch_check_models as models
from tests.support.sisyphus_setup import REPO

MODELS = Path(models.__file__)
TASK12AX = {"class": "Task12AXDataset", "num_seqs": 10}


def _values(*, fail: bool = False, **overrides: Any) -> dict[str, Any]:
    time_dim, in_dim, classes_dim = Dim(None, name="time"), Dim(9, name="input"), Dim(2, name="classes")
    values = {
        "extern_data": {
            "data": {"dims": [batch_dim, time_dim, in_dim], "dtype": "float32"},
            "classes": {"dims": [batch_dim, time_dim], "sparse_dim": classes_dim, "dtype": "int32"},
        },
        "get_model": functools.partial(models.Model, in_dim, classes_dim, fail=fail),
        "train_step": models.train_step,
    }
    return {key: value for key, value in {**values, **overrides}.items() if value is not None}


def _check(tmp_path: Path, values: dict[str, Any], **config: Any) -> subprocess.CompletedProcess:
    """Writes the config as CreateConfigJob does and runs the check on it, as CreateConfigJob does."""
    options = {"backend": "torch", "behavior_version": 21, "batch_size": 1000, "optimizer": {"class": "adam"}}
    serializer = ReturnnConfigSerializer(values, sys_path=[str(REPO)])
    returnn_config = CheckedReturnnConfig({**options, **config}, python_prolog=[serializer])
    write_config_file(returnn_config, str(tmp_path / "returnn.config"))
    command = [sys.executable, torch_check.__file__, str(tmp_path / "returnn.config")]
    return subprocess.run(command + ["--report", str(tmp_path / "report.json")], capture_output=True, text=True)


def _line(done: subprocess.CompletedProcess) -> str:
    """The check's one line: all it writes to stderr."""
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stdout[-3000:] + done.stderr
    return done.stderr.strip()


@pytest.mark.slow
def test_a_model_failing_while_it_is_built_is_said_with_its_stage_and_frame(tmp_path):
    line = _line(_check(tmp_path, _values(fail=True), train=TASK12AX))
    assert re.search(
        rf"construct model fails at {MODELS}:\d+ in __init__: ValueError: this model cannot be built$", line
    )


@pytest.mark.slow
def test_a_failing_train_step_is_said_with_its_stage_and_frame_and_the_whole_traceback_on_stdout(tmp_path):
    done = _check(tmp_path, _values(train_step=models.train_step_on_torch_tensors), train=TASK12AX)
    line = _line(done)
    assert re.search(rf"train step fails at {MODELS}:\d+ in train_step_on_torch_tensors: AttributeError: ", line)
    assert line.endswith("'Tensor' object has no attribute 'dims'")
    assert "Traceback (most recent call last)" in done.stdout and "Module call stack" in done.stdout


@pytest.mark.slow
def test_a_failing_forward_step_is_said_with_its_stage_and_frame(tmp_path):
    values = _values(train_step=None, forward_step=models.forward_step_on_torch_tensors)
    line = _line(_check(tmp_path, {**values, "forward_callback": models.WriteShapes}, forward_data=TASK12AX))
    assert re.search(rf"forward step fails at {MODELS}:\d+ in forward_step_on_torch_tensors: AttributeError: ", line)


@pytest.mark.slow
def test_an_extern_data_that_returnn_cannot_read_is_named_with_its_line_and_the_failing_assertion(tmp_path):
    values = _values()
    values["extern_data"]["data"]["shape"] = (None, 9)  # beside dims: what older serializations wrote
    line = _line(_check(tmp_path, values, train=TASK12AX))
    config = tmp_path / "returnn.config"
    (number,) = [i for i, text in enumerate(config.read_text().splitlines(), 1) if text.startswith("extern_data =")]
    assert f"extern_data fails at {config}:{number}: RETURNN cannot read extern_data['data']: AssertionError: " in line
    assert 'assert "shape" not in kwargs' in line  # (the assertion has no message: its line says what failed)


@pytest.mark.slow
def test_a_forward_config_runs_one_batch_through_forward_step_and_its_callback(tmp_path):
    values = {**_values(train_step=None, forward_step=models.forward_step), "forward_callback": models.WriteShapes}
    done = _check(tmp_path, values, forward_data=TASK12AX)
    assert done.returncode == 0 and done.stderr == "", done.stdout[-3000:] + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["num_parameters"] == 20 and "losses" not in report
    (shape,) = report["outputs"].values()
    assert shape[1] == 2  # (time, classes) of the first sequence
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report.json", "returnn.config"]  # no shapes.txt
    values.pop("forward_callback")
    without = _check(tmp_path, values, forward_data=TASK12AX)
    assert "load config fails: the config has forward_step but no forward_callback" in _line(without)


def test_a_raw_dim_in_a_torch_config_is_refused_with_the_serializer_for_it():
    extern_data = {"data": {"dims": [batch_dim, Dim(None, name="time")], "dtype": "float32"}}
    with pytest.raises(SerializationError, match=r"\['dims'\]\[1\].*ReturnnConfigSerializer in python_prolog") as e:
        CreateConfigJob(ReturnnConfig({"backend": "torch", "extern_data": extern_data}))
    assert "ReturnnCommonSerializer is for net dicts" in str(e.value)


def test_a_module_returnn_or_the_workers_would_not_find_is_named_when_the_config_is_made(tmp_path, monkeypatch):
    (tmp_path / "elsewhere_model.py").write_text("def train_step(**_kwargs):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # as a setup's config that extends sys.path itself
    from elsewhere_model import train_step  # type: ignore[import-not-found]

    with pytest.raises(SerializationError, match=rf"'elsewhere_model'.*finds it nowhere.*sys_path=\['{tmp_path}'\]"):
        CheckedReturnnConfig({"backend": "torch"}, python_prolog=[ReturnnConfigSerializer({"train_step": train_step})])
    given = ReturnnConfigSerializer({"train_step": train_step}, sys_path=[str(tmp_path)])
    with pytest.raises(SerializationError, match="only through a sys.path entry that this process added"):
        CreateConfigJob(ReturnnConfig({"backend": "torch"}, python_prolog=[given]))


@pytest.mark.slow
def test_a_torch_config_without_backend_gets_torch_advice_from_the_net_dict_check(tmp_path):
    """Without ``backend``, CreateConfigJob runs the net-dict check, which must not ask for ``use_tensorflow``."""
    from i6_rc_jobs._verify import returnn_check

    serializer = ReturnnConfigSerializer(_values(), sys_path=[str(REPO)])
    write_config_file(CheckedReturnnConfig({"train": TASK12AX}, python_prolog=[serializer]), str(tmp_path / "c"))
    done = subprocess.run([sys.executable, returnn_check.__file__, str(tmp_path / "c")], capture_output=True, text=True)
    last = done.stderr.strip().splitlines()[-1]
    assert "a PyTorch config (it has get_model, train_step) needs 'backend': 'torch'" in last
    assert "use_tensorflow" not in last

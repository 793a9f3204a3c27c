"""``python -m i6_rc_jobs same-model A B``, as a user runs it on two written configs: real RETURNN builds both."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs.serializers import ReturnnConfigSerializer
from i6_rc_jobs.jobs.config_file import CheckedReturnnConfig, write_config_file
from tests.support.sisyphus_setup import REPO
from tests.test_graph_rules import CASES, EXTERN_DATA

pytestmark = pytest.mark.slow  # each runs RETURNN twice in a process of its own


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "same-model", *args], cwd=cwd, capture_output=True, text=True, env=env
    )


def write(path: Path, network: dict) -> str:
    path.write_text(ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=network).get())
    return str(path)


def test_same_model_tells_a_renamed_layer_from_another_activation(tmp_path: Path):
    net, renamed, other = CASES["layer-names"]
    a, b, c = (write(tmp_path / f"{name}.config", n) for name, n in (("a", net), ("b", renamed), ("c", other)))
    same = run(a, b, cwd=tmp_path)
    assert (same.returncode, same.stdout, same.stderr) == (0, "same model\n", ""), same.stderr[-2000:]
    differ = run(a, c, cwd=tmp_path)
    assert differ.returncode == 1 and differ.stdout.startswith("output differs: max abs diff "), differ.stderr[-2000:]
    assert differ.stderr == ""  # what RETURNN and TensorFlow print is kept back


def test_same_model_tells_losses_apart_unless_asked_for_the_model_alone(tmp_path: Path):
    net, _, _ = CASES["unset-options"]
    renamed = {**{k: v for k, v in net.items() if k != "loss"}, "ce": net["loss"]}
    a, b = write(tmp_path / "a.config", net), write(tmp_path / "b.config", renamed)
    differ = run(a, b, cwd=tmp_path)
    assert (differ.returncode, differ.stdout) == (1, "losses ['loss'] != ['ce']\n"), differ.stderr[-2000:]
    assert run(a, b, "--model-only", cwd=tmp_path).returncode == 0


def test_same_model_compares_training_when_asked(tmp_path: Path):
    """Dropout changes nothing the eval judge sees; with --training, the train-mode output tells it apart."""
    net, _, _ = CASES["layer-names"]
    first = next(name for name, layer in net.items() if layer.get("class") not in (None, "copy"))
    with_dropout = {**net, first: {**net[first], "dropout": 0.5}}
    a, b = write(tmp_path / "a.config", net), write(tmp_path / "b.config", with_dropout)
    same = run(a, b, cwd=tmp_path)
    assert (same.returncode, same.stdout) == (0, "same model\n"), same.stderr[-2000:]
    differ = run(a, b, "--training", cwd=tmp_path)
    assert differ.returncode == 1 and "training: train-mode output differs" in differ.stdout, differ.stderr[-2000:]
    assert run(a, a, "--training", cwd=tmp_path).returncode == 0


def test_same_model_says_a_bad_config_in_one_line(tmp_path: Path):
    good = write(tmp_path / "a.config", CASES["layer-names"][0])
    (tmp_path / "broken.config").write_text("network = {'output': {'class': 'no_such_layer', 'from': 'data'}}\n")
    for bad, says in (("missing.config", "FileNotFoundError"), ("broken.config", "broken.config: ")):
        done = run(good, bad, cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == "", done.stderr[-2000:]
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"same-model: {bad}: ") and says in last
    built = run(good, "broken.config", cwd=tmp_path).stderr  # what RETURNN printed, shown before the line
    assert "--- what RETURNN printed ---\n" in built and "\n--- end of what RETURNN printed ---\n" in built
    assert "layer /'output'" in built.split("--- end of")[0], built[-2000:]


def test_same_model_compares_staged_networks_stage_by_stage(tmp_path: Path):
    net, renamed, other = CASES["layer-names"]

    def staged(name: str, stages: dict) -> str:
        path = tmp_path / f"{name}.config"
        path.write_text(ReturnnCommonSerializer(extern_data=EXTERN_DATA, staged_networks=stages).get())
        return str(path)

    a, b = staged("a", {1: net, 5: net}), staged("b", {1: renamed, 5: other})
    differ = run(a, b, cwd=tmp_path)
    assert differ.returncode == 1, differ.stderr[-2000:]
    assert differ.stdout.startswith("stage from epoch 5: output differs: max abs diff "), differ.stdout
    assert "stage from epoch 1" not in differ.stdout and differ.stderr == ""
    same = run(a, staged("c", {1: renamed, 5: renamed}), cwd=tmp_path)
    assert (same.returncode, same.stdout) == (0, "same model\n"), same.stderr[-2000:]
    unstaged = run(a, write(tmp_path / "d.config", net), cwd=tmp_path)
    assert (unstaged.returncode, unstaged.stdout) == (
        1,
        "networks ['stage from epoch 1', 'stage from epoch 5'] != ['network']\n",
    )
    (tmp_path / "e.config").write_text("def get_network(epoch, **kwargs):\n    return {}\n")
    unknown = run(a, str(tmp_path / "e.config"), cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.stderr.strip().splitlines()[-1] == (
        f"same-model: {tmp_path / 'e.config'}: ValueError: get_network has no 'if epoch >= N:', so its stages are "
        "unknown (write it as the serializer does)"
    )


def write_torch(path: Path, **change) -> str:
    """The example's RETURNN-frontend config (PyTorch backend), with ``change`` to its model or train step."""
    sys.path.insert(0, str(REPO / "recipe_examples" / "recipe"))
    import task12ax_rf_model

    values = task12ax_rf_model.config_values()
    values["get_model"] = functools.partial(values["get_model"], **change.pop("model", {}))
    values.update(change)
    recipe = os.path.dirname(task12ax_rf_model.__file__)
    serializer = ReturnnConfigSerializer(values, sys_path=[recipe, str(REPO)])
    # As in the example setup, whose recipe/ Sisyphus's workers find, with this repository on their PYTHONPATH
    # (the tests' train steps).
    with contextlib.chdir(REPO / "recipe_examples"), mock.patch.dict(os.environ, PYTHONPATH=str(REPO)):
        config = CheckedReturnnConfig({"backend": "torch", "behavior_version": 21}, python_prolog=[serializer])
    write_config_file(config, str(path))
    return str(path)


def test_same_model_compares_torch_configs_by_parameters_and_losses_with_equal_parameters(tmp_path: Path):
    from tests.support.rf_steps import train_step_smoothed

    a = write_torch(tmp_path / "a.config")
    b = write_torch(tmp_path / "b.config", model={"num_heads": 4})  # the default, spelled out
    heads = write_torch(tmp_path / "heads.config", model={"num_heads": 2})
    smoothed = write_torch(tmp_path / "smoothed.config", train_step=train_step_smoothed)
    same = run(a, b, cwd=tmp_path)
    assert (same.returncode, same.stdout) == (0, "same model\n"), same.stderr[-2000:]
    differ = run(a, heads, cwd=tmp_path)
    assert differ.returncode == 1, differ.stderr[-2000:]
    assert "parameter encoder.layers.0.self_att.pos_bias_u: [4, 8] != [2, 16]" in differ.stdout.splitlines()
    loss = run(a, smoothed, cwd=tmp_path)
    assert loss.returncode == 1 and loss.stdout.startswith("loss ce on the fixed batch"), loss.stdout
    assert run(a, smoothed, "--model-only", cwd=tmp_path).stdout == "same model\n"

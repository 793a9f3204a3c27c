"""``python -m i6_rc_jobs same-model A B``, as a user runs it on two written configs: real RETURNN builds both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from i6_rc_jobs import ReturnnCommonSerializer
from tests.test_graph_rules import CASES, EXTERN_DATA


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

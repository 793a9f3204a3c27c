"""
Check that a written PyTorch (or RETURNN-frontend on torch) config trains: RETURNN's torch engine loads it as
``rnn.py`` does, builds the model with ``get_model`` on CPU and runs one training step (losses, backward pass,
optimizer step) on the first batch of the config's ``train`` dataset. A config whose training would fail (a model
that does not build, a ``train_step`` that fails or marks no loss, a non-finite loss) fails here, in seconds, not
after a cluster queue wait. The model's parameters (name and shape) and their count are written as JSON.

Usage: ``python .../torch_check.py CONFIG --report REPORT.json`` in a Python with RETURNN and torch (it imports
nothing of i6_rc_jobs). Nothing is written next to the config: checkpoints and learning rates go to a temporary
directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any


class TrainingCheckError(Exception):
    """The config cannot be loaded, or its model cannot be built or trained one step."""


def check_training(config_file: str) -> dict[str, Any]:
    """Builds the model from ``config_file`` and trains it one step on CPU; returns the report: ``parameters`` (name ->
    shape), ``num_parameters`` (their element count) and ``losses`` (of the step)."""
    import returnn.__main__ as rnn

    with tempfile.TemporaryDirectory(prefix="torch_check.") as work:
        updates = {
            "task": "train",
            "device": "cpu",
            "num_epochs": 1,
            "model": os.path.join(work, "model"),
            "learning_rate_file": os.path.join(work, "learning_rates"),
            "dev": None,
            "eval_datasets": {},
            "torch_distributed": None,
            "watch_memory": False,
            "log": None,
        }
        try:
            rnn.init(config_filename=config_file, config_updates=updates)
        except Exception as exc:
            raise TrainingCheckError(f"rnn.py cannot load the config: {type(exc).__name__}: {exc}") from exc
        if rnn.config.value("backend", None) != "torch":
            raise TrainingCheckError(f"the config's backend is {rnn.config.value('backend', None)!r}, not 'torch'")
        engine = rnn.engine
        if rnn.train_data is None:
            raise TrainingCheckError("the config has no 'train' dataset to take a batch from")
        try:
            engine.init_train_from_config(rnn.config, rnn.train_data)
            model = engine.get_pt_model()
            parameters = {name: list(param.shape) for name, param in model.named_parameters()}
            first = next(iter(engine._train_dataloader), None)
            if first is None:
                raise TrainingCheckError("the train dataset gives no batch")
            engine._train_dataloader = [first]  # train() runs its epoch over exactly this batch
            engine.train()
        except TrainingCheckError:
            raise
        except Exception as exc:
            raise TrainingCheckError(f"training one step fails: {type(exc).__name__}: {exc}") from exc
        scores = engine.learning_rate_control.epoch_data[1].error
        rnn.finalize()
    return {
        "parameters": parameters,
        "num_parameters": sum(_prod(shape) for shape in parameters.values()),
        "losses": {name: float(value) for name, value in sorted(scores.items())},
    }


def _prod(shape: list[int]) -> int:
    out = 1
    for size in shape:
        out *= size
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--report", required=True, help="where the JSON report is written")
    args = parser.parse_args(argv)
    try:
        report = check_training(args.config)
    except TrainingCheckError as exc:
        print(f"{args.config}: {exc}", file=sys.stderr)
        return 1
    with open(args.report + ".tmp", "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    os.replace(args.report + ".tmp", args.report)
    names = ", ".join(f"{name} {shape}" for name, shape in sorted(report["parameters"].items()))
    print(f"{args.config}: {report['num_parameters']} parameters ({names}); one step: {report['losses']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

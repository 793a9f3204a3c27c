"""``python -m i6_rc_jobs same-model A B``: whether two RETURNN configs define the same model (e.g. the
``returnn.config`` of two CreateConfigJobs, before and after a returnn_common update), judged by RETURNN itself: each
network (each stage of staged networks) is built with TensorFlow, and their TF variables, initializers, outputs on one fixed input (variables set by
their names), reported losses (score keys and values) and the data keys each network uses are compared; with ``--training``, also what shows only in
training (:mod:`i6_rc_jobs._verify.training_semantics`: trainable variables, initial values as RETURNN draws them, train-mode
output, losses, objective and gradients). Prints ``same model`` or one line per
difference; a config that cannot be read or built is said in one line, after what RETURNN printed (kept back
otherwise). Needs RETURNN and TensorFlow: run it with the Python of your setup, from the setup directory (RETURNN is
taken from ``tools/returnn`` if it is not installed). Configs with ``backend = "torch"`` are compared by building their
models with RETURNN's torch engine instead (needs torch): parameter names and shapes, and the losses ``train_step``
marks on one fixed batch with parameters set by their names."""

from __future__ import annotations

import argparse
import os
import sys

from i6_rc_jobs._cli.command import ExitStatus, command_parser
from i6_rc_jobs._cli.setup_paths import importable

EXAMPLE = "before/returnn.config after/returnn.config"


class _Unreadable(Exception):
    """A config that cannot be read or built, said in one line: which, and why."""

    def __init__(self, path: str, error: Exception):
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        super().__init__(f"{path}: {type(error).__name__}: {message}")


class Exit(ExitStatus):
    SAME = 0, "same model"
    DIFFERENT = 1, "the models differ (one line per difference)"
    UNUSABLE = 2, "a config could not be read or built, or RETURNN cannot be imported"


def parser() -> argparse.ArgumentParser:
    parser = command_parser(__name__, Exit, EXAMPLE)
    parser.add_argument("configs", nargs=2, metavar="CONFIG", help="a RETURNN config file (config.py as written)")
    parser.add_argument(
        "--model-only", action="store_true", help="compare the model alone: parameters, initializers, output"
    )
    parser.add_argument(
        "--training",
        action="store_true",
        help="also compare what shows only in training: trainable variables, initial values, objective, gradients",
    )
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if not importable("returnn", [os.path.join("tools", "returnn")]):
        print(
            f"same-model: cannot import returnn (not installed, and no tools/returnn in {os.getcwd()}): run it from "
            "the setup directory, or put RETURNN on PYTHONPATH",
            file=sys.stderr,
        )
        return Exit.UNUSABLE
    from i6_rc_jobs._verify.returnn_check import output_kept, say_stale_locks
    from i6_rc_jobs._verify.semantics import differences, fingerprints, pinned_code_forgotten
    from i6_rc_jobs._verify.torch_semantics import is_torch_config, torch_fingerprint
    from i6_rc_jobs._verify.training_semantics import training_differences, training_fingerprints

    say_stale_locks()
    prints: list = []
    torch: list[bool] = []
    try:
        with output_kept():  # RETURNN prints every layer it builds, and its DEPRECATION warnings: shown on failure
            for path in args.configs:
                try:
                    with open(path) as file:
                        code = file.read()
                    with pinned_code_forgotten():  # each config builds its own pinned model code
                        torch.append(is_torch_config(code))
                        if torch[-1]:
                            prints.append((torch_fingerprint(code), {}))
                        else:
                            prints.append((fingerprints(code), training_fingerprints(code) if args.training else {}))
                except Exception as e:  # a file that is no config, a net RETURNN refuses: one line, which and why
                    raise _Unreadable(path, e) from e
    except _Unreadable as unreadable:
        print(f"same-model: {unreadable}", file=sys.stderr)
        return Exit.UNUSABLE
    (ours, ours_training), (theirs, theirs_training) = prints
    if torch[0] != torch[1]:
        found = [f"backend: {'torch' if torch[0] else 'TensorFlow'} != {'torch' if torch[1] else 'TensorFlow'}"]
    elif torch[0]:
        found = ours.differences(theirs, losses=not args.model_only)
    else:
        found = differences(ours, theirs, losses=not args.model_only)
    found += [
        f"training: {line}" if name == "network" else f"{name}: training: {line}"
        for name in sorted(ours_training.keys() & theirs_training.keys())
        for line in training_differences(ours_training[name], theirs_training[name])
    ]
    print("\n".join(found) if found else "same model")
    return Exit.DIFFERENT if found else Exit.SAME

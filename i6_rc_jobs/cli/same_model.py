"""``python -m i6_rc_jobs same-model A B``: whether two RETURNN configs (e.g. the ``returnn.config`` of two
CreateConfigJobs, before and after a returnn_common update) define the same model, judged by RETURNN itself: each
network is built with TensorFlow, and their TF variables, initializers, outputs on one fixed input (variables set by
their names) and reported losses (score keys and values) are compared. Prints ``same model`` (exit status 0) or one
line per difference (exit status 1); a config that cannot be read or built is said in one line (exit status 2), after
what RETURNN printed (kept back otherwise).
Needs RETURNN and TensorFlow: run it with the Python of your setup, from the setup directory (RETURNN is taken from
``tools/returnn`` if it is not installed)."""

from __future__ import annotations

import argparse
import os
import sys

from .setup_paths import importable


class _Unreadable(Exception):
    """A config that cannot be read or built, said in one line: which, and why."""

    def __init__(self, path: str, error: Exception):
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        super().__init__(f"{path}: {type(error).__name__}: {message}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m i6_rc_jobs same-model", description=__doc__.split(":", 1)[1])
    parser.add_argument("configs", nargs=2, metavar="CONFIG", help="a RETURNN config file (config.py as written)")
    parser.add_argument(
        "--model-only", action="store_true", help="compare the model alone: parameters, initializers, output"
    )
    args = parser.parse_args(argv)
    if not importable("returnn", [os.path.join("tools", "returnn")]):
        print(
            f"same-model: cannot import returnn (not installed, and no tools/returnn in {os.getcwd()}): run it from "
            "the setup directory, or put RETURNN on PYTHONPATH",
            file=sys.stderr,
        )
        return 2
    from ..returnn_check import output_kept
    from ..semantics import fingerprint

    prints = []
    try:
        with output_kept():  # RETURNN prints every layer it builds, and its DEPRECATION warnings: shown on failure
            for path in args.configs:
                try:
                    with open(path) as file:
                        code = file.read()
                    prints.append(fingerprint(code))
                except Exception as e:  # a file that is no config, a net RETURNN refuses: one line, which and why
                    raise _Unreadable(path, e) from e
    except _Unreadable as unreadable:
        print(f"same-model: {unreadable}", file=sys.stderr)
        return 2
    differences = prints[0].differences(prints[1], losses=not args.model_only)
    print("\n".join(differences) if differences else "same model")
    return 1 if differences else 0

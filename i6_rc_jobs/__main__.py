"""``python -m i6_rc_jobs <command> ...``, or ``i6-rc <command> ...`` (the console script of an installed package)."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys

if not __package__:  # run as ``python recipe/i6_rc_jobs ...``: Python put the package's own directory on sys.path
    sys.path[0] = os.path.dirname(os.path.abspath(sys.path[0]))  # its parent instead, where i6_rc_jobs is found

COMMANDS = {
    "hash-diff": "i6_rc_jobs._cli.hash_diff",
    "fetch": "i6_rc_jobs._cli.fetch",
    "prefetch": "i6_rc_jobs._cli.prefetch",
    "ide-paths": "i6_rc_jobs._cli.ide_paths",
    "same-model": "i6_rc_jobs._cli.same_model",
    "builds": "i6_rc_jobs._cli.builds",
}


USAGE = "usage: python -m i6_rc_jobs <command> [options] (or: i6-rc <command> [options])"


def summary(command: str) -> str:
    """The command's module docstring after the usage it starts with, up to its first comma, colon, parenthesis or
    sentence end: one line, read without importing the command (some import TensorFlow)."""
    spec = importlib.util.find_spec(COMMANDS[command])
    assert spec is not None and spec.origin is not None, COMMANDS[command]  # (a module of this package)
    with open(spec.origin) as file:
        doc = ast.get_docstring(ast.parse(file.read()))
    assert doc is not None, f"{COMMANDS[command]} has no docstring"
    return re.split(r"[,:;(]|\. ", " ".join(doc.split(":", 1)[1].split()), maxsplit=1)[0].strip(" .").replace("``", "")


def help_text() -> str:
    """The usage and a line per command, as ``--help`` prints it."""
    lines = [USAGE, "", "commands:"] + [f"  {name:<12}{summary(name)}" for name in COMMANDS]
    return "\n".join(lines + ["", "python -m i6_rc_jobs <command> --help: its options, exit statuses and an example"])


def main(argv: list[str]) -> int:
    """Runs the command ``argv`` names; ``--help`` lists the commands (exit status 0), no or an unknown command
    lists them too, as an error (exit status 2)."""
    if argv and argv[0] in ("-h", "--help"):
        print(help_text())
        return 0
    if not argv or argv[0] not in COMMANDS:
        said = f"unknown command {argv[0]!r}\n" if argv else ""
        print(said + help_text(), file=sys.stderr)
        return 2

    try:
        status = importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # the reader stopped reading (``hash-diff A B | head``): no traceback for that
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that Python's exit flushes nowhere
        return 1


def cli() -> int:
    """The console script ``i6-rc``."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(cli())

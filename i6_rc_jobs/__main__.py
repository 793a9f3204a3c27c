"""``python -m i6_rc_jobs <command> ...``"""

from __future__ import annotations

import os
import sys

if not __package__:  # run as ``python recipe/i6_rc_jobs ...``: Python put the package's own directory on sys.path
    sys.path[0] = os.path.dirname(os.path.abspath(sys.path[0]))  # its parent instead, where i6_rc_jobs is found

COMMANDS = {
    "hash-diff": "i6_rc_jobs.cli.hash_diff",
    "fetch": "i6_rc_jobs.cli.fetch",
    "prefetch": "i6_rc_jobs.cli.prefetch",
    "ide-paths": "i6_rc_jobs.cli.ide_paths",
    "same-model": "i6_rc_jobs.cli.same_model",
    "builds": "i6_rc_jobs.cli.builds",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m i6_rc_jobs {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return 2
    import importlib

    try:
        status = importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # the reader stopped reading (``hash-diff A B | head``): no traceback for that
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that Python's exit flushes nowhere
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

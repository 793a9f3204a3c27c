"""``python -m i6_rc_jobs <command> ...``"""

from __future__ import annotations

import sys

COMMANDS = {"hash-diff": "i6_rc_jobs.cli.hash_diff", "fetch": "i6_rc_jobs.cli.fetch"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m i6_rc_jobs {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return 2
    import importlib

    return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

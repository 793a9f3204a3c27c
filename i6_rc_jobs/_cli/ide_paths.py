"""``python -m i6_rc_jobs ide-paths DIR [PATH ...]``: makes DIR a directory to add to an IDE's or a static
analyzer's paths (before any other place i6_rc_jobs is found in), in which versioned modules are found by their
names, ``i6_rc_jobs.versioned.<host>.<owner>.<name>.c<commit>...``: the versions the import_ calls in the PATHs name
(fetched as by prefetch, with its listing), or without PATHs every version in the import cache.
Prints each version's package name, the one to import from in code an IDE is to follow."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from i6_rc_jobs._imports.cache import cache_root
from i6_rc_jobs._imports.ide import cached_versions, lay_out
from i6_rc_jobs._cli.command import ExitStatus, command_parser
from i6_rc_jobs._cli.prefetch import prefetch

EXAMPLE = "~/ide-paths config"


class Exit(ExitStatus):
    DONE = 0, "DIR holds every version named (or cached)"
    UNRESOLVED = 1, "as prefetch: some import_ calls in the PATHs could not be resolved"
    ERROR = 2, "as prefetch, or DIR holds a file where a version's package is to go"


def parser() -> argparse.ArgumentParser:
    parser = command_parser(__name__, Exit, EXAMPLE)
    parser.add_argument("directory", type=Path, metavar="DIR", help="the directory to lay the versions out in")
    parser.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="a file or directory of *.py files with import_ calls"
    )
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.paths:
        graph, prefetched = prefetch(args.paths)
        versions, status = list(graph.versions.values()), Exit(prefetched.value)  # type: ignore[call-arg]  # by value
    else:
        versions, status = cached_versions(cache_root()), Exit.DONE
    try:
        names = lay_out(args.directory, versions)
    except FileExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return Exit.ERROR
    for name, fetched in names.items():
        print(f"{fetched.repo} {fetched.version}: {name}")
    print(f"{args.directory}: add it to the IDE's paths, before any other place i6_rc_jobs is found in")
    return status

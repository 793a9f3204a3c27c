"""``python -m i6_rc_jobs ide-paths DIR [PATH ...]``: makes DIR a directory to add to an IDE's or a static
analyzer's paths (before any other place i6_rc_jobs is found in), in which versioned modules are found by their
names, ``i6_rc_jobs.versioned.<host>.<owner>.<name>.c<commit>...``: the versions the import_ calls in the PATHs name
(fetched as by prefetch, with its listing and exit status), or without PATHs every version in the import cache.
Prints each version's package name, the one to import from in code an IDE is to follow."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..imports.cache import cache_root
from ..imports.ide import cached_versions, lay_out
from .prefetch import prefetch


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m i6_rc_jobs ide-paths", description=__doc__.split(":", 1)[1].strip()
    )
    parser.add_argument("directory", type=Path, metavar="DIR")
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    args = parser.parse_args(argv)
    if args.paths:
        graph, status = prefetch(args.paths)
        versions = list(graph.versions.values())
    else:
        versions, status = cached_versions(cache_root()), 0
    try:
        names = lay_out(args.directory, versions)
    except FileExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name, fetched in names.items():
        print(f"{fetched.repo} {fetched.version}: {name}")
    print(f"{args.directory}: add it to the IDE's paths, before any other place i6_rc_jobs is found in")
    return status

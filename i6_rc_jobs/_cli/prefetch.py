"""``python -m i6_rc_jobs prefetch [PATH ...]``: fetches into the import cache every version that the ``import_``
calls in the PATHs (files, or directories of ``*.py`` files; default ``config``, a Sisyphus setup's) name, without
running them, and the versions that the code of those versions names, so that nodes without network access find the
whole import graph in the cache. Lists each call found (file:line: repo path version) and each one whose arguments
the source does not tell (file:line: why)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from i6_rc_jobs._imports.cache import cache_root
from i6_rc_jobs._imports.static import Graph, fetch_graph, python_files
from i6_rc_jobs._cli.command import ExitStatus, command_parser

EXAMPLE = "config recipe/my_setup"


class Exit(ExitStatus):
    FETCHED = 0, "every version named was fetched"
    UNRESOLVED = 1, "some calls could not be resolved statically"
    ERROR = 2, "errors: a version or path that does not exist, a cache this user may not write"


def parser() -> argparse.ArgumentParser:
    parser = command_parser(__name__, Exit, EXAMPLE)
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        default=[Path("config")],
        metavar="PATH",
        help="a file or directory of *.py files with import_ calls",
    )
    return parser


def main(argv: list[str]) -> int:
    return prefetch(parser().parse_args(argv).paths)[1]


def prefetch(paths: list[Path]) -> tuple[Graph, Exit]:
    """Fetches the import graph of ``paths`` and prints it; the graph and the exit status."""
    missing = [path for path in paths if not path.exists()]
    for path in missing:
        print(f"error: {path}: no such file or directory", file=sys.stderr)
    root = cache_root()
    graph = fetch_graph([file for path in paths if path.exists() for file in python_files(path)], root)
    for call in graph.calls:
        print(f"{call.file}:{call.line}: {call.repo} {call.path} {call.version}")
    for unresolved in graph.unresolved:
        print(f"{unresolved.file}:{unresolved.line}: not resolved statically: {unresolved.reason}")
    for error in graph.errors:
        print(f"error: {error}", file=sys.stderr)
    print(
        f"{len(graph.calls)} calls of import_, {len(graph.versions)} versions in the cache {root}, "
        f"{len(graph.unresolved)} not resolved statically, {len(graph.errors) + len(missing)} errors"
    )
    return graph, Exit.ERROR if graph.errors or missing else Exit.UNRESOLVED if graph.unresolved else Exit.FETCHED

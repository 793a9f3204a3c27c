"""``python -m i6_rc_jobs prefetch [PATH ...]``: fetches into the import cache every version that the ``import_``
calls in the PATHs (files, or directories of ``*.py`` files; default ``config``, a Sisyphus setup's) name, without
running them, and the versions that the code of those versions names, so that nodes without network access find the
whole import graph in the cache. Lists each call found (file:line: repo path version) and each one whose arguments
the source does not tell (file:line: why). Exit status 0 if all were fetched, 1 if some calls could not be resolved,
2 on errors (a version or path that does not exist, a cache this user may not write)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..imports.cache import cache_root
from ..imports.static import Graph, fetch_graph, python_files


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m i6_rc_jobs prefetch", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("paths", nargs="*", type=Path, default=[Path("config")], metavar="PATH")
    return prefetch(parser.parse_args(argv).paths)[1]


def prefetch(paths: list[Path]) -> tuple[Graph, int]:
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
    return graph, 2 if graph.errors or missing else 1 if graph.unresolved else 0

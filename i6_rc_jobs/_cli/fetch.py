"""``python -m i6_rc_jobs fetch REPO VERSION [REPO VERSION ...]``: puts versions into the import cache ahead of
time, e.g. on a login node before jobs run on nodes that cannot reach the repositories."""

from __future__ import annotations

import argparse
import sys

from i6_rc_jobs._imports.cache import RepoCache, cache_root
from i6_rc_jobs._imports.errors import CacheNotWritableError, VersionedImportError
from i6_rc_jobs._imports.names import Repo, Version
from i6_rc_jobs._cli.command import ExitStatus, command_parser

EXAMPLE = "github.com/rwth-i6/returnn_common 20221031-3bd01ac8d7b2"


class Exit(ExitStatus):
    FETCHED = 0, "every version is in the cache"
    FAILED = 1, "a version could not be fetched"
    NOT_WRITABLE = 2, "a version could not be fetched because the cache is not writable for this user"


def parser() -> argparse.ArgumentParser:
    parser = command_parser(__name__, Exit, EXAMPLE)
    parser.add_argument(
        "pairs", nargs="+", metavar="REPO VERSION", help="e.g. github.com/rwth-i6/returnn_common 20221031-3bd01ac8d7b2"
    )
    return parser


def main(argv: list[str]) -> int:
    command = parser()
    args = command.parse_args(argv)
    if len(args.pairs) % 2:
        command.error("give a VERSION for every REPO")
    root = cache_root()
    status = Exit.FETCHED
    for repo, version in zip(args.pairs[::2], args.pairs[1::2]):
        try:
            tree, commit = RepoCache(root, Repo.parse(repo)).tree(Version.parse(version))
        except VersionedImportError as e:
            print(f"error: {e}", file=sys.stderr)
            status = max(status, Exit.NOT_WRITABLE if isinstance(e, CacheNotWritableError) else Exit.FAILED)
            continue
        print(f"{repo} {version}: commit {commit} in {tree}")
    return status

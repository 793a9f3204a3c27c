"""``python -m i6_rc_jobs fetch REPO VERSION [REPO VERSION ...]``: puts versions into the import cache ahead of
time, e.g. on a login node before jobs run on nodes that cannot reach the repositories. Exit status 1 if a version
could not be fetched, 2 if that was because the cache is not writable for this user."""

from __future__ import annotations

import argparse
import sys

from ..imports.cache import RepoCache, cache_root
from ..imports.errors import CacheNotWritableError, VersionedImportError
from ..imports.names import Repo, Version


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m i6_rc_jobs fetch", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument(
        "pairs", nargs="+", metavar="REPO VERSION", help="e.g. github.com/rwth-i6/returnn_common 20221031-3bd01ac8d7b2"
    )
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        parser.error("give a VERSION for every REPO")
    root = cache_root()
    status = 0
    for repo, version in zip(args.pairs[::2], args.pairs[1::2]):
        try:
            tree, commit = RepoCache(root, Repo.parse(repo)).tree(Version.parse(version))
        except VersionedImportError as e:
            print(f"error: {e}", file=sys.stderr)
            status = max(status, 2 if isinstance(e, CacheNotWritableError) else 1)
            continue
        print(f"{repo} {version}: commit {commit} in {tree}")
    return status

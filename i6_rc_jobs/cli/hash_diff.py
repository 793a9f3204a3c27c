"""``python -m i6_rc_jobs hash-diff A B``: why two jobs or configs hash differently in Sisyphus."""

from __future__ import annotations

import argparse
import gzip
import os
import pickle
import sys
from typing import Any


class LoadError(Exception):
    """An input that is no job and no pickle: said in one line, apart from "the hashes differ"."""


def load(path: str) -> Any:
    """A Sisyphus job directory (its job.save, or the finished archive) or a pickle file, gzipped or not."""
    try:
        if os.path.isdir(path) or path.endswith(".tar.gz"):
            from sisyphus.toolkit import load_job

            return load_job(path)
        with open(path, "rb") as f:
            head = f.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as f:
            return pickle.load(f)
    except Exception as e:
        raise LoadError(f"{path}: cannot be loaded as a job or a pickle: {type(e).__name__}: {e}") from e


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m i6_rc_jobs hash-diff",
        description="Print why the Sisyphus hashes of A and B differ, as paths and values, or 'identical'. Exit "
        "status: 0 identical, 1 different, 2 an input could not be loaded.",
    )
    parser.add_argument("a", help="job directory, job.save, or pickled ReturnnConfig/ReturnnCommonSerializer")
    parser.add_argument("b", help="the same kinds as A")
    args = parser.parse_args(argv)

    from sisyphus.hash import sis_hash_helper

    from ..hashing.diff import explain

    try:
        a, b = load(args.a), load(args.b)
    except LoadError as e:
        print(f"hash-diff: {e}", file=sys.stderr)
        return 2
    lines = list(explain(a, b))
    if not lines and sis_hash_helper(a) != sis_hash_helper(b):
        lines = ["the hashes differ, but no part that differs was found (a hash() that hashes otherwise?)"]
    print("\n".join(lines) if lines else "identical")
    return 1 if lines else 0

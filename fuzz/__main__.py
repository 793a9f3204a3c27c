"""``.venv/bin/python -m fuzz``: the command line of the differential hash fuzzer (see :mod:`fuzz`)."""

from __future__ import annotations

import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
from typing import Optional  # noqa: E402

import fuzz  # noqa: E402

from .corpora import SUITES, cached, collect  # noqa: E402
from .runner import recheck, run  # noqa: E402


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=fuzz.__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--per-base", type=int, default=8)
    parser.add_argument("--build-moved", action="store_true", help="also build variants whose hashes both moved")
    parser.add_argument("--findings", type=pathlib.Path, help="write each new kind of counterexample here")
    parser.add_argument("--recheck", type=pathlib.Path, help="only re-check the findings written to this folder")
    for suite in SUITES.values():
        parser.add_argument(
            f"--{suite.name.lower().replace('_', '-')}-corpus",
            type=pathlib.Path,
            help=f"{suite.name}'s test models, a source of base nets (default: collected from the pinned checkout "
            "when first needed, then cached in .cache/fuzz/)",
        )
    parser.add_argument("--seconds", type=float, help="start no new base net after this long, then report")
    parser.add_argument("--corpus-share", type=float, default=0.25, help="the share of base nets taken from corpora")
    parser.add_argument(
        "--collect",
        choices=sorted(SUITES),
        help="only collect that suite's corpus anew into its --...-corpus or the cache (runs its tests: minutes)",
    )
    args = parser.parse_args(argv)
    given = {name: getattr(args, f"{name.lower()}_corpus") for name in SUITES}
    if args.recheck is not None:
        return 1 if recheck(args.recheck) else 0
    if args.collect:
        path = given[args.collect] or SUITES[args.collect].cache_path()
        count = collect(SUITES[args.collect], path)
        print(f"{count} configs of {args.collect}'s tests written to {path}")
        return 0
    # a corpus is collected only if bases are drawn from corpora
    paths = {name: path or cached(SUITES[name]) for name, path in given.items()} if args.corpus_share > 0 else {}
    report = run(
        args.seed,
        args.pairs,
        args.processes,
        args.per_base,
        args.build_moved,
        args.findings,
        corpora=tuple(paths.items()),
        corpus_share=args.corpus_share,
        seconds=args.seconds,
    )
    return 1 if report.counterexamples else 0


if __name__ == "__main__":
    sys.exit(main())

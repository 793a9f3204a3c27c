"""What the graph hash costs against the dict hash, measured in one run on the same serializer. Run from the
repository root:

    .venv/bin/python -m bench.graph_cost [--model transformer-24] [--reps 15]

Each repetition hashes the serializer afresh in both schemes (``serializer_sis_hash``, as a job's hash does for an
open serializer), and builds the graph alone (the part of the graph hash the dict hash does not have), interleaved so
that a burst of load on a shared machine hits all alike; prints the medians, the ratio and whether it is within the
target (graph / dict at most 2.0)."""

from __future__ import annotations

import os

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before anything imports TensorFlow (see bench/compare.py)
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import argparse  # noqa: E402
import logging  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

logging.disable(logging.WARNING)
import sisyphus.toolkit  # noqa: E402,F401  (in the main thread first, see bench/compare.py)

logging.disable(logging.NOTSET)

from bench import models  # noqa: E402
from bench.timing import Rep, measure_interleaved  # noqa: E402

TARGET = 2.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.graph_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="transformer-24", choices=sorted(models.MODEL_SPECS))
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)

    from i6_rc_jobs import ReturnnCommonSerializer
    from i6_rc_jobs._hashing.sis_hash import layer_graphs, serializer_sis_hash
    from i6_rc_jobs._serialization.values import gc_paused

    model = models.build(args.model)
    serializers = {
        scheme: ReturnnCommonSerializer(extern_data=model.extern_data, network=model.network, hash_scheme=scheme)
        for scheme in ("dict", "graph")
    }

    def method(scheme: str):
        def run(rep: Rep) -> None:
            with rep.step("hash"):
                rep.facts["hash"] = serializer_sis_hash(serializers[scheme]).decode()

        return run, ("hash",)

    def build(rep: Rep) -> None:
        with rep.step("build"), gc_paused():  # as the graph hash builds it
            layer_graphs(serializers["graph"])

    methods = {**{scheme: method(scheme) for scheme in serializers}, "build": (build, ("build",))}
    results = measure_interleaved(methods, reps=args.reps)
    dict_ms, graph_ms, build_ms = (results[name]["total_ms"] for name in ("dict", "graph", "build"))
    ratio = graph_ms / dict_ms
    print(
        f"{args.model}, {args.reps} repetitions (median): dict hash {dict_ms:.1f} ms, graph hash {graph_ms:.1f} ms "
        f"(building the graph alone: {build_ms:.1f} ms)"
    )
    print(f"graph / dict: {ratio:.2f} (target <= {TARGET}: {'PASS' if ratio <= TARGET else 'MISS'})")


if __name__ == "__main__":
    main()

"""One command, one process: ours vs the ways i6 recipes serialize returnn_common models today, on real models.
Run from the repository root:

    .venv/bin/python -m bench.compare [--quick] [--out bench/results/compare.json]
    .venv/bin/python -m bench.compare --profile transformer-24      # cProfile of our four steps instead

Prints a table per model, the ratios against the targets with PASS/MISS, and the cost per job of building many
CreateConfigJobs; writes all of it (every repetition's times included) to the JSON file."""

from __future__ import annotations

import os

# Before anything imports TensorFlow/RETURNN: no GPU, no CUDA op compilation, no TF log flood (see anchors.md).
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any, Optional  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # tests.rc_models holds the model builders

# Sisyphus must be imported in the main thread first (it sets up an event loop there). Its warning that there is
# no settings.py here is expected: the benchmark runs on Sisyphus' defaults, like a config outside a setup dir.
logging.disable(logging.WARNING)
import sisyphus.toolkit  # noqa: E402,F401

logging.disable(logging.NOTSET)

from bench import jobs, methods, models  # noqa: E402
from bench.timing import measure_interleaved  # noqa: E402

TRANSFORMERS = ("transformer-6", "transformer-12", "transformer-24")
JOBS_MODEL = "transformer-12"

#: target name -> (description, limit, direction): "min" means the ratio must be at least the limit.
TARGETS = {
    "a_speedup_vs_proxy": ("proxy way total / ours total", 5.0, "min"),
    "b_vs_repr": ("ours total / repr(raw)", 4.0, "max"),
    "c_pickle_bytes": ("pickled ReturnnConfig bytes (ours) / pickle.dumps(raw) bytes", 1.3, "max"),
    "d_growth": ("max/min of ours total per layer over transformer-6/12/24", 1.5, "max"),
}


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions and 50 jobs (under a minute)")
    parser.add_argument("--reps", type=int, help="timed repetitions per measurement (default 7, --quick 3)")
    parser.add_argument("--jobs", type=int, help="CreateConfigJobs per variant (default 500, --quick 50)")
    parser.add_argument("--models", nargs="+", choices=list(models.MODEL_SPECS), default=list(models.DEFAULT_MODELS))
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "compare.json"), help="JSON result file")
    parser.add_argument("--profile", metavar="MODEL", choices=list(models.MODEL_SPECS), help="only profile ours")
    parser.add_argument("--profile-reps", type=int, default=3)
    args = parser.parse_args(argv)
    args.reps = args.reps or (3 if args.quick else 7)
    args.jobs = args.jobs if args.jobs is not None else (50 if args.quick else 500)
    return args


def verdict(value: Optional[float], target: str) -> str:
    if value is None:
        return "n/a"
    _, limit, direction = TARGETS[target]
    return "PASS" if (value >= limit if direction == "min" else value <= limit) else "MISS"


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Targets (a)-(c) per model, (d) over the transformers; each with its PASS/MISS, and overall per target."""
    per_model = {}
    for name, res in results.items():
        ours, proxy, lower = res["ours"], res["proxy"], res["lower_bounds"]
        a = proxy["total_ms"] / ours["total_ms"] if ours["ok"] and proxy["ok"] else None
        b = ours["total_ms"] / lower["steps"]["repr"]["median_ms"] if ours["ok"] else None
        c = ours["facts"]["pickle_bytes"] / lower["facts"]["pickle_bytes"] if ours["ok"] else None
        per_model[name] = {
            "a_speedup_vs_proxy": a,
            "a_note": None if a is not None else f"proxy way failed: {proxy.get('error')}",
            "b_vs_repr": b,
            "c_pickle_bytes": c,
            "verdicts": {
                "a_speedup_vs_proxy": verdict(a, "a_speedup_vs_proxy"),
                "b_vs_repr": verdict(b, "b_vs_repr"),
                "c_pickle_bytes": verdict(c, "c_pickle_bytes"),
            },
        }
    growth = None
    present = [n for n in TRANSFORMERS if n in results and results[n]["ours"]["ok"]]
    if len(present) >= 2:
        per_layer = {n: results[n]["ours"]["total_ms"] / models.MODEL_SPECS[n][2] for n in present}
        first, last = present[0], present[-1]
        layers = models.MODEL_SPECS[first][2], models.MODEL_SPECS[last][2]
        totals = results[first]["ours"]["total_ms"], results[last]["ours"]["total_ms"]
        growth = {
            "ms_per_layer": per_layer,
            "max_over_min": max(per_layer.values()) / min(per_layer.values()),
            # log-log slope between the smallest and the largest: 1 is linear, 2 quadratic (< 1: fixed costs).
            "exponent": math.log(totals[1] / totals[0]) / math.log(layers[1] / layers[0]),
            "exponent_between": [first, last],
        }
        growth["verdict"] = verdict(growth["max_over_min"], "d_growth")
    overall = {}
    for target in ("a_speedup_vs_proxy", "b_vs_repr", "c_pickle_bytes"):
        marks = [m["verdicts"][target] for m in per_model.values() if m["verdicts"][target] != "n/a"]
        overall[target] = "n/a" if not marks else "PASS" if all(m == "PASS" for m in marks) else "MISS"
    overall["d_growth"] = growth["verdict"] if growth else "n/a"
    return {
        "targets": {k: {"what": v[0], "limit": v[1], "direction": v[2]} for k, v in TARGETS.items()},
        "per_model": per_model,
        "growth": growth,
        "overall": overall,
    }


def _ms(step: dict[str, Any]) -> str:
    """A table cell: the median, ERR for the failing step, - for steps after it."""
    if "median_ms" in step:
        return f"{step['median_ms']:9.1f}"
    return f"{'ERR':>9}" if step["error"] != "not reached" else f"{'-':>9}"


def print_model(model: models.Model, res: dict[str, Any]) -> None:
    s = model.sizes
    layers = f"{model.layers} layers, " if model.layers else ""
    print(
        f"\n{model.name}: {layers}{s['nodes']:,} nodes ({s['dicts']:,} dicts), "
        f"{s['dim_occurrences']:,} dim occurrences, {s['dims']} dims ({s['dim_objects']} objects), "
        f"built in {model.build_s:.1f} s"
    )
    header = "".join(f"{step:>9}" for step in (*methods.STEPS, "total"))
    print(f"{'(ms, median)':32}{header} |{'pkl KB':>8}{'code KB':>9}")
    errors = []
    for key, (_, label) in methods.METHODS.items():
        r = res[key]
        cells = "".join(_ms(r["steps"][step]) for step in methods.STEPS)
        total = f"{r['total_ms']:9.1f}" if r["ok"] else f"{'ERR':>9}"
        pkl = r["facts"].get("pickle_bytes")
        code = r["facts"].get("code_bytes")
        kb = f"{pkl / 1024:8.1f}" if pkl else f"{'-':>8}"
        kb += f"{code / 1024:9.1f}" if code else f"{'-':>9}"
        print(f"{label:32}{cells}{total} |{kb}")
        if not r["ok"]:
            errors.append(f"  {label}: {r['failed_step']} failed: {r['error']}")
    lb = res["lower_bounds"]
    print(
        f"{'raw dict (lower bounds)':32}pickle.dumps {lb['steps']['pickle']['median_ms']:.1f} ms "
        f"({lb['facts']['pickle_bytes'] / 1024:.1f} KB), repr {lb['steps']['repr']['median_ms']:.1f} ms, "
        f"copy.deepcopy {lb['steps']['deepcopy']['median_ms']:.1f} ms"
    )
    compile_ms = res["ours"]["facts"].get("compile_check_ms")
    if compile_ms is not None:
        print(
            f"{'':32}ours: CreateConfigJob's compile check of the written file, not in the total: {compile_ms:.1f} ms"
        )
    for line in errors:
        print(line)


def _fmt(value: Optional[float]) -> str:
    """Three decimals: with two, 4.995 would print as 5.00 next to MISS."""
    return f"{value:7.3f}x" if value is not None else f"{'n/a':>8}"


def print_ratios(r: dict[str, Any]) -> None:
    print("\nRatios (ours = construct + sis_hash + pickle + write)")
    print(f"{'':18}{'(a) proxy/ours >= 5':>24}{'(b) ours/repr <= 4':>24}{'(c) pickle bytes <= 1.3':>28}")
    for name, m in r["per_model"].items():
        v = m["verdicts"]
        print(
            f"{name:18}{_fmt(m['a_speedup_vs_proxy']):>19} {v['a_speedup_vs_proxy']:4}"
            f"{_fmt(m['b_vs_repr']):>19} {v['b_vs_repr']:4}{_fmt(m['c_pickle_bytes']):>23} {v['c_pickle_bytes']:4}"
        )
        if m["a_note"]:
            print(f"{'':18}  (a) {m['a_note']}")
    g = r["growth"]
    if g:
        per_layer = ", ".join(f"{n} {v:.2f}" for n, v in g["ms_per_layer"].items())
        print(
            f"(d) ours total per layer (ms): {per_layer}; max/min {g['max_over_min']:.2f} (<= 1.5: {g['verdict']}); "
            f"growth exponent {' -> '.join(g['exponent_between'])} {g['exponent']:.2f} (1 = linear)"
        )
    print("Overall: " + ", ".join(f"({k[0]}) {v}" for k, v in r["overall"].items()))


def print_jobs(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(
            f"{r['jobs']} CreateConfigJobs ({r['model']}, serializer {r['serializer']}): {r['total_s']:.2f} s, "
            f"{r['ms_per_job']:.2f} ms/job; distinct ids {r['distinct_job_ids']}, all created: {r['all_created']}; "
            f"kept {r['kb_kept_per_job']:.0f} KB per job (tracemalloc, {r['memory_sample_jobs']} jobs)"
        )


def environment() -> dict[str, Any]:
    """Versions of everything measured, so that numbers from two runs can be compared."""
    from importlib import metadata

    import returnn

    from tests.support.pins import pins

    lock = {name: commit[:10] for name, commit in pins().items()}
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "returnn": returnn.__version__,
        "tensorflow": metadata.version("tensorflow-cpu"),
        "rwth_i6_commits": lock,
    }


def run_benchmark(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    env = environment()
    print(
        f"i6_rc_jobs benchmark, {env['date']}: medians of {args.reps} repetitions after 1 warm-up, fresh objects "
        f"per repetition; Python {env['python']}, {env['cpus']} CPUs"
    )
    built: dict[str, models.Model] = {}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        for name in args.models:
            model = built[name] = models.build(name)
            runs = {
                key: (factory(model, os.path.join(tmp, f"{key}.config")), methods.STEPS)
                for key, (factory, _) in methods.METHODS.items()
            }
            runs["lower_bounds"] = (methods.lower_bounds(model), methods.LOWER_BOUND_STEPS)
            res = results[name] = measure_interleaved(runs, args.reps)
            print_model(model, res)
    r = ratios(results)
    print_ratios(r)
    job_results = []
    if args.jobs:
        print()
        job_model = built.get(JOBS_MODEL) or models.build(JOBS_MODEL)
        for variant in jobs.VARIANTS:
            job_results.append(jobs.create_jobs(job_model, args.jobs, variant))
            print_jobs(job_results[-1:])
    seconds = time.perf_counter() - start
    print(f"\nwall time {seconds:.0f} s")
    return {
        "environment": env,
        "settings": {"reps": args.reps, "warmup": 1, "quick": args.quick, "jobs": args.jobs, "hyper": methods.HYPER},
        "models": {n: {"layers": m.layers, "build_s": m.build_s, **m.sizes} for n, m in built.items()},
        "results": results,
        "ratios": r,
        "jobs": job_results,
        "wall_s": seconds,
    }


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.profile:
        from bench.profiling import profile_ours

        dump = out.parent / f"profile-{args.profile}.prof"
        text = profile_ours(models.build(args.profile), reps=args.profile_reps, dump=str(dump))
        print(text)
        (out.parent / f"profile-{args.profile}.txt").write_text(text)
        return
    report = run_benchmark(args)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"written: {out}")


if __name__ == "__main__":
    main()

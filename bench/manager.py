"""A manager's start with many returnn_common models: built in the manager as today, or by ``build_many`` out of it
and cached. Run from the repository root:

    .venv/bin/python -m bench.manager [--small 20] [--reps 3] [--sweep 10] [--fresh-builds 8] [--out ...]

A Sisyphus setup in a temporary directory: recipe/ holds two model files (returnn_common's Transformer of 6 and of
12 encoder and decoder layers, tests/rc_builders.py), config/ one config that makes, for each of ``--sweep`` model
dims and both depths, a staged network of two stages (half the layers from epoch 1, all from epoch 5) and a
RETURNN-checked CreateConfigJob: 4 x sweep builds. Each variant loads the config in a fresh interpreter as ``sis
manager`` does (``sisyphus.loader.config_manager.load_configs``), side by side in one run: (a) built in the manager;
(b) build_many, cold cache; (c) warm cache; (d) warm, after editing the 6-layer model file (a comment: the models
stay the same), which half of the builds depend on. Then the memory the manager keeps per cached build (tracemalloc
over build_many with its results kept, a run of its own), and a fresh interpreter per build (a build server that imports nothing, so that every build
imports TensorFlow itself) against the fork server, on ``--fresh-builds`` builds, cold. Every variant's job hashes
must equal (a)'s.

First, the cold targets, on a sweep of ``--small`` small models (recipe/bench_small.py, a few layers each), each
variant in a fresh interpreter with an empty build cache: built in the manager against ``build_many``, for a new user
(a home of its own: no fingerprints kept, no caches of the libraries) and then ``--reps`` times for a user whose
build servers kept their fingerprints, alternating, so that the shared machine's load falls on both alike; and the
build server's own start cost (what it costs beyond importing the libraries: its base, the fingerprints of the
files it loaded, storing the base), as the manager measures it (``_Server.own_s``)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

MODEL_FILE = '''
"""returnn_common's Transformer of {layers} layers, for the manager benchmark."""

from tests import rc_builders

LAYERS = {layers}


def transformer(stage: int, model_dim: int):
    """Stage 1: half the layers; stage 2: all of them. returnn_common imported here only (the manager never is)."""
    from returnn_common import nn

    from i6_rc_jobs import ReturnnCommonSerializer, rc_compat

    extern_data, network = rc_builders.transformer(rc_compat.apply(nn), LAYERS // 2 * stage, model_dim)
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)
'''

SMALL_MODEL_FILE = '''
"""Small models for the manager benchmark: a few layers, as a sweep over a hidden size builds them."""


def small(hidden: int):
    """Linear, ReLU, dropout, layer norm and a projection; returnn_common imported here only."""
    from returnn_common import nn

    from i6_rc_jobs import ReturnnCommonSerializer, rc_compat

    nn = rc_compat.apply(nn)
    nn.reset_default_root_name_ctx()
    in_dim, hidden_dim = nn.FeatureDim("input", 40), nn.FeatureDim("hidden", hidden)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, nn.SpatialDim("time"), in_dim]))
    first, out = nn.Linear(in_dim, hidden_dim), nn.Linear(hidden_dim, nn.FeatureDim("out", 10))
    norm = nn.LayerNorm(hidden_dim)
    out(norm(nn.dropout(nn.relu(first(data)), 0.1, axis=hidden_dim))).mark_as_default_output()
    return ReturnnCommonSerializer.from_returnn_common(out)
'''

SMALL_CONFIG = '''
"""The cold sweep: $BENCH_MODE "manager" builds in the manager, "build_many" through an empty build cache."""

import functools
import json
import os
import time

import bench_small

from i6_rc_jobs import build_many
from i6_rc_jobs._builds import server_link


def py():
    calls = [functools.partial(bench_small.small, 32 + 8 * i) for i in range({small})]
    start = time.perf_counter()
    built = [call() for call in calls] if os.environ["BENCH_MODE"] == "manager" else build_many(calls)
    seconds = time.perf_counter() - start
    own = [server.own_s for server in server_link._servers.values()]
    hashes = [serializer._sis_hash().decode() for serializer in built]
    with open(os.environ["BENCH_REPORT"], "w") as f:
        json.dump({{"build_s": seconds, "builds": len(calls), "hashes": hashes, "server_own_s": own}}, f)
'''

CONFIG = '''
"""The benchmark's config: $BENCH_MODE "manager" builds in the manager, "build_many" through the build cache."""

import functools
import gc
import json
import os
import time
import tracemalloc

import bench_t6
import bench_t12
from sisyphus import tk

from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, ReturnnCommonSerializer, build_many
from i6_rc_jobs import Builds

SWEEP = {sweep}
LIMIT = int(os.environ.get("BENCH_LIMIT", "0")) or None


def py():
    calls = [
        functools.partial(module.transformer, stage, 64 + 8 * i)
        for module in (bench_t6, bench_t12)
        for i in range(SWEEP)
        for stage in (1, 2)
    ][:LIMIT]
    memory = os.environ.get("BENCH_MEMORY") == "1"
    if memory:
        tracemalloc.start()
    start = time.perf_counter()
    if os.environ["BENCH_MODE"] == "manager":
        built = [call() for call in calls]
    elif os.environ["BENCH_MODE"] == "fresh":  # a build server that imports no library: each build imports them
        built = Builds(preload=()).build_many(calls)
    else:
        built = build_many(calls)
    seconds = time.perf_counter() - start
    kept = None
    if memory:
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    hashes = []
    for index in range(0, len(built) - 1, 2):  # an odd last build (BENCH_LIMIT) makes no staged job
        stage_1, stage_2 = built[index], built[index + 1]
        staged = ReturnnCommonSerializer(
            extern_data=stage_1.extern_data, staged_networks={{1: stage_1.network, 5: stage_2.network}}
        )
        config = CheckedReturnnConfig(
            {{"use_tensorflow": True, "behavior_version": 16, "learning_rate": 1e-3}},
            python_prolog=[staged],
            black_formatting=False,
        )
        job = CreateConfigJob(config, check=True)
        tk.register_output(f"bench/{{index // 2}}.config", job.out_config)
        hashes.append(job._sis_id())
    with open(os.environ["BENCH_REPORT"], "w") as f:
        json.dump({{"build_s": seconds, "builds": len(calls), "job_ids": hashes, "kept_bytes": kept}}, f)
'''

#: One variant: load the config as ``sis manager`` does, in this fresh interpreter.
LOADER = """
import json, logging, os, sys, time
sys.path.insert(0, {repo!r})
logging.basicConfig(level=logging.INFO, format="%(message)s")
start = time.perf_counter()
from sisyphus.loader import config_manager
config_manager.load_configs([os.environ.get("BENCH_CONFIG", "config/bench.py")])
seconds = time.perf_counter() - start
report = json.load(open(os.environ["BENCH_REPORT"]))
report["load_s"] = seconds
report["tensorflow"] = "tensorflow" in sys.modules
report["returnn_common"] = "returnn_common" in sys.modules
report["torch"] = "torch" in sys.modules
json.dump(report, open(os.environ["BENCH_REPORT"], "w"))
"""


def make_setup(directory: Path, sweep: int, small: int = 20) -> Path:
    models = {f"bench_t{layers}": MODEL_FILE.format(layers=layers) for layers in (6, 12)}
    models["bench_small"] = SMALL_MODEL_FILE
    write_setup(directory, models, CONFIG.format(sweep=sweep))
    (directory / "config" / "small.py").write_text(SMALL_CONFIG.format(small=small))
    return directory


def write_setup(directory: Path, models: dict[str, str], config: str) -> Path:
    """A Sisyphus setup directory: the model files in recipe/, the config as config/bench.py."""
    for part in ("recipe", "config", "work"):
        (directory / part).mkdir(parents=True, exist_ok=True)
    (directory / "settings.py").write_text("WAIT_PERIOD_CACHE = 0\nWAIT_PERIOD_JOB_FS_SYNC = 0\n")
    for name, text in models.items():
        (directory / "recipe" / f"{name}.py").write_text(textwrap.dedent(text))
    (directory / "config" / "bench.py").write_text(textwrap.dedent(config))
    time.sleep(0.1)  # files a build depends on are older than its start (see i6_rc_jobs/_builds/server.py)
    return directory


def run_variant(setup: Path, mode: str, cache: Path, **env: str) -> dict[str, Any]:
    report = setup / "report.json"
    environ = dict(
        os.environ,
        BENCH_MODE=mode,
        BENCH_REPORT=str(report),
        I6_RC_BUILD_CACHE=str(cache),
        CUDA_VISIBLE_DEVICES="",
        TF_CPP_MIN_LOG_LEVEL="3",
        **env,
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", LOADER.format(repo=str(REPO))],
        cwd=setup,
        env=environ,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"variant {mode} failed:\n{proc.stderr[-5000:]}")
    result = json.loads(report.read_text())
    result["process_s"] = wall
    result["cache_log"] = [line for line in proc.stderr.splitlines() if line.startswith("build cache:")][:5]
    return result


def entries_since(cache: Path, since_ns: int) -> dict[str, int]:
    """How many entries of each model file were made after ``since_ns``."""
    counts: dict[str, int] = {}
    for entry in cache.glob("entries/*/*/entry.json"):
        data = json.loads(entry.read_text())
        if data["recorded_ns"] > since_ns:
            module = data["builder"].split(".")[0]
            counts[module] = counts.get(module, 0) + 1
    return counts


def cold_sweep(setup: Path, work: Path, reps: int) -> dict[str, Any]:
    """The cold targets on the small models (see the module docstring): each variant with an empty cache."""
    results: dict[str, Any] = {"new_user": {}, "kept": []}
    small = {"BENCH_CONFIG": "config/small.py"}
    homes = {name: work / f"home-{name}" for name in ("manager", "build_many")}
    for mode, home in homes.items():  # a new user: nothing kept, nothing cached by the libraries
        home.mkdir()
        cache = work / f"cache-new-{mode}"
        results["new_user"][mode] = run_variant(setup, mode, cache, HOME=str(home), **small)
    for rep in range(reps):  # the same user (build_many's home, which now holds its fingerprints and caches)
        pair = {
            mode: run_variant(setup, mode, work / f"cache-{rep}-{mode}", HOME=str(homes["build_many"]), **small)
            for mode in ("manager", "build_many")
        }
        results["kept"].append(pair)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.manager", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=20, help="small models of the cold sweep (0: none)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the cold sweep with kept fingerprints")
    parser.add_argument("--sweep", type=int, default=10, help="model dims per depth (builds: 4 x sweep; 0: none)")
    parser.add_argument("--fresh-builds", type=int, default=8, help="builds for fork server vs fresh interpreter")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "manager.json"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-manager-"))
    results: dict[str, Any] = {"load": [os.getloadavg()[0]]}
    try:
        setup = make_setup(work / "setup", args.sweep, args.small)
        if args.small:
            results["cold"] = cold_sweep(setup, work, args.reps)
            results["load"].append(os.getloadavg()[0])
            report_cold(results["cold"])
        if args.sweep:
            transformers(setup, work, args, results)
            results["load"].append(os.getloadavg()[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.sweep:
        report(results, args)
    print("load average (1 min) at the start and after each part: " + ", ".join(f"{x:.1f}" for x in results["load"]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": date(), "cores": os.cpu_count(), "python": platform.python_version(), "args": vars(args)}
    out.write_text(json.dumps({"meta": meta, **results}, indent=2))
    return 0


def transformers(setup: Path, work: Path, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Variants (a) to (d), the memory kept per build, and the fork server against a fresh interpreter per build."""
    cache = work / "cache"
    results["a"] = run_variant(setup, "manager", cache)
    results["b"] = run_variant(setup, "build_many", cache)
    results["c"] = run_variant(setup, "build_many", cache)
    results["c_memory"] = run_variant(setup, "build_many", cache, BENCH_MEMORY="1")
    with open(setup / "recipe" / "bench_t6.py", "a") as f:
        f.write("# edited\n")
    edited_ns = time.time_ns()
    time.sleep(0.1)
    results["d"] = run_variant(setup, "build_many", cache)
    results["d_rebuilt"] = entries_since(cache, edited_ns)
    n = args.fresh_builds
    results["fork_server"] = run_variant(setup, "build_many", work / "cache-fork", BENCH_LIMIT=str(n))
    results["fresh_interpreter"] = run_variant(setup, "fresh", work / "cache-fresh", BENCH_LIMIT=str(n))


def report_cold(cold: dict[str, Any]) -> None:
    """The cold targets: build_many at least as fast as the manager; the server's own start under 1 s, kept."""
    new = cold["new_user"]
    builds = new["manager"]["builds"]
    same = all(
        variant["hashes"] == new["manager"]["hashes"]
        for variant in [new["build_many"], *(run for pair in cold["kept"] for run in pair.values())]
    )
    print(f"cold sweep of {builds} small models, empty build cache, {os.cpu_count()} cores, {date()}")
    print("| run | in the manager s | build_many s | manager / build_many | server's own start s |")
    print("|---|---:|---:|---:|---:|")
    runs = [("new user (nothing kept)", new)] + [(f"kept fingerprints, {i + 1}", p) for i, p in enumerate(cold["kept"])]
    for name, pair in runs:
        manager, many = pair["manager"]["build_s"], pair["build_many"]["build_s"]
        own = sum(pair["build_many"]["server_own_s"])
        print(f"| {name} | {manager:.2f} | {many:.2f} | {manager / many:.2f}x | {own:.2f} |")
    ratios = sorted(p["manager"]["build_s"] / p["build_many"]["build_s"] for p in cold["kept"])
    own = sorted(sum(p["build_many"]["server_own_s"]) for p in cold["kept"])
    median, own_median = ratios[len(ratios) // 2], own[len(own) // 2]
    print(
        f"build_many cold at least as fast as in the manager (median ratio): {median:.2f}x "
        f"{'PASS' if median >= 1 else 'MISS'}"
    )
    print(
        f"the server's own start under 1 s, fingerprints kept (median): {own_median:.2f} s "
        f"{'PASS' if own_median < 1 else 'MISS'}"
    )
    print(f"hashes of every variant equal to the manager's: {same}")


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    a, b, c, d = (results[k] for k in "abcd")
    builds = a["builds"]
    same = all(results[k]["job_ids"] == a["job_ids"] for k in "bcd")
    rows = [
        ("(a) built in the manager", a),
        ("(b) build_many, cold cache", b),
        ("(c) build_many, warm cache", c),
        ("(d) warm, one model file edited", d),
    ]
    print(f"{builds} builds ({args.sweep} model dims x 2 depths x 2 stages), {os.cpu_count()} cores, {date()}")
    print("| variant | builds s | config load s | ms per build | TF in manager | returnn_common in manager |")
    print("|---|---:|---:|---:|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['build_s']:.2f} | {r['load_s']:.2f} | {r['build_s'] * 1e3 / builds:.1f} | "
            f"{r['tensorflow']} | {r['returnn_common']} |"
        )
    kept = results["c_memory"]["kept_bytes"] / builds / 1024
    print(f"job ids equal to (a)'s in (b), (c), (d): {same}")
    for key in "cd":
        for line in results[key]["cache_log"]:
            print(f"({key}) {line}")
    print(f"memory the manager keeps per cached build (tracemalloc over build_many, its results kept): {kept:.0f} KB")
    targets = [
        (
            "(c) at least 50x faster than (a), the builds",
            a["build_s"] / c["build_s"],
            a["build_s"] / c["build_s"] >= 50,
        ),
        ("(c) under 25 ms per build", c["build_s"] * 1e3 / builds, c["build_s"] * 1e3 / builds < 25),
        ("(c) no tensorflow/returnn_common", None, not (c["tensorflow"] or c["returnn_common"])),
        (
            "(b) at least 1.6x faster than (a), the builds",
            a["build_s"] / b["build_s"],
            a["build_s"] / b["build_s"] >= 1.6,
        ),
        ("(b) at least 1.6x faster than (a), config load", a["load_s"] / b["load_s"], a["load_s"] / b["load_s"] >= 1.6),
        (
            "(c) faster than (a), config load (imports of Sisyphus and i6_core included)",
            a["load_s"] / c["load_s"],
            True,
        ),
        (
            f"(d) rebuilds exactly the {builds // 2} builds of bench_t6",
            results["d_rebuilt"],
            results["d_rebuilt"] == {"bench_t6": builds // 2},
        ),
    ]
    for name, value, ok in targets:
        shown = f"{value:.1f}" if isinstance(value, float) else value
        print(f"{name}: {shown} {'PASS' if ok else 'MISS'}")
    fork, fresh = results["fork_server"], results["fresh_interpreter"]
    print(
        f"{fork['builds']} cold builds: fork server {fork['build_s']:.1f} s, fresh interpreter per build "
        f"{fresh['build_s']:.1f} s ({fresh['build_s'] / fork['build_s']:.2f}x)"
    )


def date() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

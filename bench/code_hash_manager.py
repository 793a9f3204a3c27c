"""A manager's start with torch configs: model code hashed by content (``by_content``, warm build cache) against
the name hash of i6_core's serialization_v2 (``ReturnnConfigV2``), side by side. Run from the repository root:

    .venv/bin/python -m bench.code_hash_manager [--sweep 20] [--out bench/results/code_hash_manager.json]

A Sisyphus setup in a temporary directory: recipe/ holds two torch model files (a Conformer-like block stack and
an LSTM stack, each a ``Model`` class and a ``train_step``), config/ one config that makes, for each of ``--sweep``
model dims and both files, a ``ReturnnTrainingJob`` of a ``ReturnnConfigV2`` whose ``get_model`` is a partial of
``Model`` and whose ``train_step`` is the function: 2 x sweep jobs. Each variant loads the config in a fresh
interpreter as ``sis manager`` does (``bench.manager``'s loader): (n) the name hash, the model files imported by the
config (so torch too); (c0) ``by_content`` markers by name, cold build cache; (c) warm; (d) warm after a comment
was added to one model file (the hashes stay, its entries are rebuilt). Job ids of (c0), (c), (d) must be equal."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.manager import REPO, date, run_variant, write_setup

MODELS = {
    "bench_conformer": '''
        """A stack of self-attention and convolution blocks."""
        import torch


        class Block(torch.nn.Module):
            def __init__(self, dim: int):
                super().__init__()
                self.att = torch.nn.MultiheadAttention(dim, 4, batch_first=True)
                self.conv = torch.nn.Conv1d(dim, dim, 3, padding=1, groups=dim)
                self.ff = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.SiLU(), torch.nn.Linear(4 * dim, dim))

            def forward(self, x):
                x = x + self.att(x, x, x, need_weights=False)[0]
                x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)
                return x + self.ff(x)


        class Model(torch.nn.Module):
            def __init__(self, dim: int, layers: int = 6, **_kwargs):
                super().__init__()
                self.inp = torch.nn.Linear(40, dim)
                self.blocks = torch.nn.ModuleList([Block(dim) for _ in range(layers)])
                self.out = torch.nn.Linear(dim, 1000)

            def forward(self, x):
                x = self.inp(x)
                for block in self.blocks:
                    x = block(x)
                return self.out(x)


        def train_step(*, model, extern_data, **_kwargs):
            logits = model(extern_data["data"].raw_tensor)
            targets = extern_data["classes"].raw_tensor
            loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets.long())
            import returnn.frontend as rf

            rf.get_run_ctx().mark_as_loss(name="ce", loss=loss)
    ''',
    "bench_lstm": '''
        """An LSTM stack."""
        import torch


        class Model(torch.nn.Module):
            def __init__(self, dim: int, layers: int = 4, **_kwargs):
                super().__init__()
                self.lstm = torch.nn.LSTM(40, dim, num_layers=layers, batch_first=True, bidirectional=True)
                self.out = torch.nn.Linear(2 * dim, 1000)

            def forward(self, x):
                return self.out(self.lstm(x)[0])


        def train_step(*, model, extern_data, **_kwargs):
            logits = model(extern_data["data"].raw_tensor)
            targets = extern_data["classes"].raw_tensor
            loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets.long())
            import returnn.frontend as rf

            rf.get_run_ctx().mark_as_loss(name="ce", loss=loss)
    ''',
}

CONFIG = '''
"""The benchmark's config: $BENCH_MODE "name" hashes get_model and train_step by name, "content" by content."""

import functools
import json
import os
import time

from i6_core.returnn.config import ReturnnConfigV2
from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

SWEEP = {sweep}


def py():
    start = time.perf_counter()
    if os.environ["BENCH_MODE"] == "name":
        import bench_conformer
        import bench_lstm

        modules = {{"bench_conformer": bench_conformer, "bench_lstm": bench_lstm}}

        def ref(module, name, **kwargs):
            found = getattr(modules[module], name)
            return functools.partial(found, **kwargs) if kwargs else found

    else:
        from i6_rc_jobs import by_content

        def ref(module, name, **kwargs):
            return by_content(f"{{module}}:{{name}}", **kwargs)

    imported = time.perf_counter()
    ids = []
    for module in ("bench_conformer", "bench_lstm"):
        for i in range(SWEEP):
            config = ReturnnConfigV2(
                {{
                    "backend": "torch",
                    "behavior_version": 21,
                    "get_model": ref(module, "Model", dim=64 + 8 * i),
                    "train_step": ref(module, "train_step"),
                    "learning_rate": 1e-3,
                    "batch_size": 5000,
                }}
            )
            job = ReturnnTrainingJob(
                config, num_epochs=2, returnn_python_exe=tk.Path("/usr/bin/python3"), returnn_root=tk.Path("/returnn")
            )
            tk.register_output(f"bench/{{module}}/{{i}}", job.out_model_dir)
            ids.append(job._sis_id())
    done = time.perf_counter()
    report = {{"import_s": imported - start, "jobs_s": done - imported, "jobs": len(ids), "job_ids": ids}}
    with open(os.environ["BENCH_REPORT"], "w") as f:
        json.dump(report, f)
'''


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.code_hash_manager", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", type=int, default=20, help="model dims per model file (jobs: 2 x sweep)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "code_hash_manager.json"))
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-code-hash-manager-") as work:
        setup = write_setup(Path(work) / "setup", MODELS, CONFIG.format(sweep=args.sweep))
        cache = Path(work) / "cache"
        results["n"] = run_variant(setup, "name", cache)
        results["c0"] = run_variant(setup, "content", cache)
        for run in range(3):
            results[f"c{run + 1}"] = run_variant(setup, "content", cache)
        results["n2"] = run_variant(setup, "name", cache)
        with open(setup / "recipe" / "bench_lstm.py", "a") as f:
            f.write("# edited\n")
        time.sleep(0.1)
        results["d"] = run_variant(setup, "content", cache)
    report(results, args)
    return 0


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    warm = min((results[f"c{run}"] for run in (1, 2, 3)), key=lambda r: r["load_s"])
    name = min((results[k] for k in ("n", "n2")), key=lambda r: r["load_s"])
    rows = [
        ("(n) name hash (serialization_v2), best of 2", name),
        ("(c0) by_content, cold build cache", results["c0"]),
        ("(c) by_content, warm, best of 3", warm),
        ("(d) by_content, warm, one model file edited (a comment)", results["d"]),
    ]
    jobs = name["jobs"]
    print(f"{jobs} ReturnnTrainingJobs (2 model files x {args.sweep} dims), {os.cpu_count()} cores, {date()}")
    print(
        "| variant | config load s | imports in the config s | job creation (hashing) s | ms per job | torch in manager |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for label, r in rows:
        print(
            f"| {label} | {r['load_s']:.2f} | {r['import_s']:.2f} | {r['jobs_s']:.2f} | "
            f"{r['jobs_s'] * 1e3 / jobs:.1f} | {r['torch']} |"
        )
    same_ids = results["c0"]["job_ids"] == warm["job_ids"] == results["d"]["job_ids"]
    ratio = warm["load_s"] / name["load_s"]
    targets = [
        (f"(c) config load within 2x of (n): {ratio:.2f}x", ratio <= 2.0),
        ("(c) no torch in the manager", not warm["torch"]),
        ("job ids of (c0), (c), (d) equal (a comment moves no hash)", same_ids),
        ("job ids of (c) differ from (n) (another hash)", warm["job_ids"] != name["job_ids"]),
    ]
    for label, ok in targets:
        print(f"{label}: {'PASS' if ok else 'MISS'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": date(), "cores": os.cpu_count(), "python": platform.python_version(), "sweep": args.sweep}
    out.write_text(json.dumps({"meta": meta, **results}, indent=2))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

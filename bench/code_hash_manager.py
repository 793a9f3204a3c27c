"""A manager's start with torch configs: model code hashed by content (``by_content``) against the name hash of
i6_experiments' serialization_v2 (``ReturnnConfigWithNewSerialization``, from ``.deps/src/i6_experiments``) and of
its copy in i6_core (``ReturnnConfigV2``), side by side in one run.
Run from the repository root:

    .venv/bin/python -m bench.code_hash_manager [--sweep 20] [--out bench/results/code_hash_manager.json]

A Sisyphus setup in a temporary directory, two sets of 2 x ``--sweep`` ``ReturnnTrainingJob``s of a
``ReturnnConfigV2`` whose ``get_model`` is a partial of ``Model`` (one model dim per job) and whose ``train_step`` is
the function: "plain", two torch model files (a Conformer-like block stack and an LSTM stack); "frontend", the same two
with i6_models' ``LogMelFeatureExtractionV1`` in front (it imports librosa: a heavy import; ``recipe/i6_models`` links
to the checkout in ``.deps/src/i6_models``, as i6 setups link it). Each variant loads the config in a fresh
interpreter as ``sis manager`` does (``bench.manager``'s loader), and is compared with the name hash of the same set
(the config imports the model files, so torch, and i6_models and librosa):

- "one at a time": each job's two markers are made as the job is made and hashed by it, as a config that makes its
  jobs in a loop does (a lookup of the build cache per job);
- "batched": the markers of all jobs are made first, then the jobs (one lookup for all);
- cold (an empty build cache: every model is built) and warm (best of 3 starts after it).

Then (plain, one at a time) a comment added to one model file: its entries are built again and the hashes stay.
Job ids of a set's cold, warm and edited variants must be equal."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import textwrap
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
"""The benchmark's config: $BENCH_MODE "name" hashes get_model and train_step by name, "content" by content;
$BENCH_ORDER "one" makes each job's markers as it makes the job, "batch" all markers first."""

import functools
import importlib
import json
import os
import time

from i6_core.returnn.config import ReturnnConfigV2
from i6_core.returnn.training import ReturnnTrainingJob
from sisyphus import tk

SWEEP = {sweep}
MODULES = os.environ["BENCH_MODULES"].split(",")


def py():
    start = time.perf_counter()
    config_class = ReturnnConfigV2
    if os.environ.get("BENCH_SERIALIZATION") == "i6_experiments":
        from i6_experiments.users.zeyer.serialization_v2 import ReturnnConfigWithNewSerialization as config_class
    if os.environ["BENCH_MODE"] == "name":
        modules = {{name: importlib.import_module(name) for name in MODULES}}

        def ref(module, name, **kwargs):
            found = getattr(modules[module], name)
            return functools.partial(found, **kwargs) if kwargs else found

    else:
        from i6_rc_jobs import by_content

        def ref(module, name, **kwargs):
            return by_content(f"{{module}}:{{name}}", **kwargs)

    imported = time.perf_counter()
    runs = [(module, i) for module in MODULES for i in range(SWEEP)]

    def values(module, i):
        return ref(module, "Model", dim=64 + 8 * i), ref(module, "train_step")

    made = [values(module, i) for module, i in runs] if os.environ["BENCH_ORDER"] == "batch" else None
    ids, job_s = [], []
    for index, (module, i) in enumerate(runs):
        job_start = time.perf_counter()
        get_model, train_step = made[index] if made else values(module, i)
        config = config_class(
            {{
                "backend": "torch",
                "behavior_version": 21,
                "get_model": get_model,
                "train_step": train_step,
                "learning_rate": 1e-3,
                "batch_size": 5000,
            }}
        )
        job = ReturnnTrainingJob(
            config, num_epochs=2, returnn_python_exe=tk.Path("/usr/bin/python3"), returnn_root=tk.Path("/returnn")
        )
        tk.register_output(f"bench/{{module}}/{{i}}", job.out_model_dir)
        ids.append(job._sis_id())
        job_s.append(time.perf_counter() - job_start)
    done = time.perf_counter()
    report = {{"import_s": imported - start, "jobs_s": done - imported, "job_s": job_s, "jobs": len(ids), "job_ids": ids}}
    with open(os.environ["BENCH_REPORT"], "w") as f:
        json.dump(report, f)
'''

#: The heavy frontend: i6_models' log-mel features (librosa's mel filters) before each model of ``MODELS``.
FRONTEND = '''
"""A model of {base} with i6_models' log-mel frontend."""
import torch
from i6_models.primitives.feature_extraction import LogMelFeatureExtractionV1, LogMelFeatureExtractionV1Config

import {base}


class Model(torch.nn.Module):
    def __init__(self, dim: int, **kwargs):
        super().__init__()
        features = LogMelFeatureExtractionV1Config(
            sample_rate=16000,
            win_size=0.025,
            hop_size=0.01,
            f_min=60,
            f_max=7600,
            min_amp=1e-10,
            num_filters=40,
            center=False,
        )
        self.frontend = LogMelFeatureExtractionV1(features)
        self.model = {base}.Model(dim, **kwargs)

    def forward(self, raw_audio, lengths):
        features, _ = self.frontend(raw_audio, lengths)
        return self.model(features)


train_step = {base}.train_step
'''

SETS = {"plain": ("bench_conformer", "bench_lstm"), "frontend": ("bench_fe_conformer", "bench_fe_lstm")}
#: i6_experiments' checkout (``./setup.sh``), linked into the setup's recipe/ as i6 setups have it.
I6_EXPERIMENTS = REPO / ".deps" / "src" / "i6_experiments"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.code_hash_manager", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", type=int, default=20, help="model dims per model file (jobs per set: 2 x sweep)")
    parser.add_argument("--sets", default="plain,frontend", help="which sets of jobs (plain, frontend)")
    parser.add_argument("--no-cold", action="store_true", help="only warm starts (the cold ones fill the cache)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "code_hash_manager.json"))
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-code-hash-manager-") as work:
        models = {name: textwrap.dedent(text) for name, text in MODELS.items()}
        models.update({f"bench_fe_{base[6:]}": FRONTEND.format(base=base) for base in MODELS})
        setup = write_setup(Path(work) / "setup", models, CONFIG.format(sweep=args.sweep))
        (setup / "recipe" / "i6_models").symlink_to(REPO / ".deps" / "src" / "i6_models" / "i6_models")
        if I6_EXPERIMENTS.is_dir():
            (setup / "recipe" / "i6_experiments").symlink_to(I6_EXPERIMENTS)
        else:
            print(f"no i6_experiments at {I6_EXPERIMENTS}: the name hash is i6_core's serialization_v2 only")
        time.sleep(0.1)
        for name in args.sets.split(","):
            results[name] = run_set(setup, Path(work), name, args.no_cold)
    report(results, args)
    return 0


def run_set(setup: Path, work: Path, name: str, no_cold: bool) -> dict[str, Any]:
    """The variants of one set of jobs, each in a fresh interpreter; the caches of "one" and "batch" apart, so that
    each is cold once."""
    modules = {"BENCH_MODULES": ",".join(SETS[name])}
    found: dict[str, Any] = {"name": [run_variant(setup, "name", work / "unused", BENCH_ORDER="one", **modules)]}
    if I6_EXPERIMENTS.is_dir():
        found["name-i6e"] = [
            run_variant(
                setup, "name", work / "unused", BENCH_ORDER="one", BENCH_SERIALIZATION="i6_experiments", **modules
            )
            for _ in range(3)
        ]
    for order in ("one", "batch"):
        cache = work / f"cache-{name}-{order}"
        if not no_cold:
            found[f"{order}-cold"] = run_variant(setup, "content", cache, BENCH_ORDER=order, **modules)
        found[f"{order}-warm"] = [run_variant(setup, "content", cache, BENCH_ORDER=order, **modules) for _ in range(3)]
        found["name"].append(run_variant(setup, "name", work / "unused", BENCH_ORDER="one", **modules))
    if name == "plain":
        with open(setup / "recipe" / "bench_lstm.py", "a") as f:
            f.write("# edited\n")
        time.sleep(0.1)
        found["edited"] = run_variant(setup, "content", work / f"cache-{name}-one", BENCH_ORDER="one", **modules)
    return found


def _best(runs: Any) -> dict[str, Any]:
    return min(runs, key=lambda r: r["load_s"]) if isinstance(runs, list) else runs


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    yardstick = "i6_experiments'" if "name-i6e" in next(iter(results.values())) else "i6_core's"
    print(f"{os.cpu_count()} cores, {date()}; ratios: to the name hash of the same jobs ({yardstick} serialization_v2)")
    print(
        "| jobs | variant | config load s | ratio | job creation s | ratio | first job ms | "
        "ms per job after it | ms per marker after it | torch in manager |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    targets = []
    for name, found in results.items():
        name_run = _best(found["name-i6e"] if "name-i6e" in found else found["name"])
        rows = [("name hash (i6_core serialization_v2), best of 3", _best(found["name"]))]
        if "name-i6e" in found:
            rows.append(("name hash (i6_experiments serialization_v2), best of 3", name_run))
        rows += [(f"by_content, {label}", _best(found[key])) for key, label in _LABELS if key in found]
        for label, r in rows:
            jobs, per_job = r["jobs"], r["job_s"]
            after = sum(per_job[1:]) / max(1, len(per_job) - 1)
            print(
                f"| {name} ({jobs}) | {label} | {r['load_s']:.2f} | {r['load_s'] / name_run['load_s']:.2f}x | "
                f"{r['jobs_s']:.2f} | {r['jobs_s'] / name_run['jobs_s']:.1f}x | {per_job[0] * 1e3:.0f} | "
                f"{after * 1e3:.1f} | {after * 1e3 / 2:.1f} | {r['torch']} |"
            )
        if "one-warm" in found:
            one = _best(found["one-warm"])
            after = sum(one["job_s"][1:]) / max(1, len(one["job_s"]) - 1)
            targets.append(
                (
                    f"{name}: warm, one at a time, ms per marker after the first: {after * 1e3 / 2:.1f}",
                    after / 2 <= 0.005,
                )
            )
            targets.append(
                (f"{name}: warm, one at a time, first job: {one['job_s'][0]:.2f} s", one["job_s"][0] <= 0.15)
            )
            targets.append((f"{name}: no torch in the manager", not one["torch"]))
        ids = [_best(found[key])["job_ids"] for key, _ in _LABELS if key in found and key != "edited"]
        targets.append((f"{name}: job ids of cold and warm starts equal", all(i == ids[0] for i in ids)))
        if "edited" in found:
            same = found["edited"]["job_ids"] == ids[0]
            targets.append((f"{name}: a comment in a model file moves no job id", same))
    for label, ok in targets:
        print(f"{label}: {'PASS' if ok else 'MISS'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": date(), "cores": os.cpu_count(), "python": platform.python_version(), "sweep": args.sweep}
    out.write_text(json.dumps({"meta": meta, **results}, indent=2))


_LABELS = (
    ("one-cold", "one at a time, cold"),
    ("one-warm", "one at a time, warm (best of 3)"),
    ("batch-cold", "batched, cold"),
    ("batch-warm", "batched, warm (best of 3)"),
    ("edited", "one at a time, warm, one model file edited (a comment)"),
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

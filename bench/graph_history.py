"""The graph hash over returnn_common's history: three standard models built at 40 returnn_common commits
from 2022-04 to 2025-10, with each commit's dict hash, graph hash and semantic class, and how often each hash moved
where the model stayed the same (cosmetic) or stayed where the model changed (hidden). Run from the repository root:

    .venv/bin/python -m bench.graph_history [--jobs 2] [--cache DIR] [--rehash] [--out bench/results/graph_history.json]

Each (commit, model) is built in a process of its own (returnn_common versions must not share one): returnn_common's
``nn`` at that commit by a versioned import, made to build by ``rc_compat.apply``, the model from
``bench.history_models`` (small, fixed sizes), then a ``ReturnnCommonSerializer`` of its raw dicts. Recorded: the
serializer (pickled), its dict hash, the graph hash of a ``hash_scheme="graph"`` serializer of the same dicts, and
the semantic fingerprint of the config it writes (``i6_rc_jobs._verify.semantics``: RETURNN builds the net; its TF
parameter names and shapes, the initializer of each, and the output with parameters seeded by name). Two commits are
semantically the same iff their fingerprints have no differences in these (the model alone, as
``differences(losses=False)``; the losses, which the fingerprint also holds, are said where the graph hash moved,
not counted). A commit where a model does not build (or RETURNN cannot build its net) is unbuildable for that model,
with the reason, and is skipped in that model's transitions.

Records are kept in ``--cache`` (default ``$XDG_CACHE_HOME/i6_rc_jobs/graph_history``) under a digest of what makes
them (the model builders, rc_compat, the semantics module, the pinned versions), so a second run builds nothing;
``--rehash`` recomputes both hashes from the stored serializers (after a change of the hashing code) without
building. Prints the records per commit, the unbuildable ones, the counts per model (markdown), every transition
where the graph hash moved without a semantic change (with the first lines of hash-diff) or a hash stayed across
one, and the run time; writes everything but the pickles to the JSON file."""

from __future__ import annotations

import os

# Before anything imports TensorFlow/RETURNN (here and in the workers): no GPU, no TF log flood.
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import argparse  # noqa: E402
import concurrent.futures  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import pathlib  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any, Optional  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
RETURNN_COMMON = "github.com/rwth-i6/returnn_common"

#: returnn_common's commits touching nn/ on its first-parent history from 2022-04-12 (the first with
#: ``get_net_dict_raw_dict``; ``git log --first-parent --reverse --since=2022-04-12 -- nn``): 30 evenly spaced by
#: index (``round(i * (n - 1) / 29)``) among the 575 before 2023-07, all 9 since (nn/ barely changed after 2023-06),
#: and the pinned commit (the last one; it does not touch nn/).
COMMITS = (
    "20220412-03c7c409f4e3",
    "20220420-96f92032451a",
    "20220425-02b0b3c462f3",
    "20220428-b0afdb33411a",
    "20220430-c79344f3d77d",
    "20220503-78bbb9ebee87",
    "20220507-6f4480a5096d",
    "20220519-9b9fce8309da",
    "20220612-3834ae49b064",
    "20220818-4f0edfb2bec4",
    "20220822-400c9038837e",
    "20220824-ec4688ad6c71",
    "20220830-b7ef0c4167d0",
    "20220908-aa8093319b0a",
    "20220914-dac3cf1e4b2c",
    "20221006-7b3d49c51780",
    "20221006-176f54443f17",
    "20221017-e92d6d2cf9bc",
    "20221020-54872e0973c9",
    "20221027-eed3b2e0752b",
    "20221106-bd29c3c24605",
    "20221112-c6f23eb231dd",
    "20221114-d2b76b00ddc0",
    "20221117-418082125fea",
    "20221121-8cb8a5887efb",
    "20221213-283090d954af",
    "20230225-6dfd054fdcb0",
    "20230228-5c3a4b60cb25",
    "20230310-b91b8efe8f18",
    "20230414-04ed372893e8",
    "20230702-df124a92572f",
    "20230702-0f57561d9154",
    "20230702-34f3f04bc247",
    "20230809-54bb95d4e6d1",
    "20230809-48f9e5b2dffe",
    "20231018-c22aefeb4005",
    "20240917-6a1db79a8f10",
    "20250117-325caed669d4",
    "20250122-6ef349585891",
    "20251020-f7ad63a58835",
)

#: Bump when the content of a record changes in a way the files below do not show.
RECORD_FORMAT = 1
#: What a record is made of, apart from the hashes: a change of any of these makes new records.
RECORD_INPUTS = (
    "bench/history_models.py",
    "tests/rc_builders.py",
    "i6_rc_jobs/_compat/rc_compat.py",
    "i6_rc_jobs/_verify/semantics.py",
    "rwth-i6.lock",
    "requirements-dev.lock",
)
#: The code the hashes come from: records hashed by another version of it are reported (``--rehash`` updates them).
HASHING_INPUTS = ("i6_rc_jobs/_hashing", "i6_rc_jobs/_serialization", "i6_rc_jobs/serializers.py")

HASHES = ("dict", "graph")


def _digest(paths: tuple[str, ...], salt: str = "") -> str:
    """sha256 over the named files (directories: their ``*.py``, recursively), 12 hex digits."""
    digest = hashlib.sha256(salt.encode())
    for name in paths:
        path = REPO / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(f"{file.relative_to(REPO)}\0".encode() + file.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def record_key() -> str:
    return _digest(RECORD_INPUTS, salt=f"format {RECORD_FORMAT}")


def hashing_key() -> str:
    return _digest(HASHING_INPUTS)


def default_cache() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "i6_rc_jobs" / "graph_history"


def record_path(cache: pathlib.Path, version: str, model: str) -> pathlib.Path:
    return cache / record_key() / f"{version}.{model}.pkl"


def _reason(exc: BaseException) -> str:
    """One line: the exception and where it was raised (the innermost frame, as ``dir/file.py:line``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        path = pathlib.Path(frames[-1].filename)
        where = f" at {path.parent.name}/{path.name}:{frames[-1].lineno}"
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}{where}"


def hashes(serializer_pickle: bytes) -> dict[str, str]:
    """The dict hash of the pickled serializer and the graph hash of a ``hash_scheme="graph"`` serializer of its
    dicts, and which hashing code made them."""
    from i6_rc_jobs import ReturnnCommonSerializer

    serializer = pickle.loads(serializer_pickle)
    dict_hash = serializer._sis_hash().decode()
    graph = ReturnnCommonSerializer(extern_data=serializer.extern_data, network=serializer.network, hash_scheme="graph")
    return {"dict": dict_hash, "graph": graph._sis_hash().decode(), "hashing": hashing_key()}


def make_record(version: str, model: str) -> dict[str, Any]:
    """Builds ``model`` with returnn_common at ``version`` in this process (call it in a fresh one) and records it."""
    from bench import history_models
    from bench.models import quiet_fds
    from i6_rc_jobs import ReturnnCommonSerializer, rc_compat
    from i6_rc_jobs import import_
    from i6_rc_jobs._verify import semantics

    record: dict[str, Any] = {"version": version, "model": model, "error": None}
    start = time.perf_counter()
    try:
        with quiet_fds():
            nn = rc_compat.apply(import_(RETURNN_COMMON, "nn", version))
            extern_data, network = history_models.BUILDERS[model](nn)
            serializer = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    except Exception as exc:
        record["error"] = f"build: {_reason(exc)}"
        return record
    record["build_s"] = time.perf_counter() - start
    record["serializer"] = pickle.dumps(serializer)
    record["hashes"] = hashes(record["serializer"])
    start = time.perf_counter()
    try:
        with quiet_fds():
            record["fingerprint"] = semantics.fingerprint(serializer.get())
    except Exception as exc:
        record["error"] = f"RETURNN: {_reason(exc)}"
    record["fingerprint_s"] = time.perf_counter() - start
    return record


def _write(path: pathlib.Path, record: dict[str, Any]) -> None:
    """Atomically: a run killed midway leaves no half record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        pickle.dump(record, tmp)
    os.replace(tmp.name, path)


def build_record(version: str, model: str, cache: pathlib.Path) -> tuple[dict[str, Any], str]:
    """The record of ``model`` at ``version``: from the cache, or built in a fresh process and cached. Also says
    which (``cached``, ``built``; ``failed`` if the process died, which is not cached)."""
    path = record_path(cache, version, model)
    if path.exists():
        return pickle.loads(path.read_bytes()), "cached"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="graph-history-") as tmp:
        out = pathlib.Path(tmp) / "record.pkl"
        args = [sys.executable, "-m", "bench.graph_history", "--record", version, model, str(out)]
        result = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
        if result.returncode != 0 or not out.exists():
            last = (result.stderr.strip().splitlines() or ["no output"])[-1][:200]
            return {"version": version, "model": model, "error": f"worker: exit {result.returncode}: {last}"}, "failed"
        record = pickle.loads(out.read_bytes())
    _write(path, record)
    return record, "built"


def collect(models: tuple[str, ...], cache: pathlib.Path, jobs: int, rehash: bool) -> dict[tuple[str, str], dict]:
    """Every record, built where missing (``jobs`` processes at once), progress on stderr."""
    tasks = [(version, model) for version in COMMITS for model in models]
    records: dict[tuple[str, str], dict] = {}
    lock = threading.Lock()
    start = time.perf_counter()

    def one(task: tuple[str, str]) -> None:
        record, how = build_record(*task, cache)
        with lock:
            records[task] = record
            if how != "cached":
                state = f"unbuildable: {record['error']}" if record["error"] else "ok"
                took = record.get("build_s", 0) + record.get("fingerprint_s", 0)
                print(
                    f"[{len(records):3d}/{len(tasks)}] {task[0]} {task[1]}: {how} ({took:.1f} s in the worker, "
                    f"{time.perf_counter() - start:.0f} s so far), {state}",
                    file=sys.stderr,
                    flush=True,
                )

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, tasks))
    if rehash:
        for task, record in records.items():
            if "serializer" in record:
                record["hashes"] = hashes(record["serializer"])
                _write(record_path(cache, *task), record)
        print(f"rehashed {sum('serializer' in r for r in records.values())} records", file=sys.stderr)
    return records


def _short(hash_text: str) -> str:
    """The first 8 hex digits of a serializer hash ``(ReturnnCommonSerializer, v1, <sha256>)``."""
    return hash_text.rstrip(")").rpartition(" ")[2][:8]


def initial_values(record: dict[str, Any], cache: pathlib.Path) -> dict[str, Any]:
    """The initial value of every TF variable of the record's config as RETURNN's initializers draw it, graph and
    network seeds fixed (:mod:`i6_rc_jobs._verify.training_semantics`): computed once, then kept in the record."""
    if "initial" not in record:
        from bench.models import quiet_fds
        from i6_rc_jobs._verify.training_semantics import training_fingerprint

        with quiet_fds():
            record["initial"] = training_fingerprint(pickle.loads(record["serializer"]).get())[1].initial
        _write(record_path(cache, record["version"], record["model"]), record)
    return record["initial"]


def _seed_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The variables whose initial values differ under the same seeds (RETURNN drew them in another order)."""
    import numpy

    return [
        f"initial value of {name} differs under the same seeds"
        for name in sorted(a.keys() & b.keys())
        if numpy.shape(a[name]) != numpy.shape(b[name]) or not numpy.allclose(a[name], b[name])
    ]


def analyse(records: dict[tuple[str, str], dict], models: tuple[str, ...], cache: pathlib.Path) -> dict[str, Any]:
    """Per model: the semantic class of each buildable commit (numbered by first occurrence of its fingerprint) and
    each transition between consecutive buildable commits, with what changed. Where the fingerprints are equal and a
    hash moved, the initial values under the same seeds decide too: a model that draws them in another order trains
    otherwise from the same seed."""
    out: dict[str, Any] = {}
    for model in models:
        built = [(v, records[v, model]) for v in COMMITS if not records[v, model]["error"]]
        classes: list[Any] = []  # one fingerprint per class
        semantic_class = {}
        for version, record in built:
            fingerprint = record["fingerprint"]
            number = next((i for i, c in enumerate(classes) if not c.differences(fingerprint, losses=False)), None)
            if number is None:
                classes.append(fingerprint)
                number = len(classes) - 1
            semantic_class[version] = number + 1
        transitions = []
        for (a, rec_a), (b, rec_b) in zip(built, built[1:]):
            semantic = rec_a["fingerprint"].differences(rec_b["fingerprint"], losses=False)
            reported = rec_a["fingerprint"].differences(rec_b["fingerprint"])
            if not semantic and any(rec_a["hashes"][h] != rec_b["hashes"][h] for h in HASHES):
                semantic = _seed_differences(initial_values(rec_a, cache), initial_values(rec_b, cache))
            transitions.append(
                {
                    "from": a,
                    "to": b,
                    "semantic": semantic,
                    "losses": [line for line in reported if line not in semantic],
                    **{f"{h}_changed": rec_a["hashes"][h] != rec_b["hashes"][h] for h in HASHES},
                }
            )
        out[model] = {
            "built": len(built),
            "classes": semantic_class,
            "transitions": transitions,
            "counts": _counts(transitions),
        }
    return out


def _counts(transitions: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"transitions": len(transitions), "semantic": sum(bool(t["semantic"]) for t in transitions)}
    for h in HASHES:
        counts[f"{h}_cosmetic"] = sum(t[f"{h}_changed"] and not t["semantic"] for t in transitions)
        # of those, where RETURNN also reports the same losses (score keys and values): nothing it does changed
        counts[f"{h}_cosmetic_same_losses"] = sum(
            t[f"{h}_changed"] and not t["semantic"] and not t["losses"] for t in transitions
        )
        counts[f"{h}_tracked"] = sum(t[f"{h}_changed"] and bool(t["semantic"]) for t in transitions)
        counts[f"{h}_hidden"] = sum(not t[f"{h}_changed"] and bool(t["semantic"]) for t in transitions)
    return counts


def print_records(records: dict[tuple[str, str], dict], analysis: dict[str, Any], models: tuple[str, ...]) -> None:
    print("Per commit and model: semantic class, dict hash, graph hash (first 8 hex digits); - unbuildable\n")
    print("| commit | " + " | ".join(models) + " |")
    print("|---|" + "---|" * len(models))
    for version in COMMITS:
        cells = []
        for model in models:
            record = records[version, model]
            if record["error"]:
                cells.append("-")
            else:
                number = analysis[model]["classes"][version]
                cells.append(f"{number} {_short(record['hashes']['dict'])} {_short(record['hashes']['graph'])}")
        print(f"| {version} | " + " | ".join(cells) + " |")
    unbuildable = [(v, m, records[v, m]["error"]) for v in COMMITS for m in models if records[v, m]["error"]]
    if unbuildable:
        print("\nUnbuildable (not counted):")
        for version, model, error in unbuildable:
            print(f"- {version} {model}: {error}")


def print_counts(analysis: dict[str, Any], models: tuple[str, ...]) -> None:
    """The counts table: per model and in total."""
    columns = [
        ("commits built", "built"),
        ("transitions", "transitions"),
        ("semantic changes", "semantic"),
        ("dict hash: moved, same model", "dict_cosmetic"),
        ("dict hash: moved, same model and losses", "dict_cosmetic_same_losses"),
        ("dict hash: moved, model changed", "dict_tracked"),
        ("dict hash: kept, model changed", "dict_hidden"),
        ("graph hash: moved, same model", "graph_cosmetic"),
        ("graph hash: moved, same model and losses", "graph_cosmetic_same_losses"),
        ("graph hash: moved, model changed", "graph_tracked"),
        ("graph hash: kept, model changed", "graph_hidden"),
    ]
    rows = {model: {"built": analysis[model]["built"], **analysis[model]["counts"]} for model in models}
    rows["total"] = {key: sum(row[key] for row in rows.values()) for _, key in columns}
    print("\n| model | " + " | ".join(title for title, _ in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(str(row[key]) for _, key in columns) + " |")


def print_findings(records: dict[tuple[str, str], dict], analysis: dict[str, Any], models: tuple[str, ...]) -> None:
    """Transitions to look into: the graph hash moved though the model did not, or a hash stayed though it did."""
    from i6_rc_jobs import ReturnnCommonSerializer
    from i6_rc_jobs._cli.explain import explain

    def graph_serializer(version: str, model: str) -> ReturnnCommonSerializer:
        serializer = pickle.loads(records[version, model]["serializer"])
        return ReturnnCommonSerializer(
            extern_data=serializer.extern_data, network=serializer.network, hash_scheme="graph"
        )

    cosmetic, hidden = [], []
    for model in models:
        for t in analysis[model]["transitions"]:
            if t["graph_changed"] and not t["semantic"]:
                cosmetic.append((model, t))
            if t["semantic"] and not (t["dict_changed"] and t["graph_changed"]):
                hidden.append((model, t))
    reporting = sum(bool(t["losses"]) for _, t in cosmetic)
    print(f"\nGraph hash moved, same model ({len(cosmetic)}; of these, {reporting} with other loss names or values):")
    for model, t in cosmetic:
        fingerprint = records[t["to"], model]["fingerprint"]
        losses = f"; what RETURNN reports differs: {'; '.join(t['losses'])}" if t["losses"] else ""
        print(
            f"- {model} {t['from']} -> {t['to']}: fingerprints equal ({len(fingerprint.params)} parameters with "
            f"their shapes and initializers, output {'x'.join(fingerprint.output_dims)}){losses}; hash-diff:"
        )
        try:
            lines = list(explain(graph_serializer(t["from"], model), graph_serializer(t["to"], model)))
        except Exception as exc:
            lines = [f"hash-diff failed: {_reason(exc)}"]
        for line in lines[:3]:
            print(f"    {line[:300]}")
        if len(lines) > 3:
            print(f"    (and {len(lines) - 3} more lines)")
    print(f"\nA hash kept across a semantic change ({len(hidden)}):")
    for model, t in hidden:
        kept = [h for h in HASHES if not t[f"{h}_changed"]]
        print(f"- {model} {t['from']} -> {t['to']}: {' and '.join(kept)} hash kept; the model differs:")
        for line in t["semantic"][:3]:
            print(f"    {line[:300]}")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.graph_history", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes at once (default 2)")
    parser.add_argument("--cache", type=pathlib.Path, default=default_cache(), help="where records are kept")
    parser.add_argument(
        "--rehash", action="store_true", help="recompute both hashes of every record from its serializer"
    )
    parser.add_argument("--models", nargs="+", default=None, help="a subset of the models (default all three)")
    parser.add_argument("--out", type=pathlib.Path, default=REPO / "bench" / "results" / "graph_history.json")
    parser.add_argument("--record", nargs=3, metavar=("VERSION", "MODEL", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:  # a worker: one record, into FILE
        version, model, file = args.record
        pathlib.Path(file).write_bytes(pickle.dumps(make_record(version, model)))
        return 0

    from bench.history_models import MODELS

    models = tuple(args.models or MODELS)
    unknown = set(models) - set(MODELS)
    if unknown:
        parser.error(f"unknown models {sorted(unknown)}, choose from {MODELS}")
    start = time.perf_counter()
    # Sisyphus (imported with i6_rc_jobs) warns that there is no settings.py here: expected, as in bench.compare.
    logging.disable(logging.WARNING)
    import sisyphus.toolkit  # noqa: F401

    logging.disable(logging.NOTSET)
    print(f"records in {args.cache / record_key()}", file=sys.stderr)
    records = collect(models, args.cache, args.jobs, args.rehash)
    stale = sum(r.get("hashes", {}).get("hashing", hashing_key()) != hashing_key() for r in records.values())
    if stale:
        print(f"{stale} records were hashed by other hashing code: run with --rehash", file=sys.stderr)
    analysis = analyse(records, models, args.cache)
    print(f"returnn_common at {len(COMMITS)} commits, models {', '.join(models)}\n")
    print_records(records, analysis, models)
    print_counts(analysis, models)
    print_findings(records, analysis, models)
    seconds = time.perf_counter() - start
    print(f"\nrun time {seconds:.0f} s (--jobs {args.jobs})")
    report = {
        "commits": list(COMMITS),
        "models": list(models),
        "records": [
            {
                "version": v,
                "model": m,
                "error": records[v, m]["error"],
                "hashes": records[v, m].get("hashes"),
                "class": analysis[m]["classes"].get(v),
            }
            for v in COMMITS
            for m in models
        ],
        "analysis": analysis,
        "run_s": seconds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Running the fuzzer: base nets and their pairs (in worker processes), the report, findings written as found."""

from __future__ import annotations

import multiprocessing
import os
import pathlib
import random
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from .dims import DIM_NAMES, _all_dims
from .judge import Judge, hashes, serializer
from .corpora import Entry, load
from .rewrites import KINDS, make_base, make_variant
from .determinism import differences_between_processes
from .coverage import options_of, print_coverage
from .generators import GENERATORS, WIDE_GENERATORS
from .shrinker import counterexample_holds, reproducer, shrink


@dataclass
class Pair:
    kind: str  # a rule name, a dict rewrite or an edit
    base: Any
    variant: Any
    staged: bool
    source: str = "generated"  # or the returnn_common test whose model the base is
    generators: tuple = ()  # the kinds of the generators that made the base
    options: tuple = ((), ())  # (class, option) of the layers of both nets; those that differ between them
    kept: dict = field(default_factory=dict)  # scheme -> hashes equal
    status: str = "ok"  # "ok", "variant invalid", "refused"
    differences: list = field(default_factory=list)  # what RETURNN finds, when built
    counterexamples: dict = field(default_factory=dict)  # scheme -> (shrunk base, shrunk variant, differences)
    same_model: Optional[bool] = None


def run_base(args: tuple[int, int, int, bool, float]) -> tuple[int, Optional[str], list[Pair], int]:
    """One base net and its pairs (in a worker)."""
    seed, index, per_base, build_moved, corpus_share = args
    judge = _JUDGE
    origin = make_base(seed, index, _CORPUS, corpus_share)
    base, staged, extern = origin.net, origin.staged, (None if origin.source == "generated" else origin.extern_data)
    base_hashes = hashes(base, staged, extern)
    if any(type(h) is str for h in base_hashes.values()):
        return index, "refused: " + next(h for h in base_hashes.values() if type(h) is str), [], judge.builds
    base_code = serializer(base, "dict", staged, extern).get()
    built_base = judge.build(base_code, base, staged)
    if built_base.error is not None:
        return index, "invalid: " + built_base.error, [], judge.builds
    rng = random.Random(f"{seed}:{index}:pairs")
    pairs = []
    kinds = rng.sample(KINDS, len(KINDS)) * 2  # each kind that applies gets its chance
    for kind in kinds:
        if len(pairs) >= per_base:
            break
        variant = make_variant(base, staged, kind, rng)
        if variant is None:
            continue
        pair = Pair(kind, base, variant, staged, origin.source, tuple(sorted(set(origin.kinds))))
        pair.options = options_of(base, variant, staged)
        pairs.append(pair)
        variant_hashes = hashes(variant, staged, extern)
        crash = next((h for h in variant_hashes.values() if type(h) is str and h.startswith("crash:")), None)
        if crash is not None:
            pair.status = "refused"
            text = reproducer("dict", kind, base, variant, staged, [crash], crash=True)
            pair.counterexamples["serializer"] = (_signature("serializer", kind, [crash]), text)
            continue
        if any(type(h) is str for h in variant_hashes.values()):
            pair.status = "refused"
            continue
        pair.kept = {s: base_hashes[s] == variant_hashes[s] for s in base_hashes}
        if not any(pair.kept.values()) and not build_moved:
            continue
        code = serializer(variant, "dict", staged, extern).get()
        built = judge.build(code, variant, staged)
        if built.error is not None and not any(pair.kept.values()):
            pair.status = "variant invalid"
            continue
        pair.differences = judge.differences(built_base, built, staged, loaded=False)
        loaded_differs = built_base.loaded != built.loaded
        pair.same_model = not pair.differences
        for scheme, kept in pair.kept.items():
            if kept and (pair.differences or (scheme == "dict" and loaded_differs)):
                found = pair.differences or ["the written configs load as other dicts or dims"]
                signature = _signature(scheme, kind, found)
                a, b, lines = (
                    (base, variant, found)
                    if signature in judge.shrunk
                    else shrink(judge, scheme, base, variant, staged, extern)
                )
                judge.shrunk.add(signature)  # one of a kind is shrunk per process: shrinking costs builds
                text = reproducer(scheme, kind, a, b, staged, lines, extern_data=extern)
                if extern is not None:
                    text = f"# base net: the model of {origin.source}\n{text}"
                pair.counterexamples[scheme] = (signature, text)
    for pair in pairs:  # the dicts hold this process's dims: the reproducers are the text
        pair.base = pair.variant = None
    return index, None, pairs, judge.builds


_JUDGE: Judge
_CORPUS: dict[str, list[Entry]] = {}  # the test suites' models, by suite


def _init_worker(own_process: bool = True, corpora: tuple[tuple[str, pathlib.Path], ...] = ()) -> None:
    global _JUDGE, _CORPUS
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    _JUDGE = Judge()
    _CORPUS = {suite: entries for suite, path in corpora if (entries := load(suite, path))}
    if not own_process:  # in the caller's process: its TensorFlow settings stay as they are
        return
    import tensorflow as tf

    # Sessions of small graphs: one thread each (the processes are the parallelism), no graph rewriting (it costs
    # more than these graphs run; both nets of a pair are run alike).
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


def _signature(scheme: str, kind: str, lines: list[str]) -> str:
    first = re.sub(r"\b(of|param) \S+", r"\1", lines[0]) if lines else "?"  # which variable: not the kind
    words = re.sub(r"[^a-z]+", "-", re.sub(r"'[^']*'|\[[^\]]*\]|\d+(\.\d+)?", "", first.lower())).strip("-")
    words = "-".join(words.split("-")[:5])
    return f"{scheme}-{kind}-{words}"


@dataclass
class Report:
    table: dict = field(default_factory=dict)  # (scheme, kind) -> counter dict
    bases: int = 0
    invalid_bases: list = field(default_factory=list)
    pairs: int = 0
    counterexamples: list = field(default_factory=list)  # (signature, scheme, kind, text)
    builds: int = 0
    seconds: float = 0.0
    generators: dict = field(default_factory=dict)  # generator kind -> pairs whose base it added to
    sources: dict = field(default_factory=dict)  # "generated" or "returnn_common" -> pairs
    options: dict = field(default_factory=dict)  # (class, option) -> [pairs with it, pairs that change it]
    process_checked: int = 0  # bases whose config hash was compared with a fresh process's


def run(
    seed: int = 1,
    pairs: int = 200,
    processes: int = 2,
    per_base: int = 8,
    build_moved: bool = False,
    findings: Optional[pathlib.Path] = None,
    out=sys.stdout,
    corpora: tuple[tuple[str, pathlib.Path], ...] = (),
    corpus_share: float = 0.25,
    process_check: int = 8,
    seconds: Optional[float] = None,
) -> Report:
    """Runs ``pairs`` pairs of base nets made from ``seed`` (with ``corpora``, (suite, path) of collected corpora of
    test suites' models, ``corpus_share`` of the bases is one of those) and prints the report to ``out``; then
    hashes the configs of the first ``process_check`` bases again in a fresh process (:mod:`fuzz.determinism`).
    ``seconds``: no new base after this long (the report then covers the pairs done)."""
    report = Report()
    start = time.time()
    bases = -(-pairs // per_base)
    index = 0
    builds_by_worker: dict[int, int] = {}
    context = multiprocessing.get_context("spawn" if processes > 1 else "fork")
    seen: set[str] = set()

    def handle(result: tuple[int, Optional[str], list[Pair], int], worker: int) -> None:
        idx, problem, found, builds = result
        builds_by_worker[worker] = builds
        report.bases += 1
        if report.bases % 10 == 0:
            print(
                f"[{time.time() - start:.0f} s] {report.pairs} pairs, {len(report.counterexamples)} counterexamples",
                file=sys.stderr,
                flush=True,
            )
        if problem is not None:
            report.invalid_bases.append((idx, problem))
            return
        for pair in found:
            if report.pairs >= pairs:
                break
            report.pairs += 1
            for generator in pair.generators:
                report.generators[generator] = report.generators.get(generator, 0) + 1
            source = pair.source.partition(" ")[0]
            report.sources[source] = report.sources.get(source, 0) + 1
            present, touched = pair.options
            for key in present:
                report.options.setdefault(key, [0, 0])[0] += 1
            for key in touched:
                report.options[key][1] += 1
            if "serializer" in pair.counterexamples:
                sig, text = pair.counterexamples["serializer"]
                report.counterexamples.append((sig, "serializer", pair.kind, text))
                if sig not in seen:
                    seen.add(sig)
                    print(f"\nCRASH {sig}\n{text}\n", file=out, flush=True)
                    if findings is not None:
                        _write_finding(findings, sig, text)
            for scheme in ("dict", "graph"):
                row = report.table.setdefault(
                    (scheme, pair.kind),
                    {
                        "pairs": 0,
                        "kept": 0,
                        "moved": 0,
                        "refused": 0,
                        "invalid": 0,
                        "kept, RETURNN same": 0,
                        "moved, RETURNN same": 0,
                        "counterexamples": 0,
                        "exercised": 0,
                    },
                )
                row["pairs"] += 1
                if pair.status == "refused":
                    row["refused"] += 1
                    continue
                if pair.status == "variant invalid":
                    row["invalid"] += 1
                    continue
                kept = pair.kept[scheme]
                row["kept" if kept else "moved"] += 1
                if pair.same_model:
                    row["kept, RETURNN same" if kept else "moved, RETURNN same"] += 1
                if scheme == "graph" and kept and not pair.kept["dict"]:
                    row["exercised"] += 1
                if scheme in pair.counterexamples:
                    row["counterexamples"] += 1
                    sig, text = pair.counterexamples[scheme]
                    report.counterexamples.append((sig, scheme, pair.kind, text))
                    if sig not in seen:
                        seen.add(sig)
                        print(f"\nCOUNTEREXAMPLE {sig}\n{text}\n", file=out, flush=True)
                        if findings is not None:
                            _write_finding(findings, sig, text)

    def more_wanted() -> bool:
        return report.pairs < pairs and index < bases * 3 and (seconds is None or time.time() - start < seconds)

    try:
        if processes <= 1:
            _init_worker(own_process=False, corpora=corpora)
            while more_wanted():
                handle(run_base((seed, index, per_base, build_moved, corpus_share)), 0)
                index += 1
        else:
            with context.Pool(processes, initializer=_init_worker, initargs=(True, corpora)) as pool:
                while more_wanted():
                    more = max(bases - report.bases, processes)
                    batch = [(seed, i, per_base, build_moved, corpus_share) for i in range(index, index + more)]
                    index += len(batch)
                    for result in pool.imap_unordered(_run_base_tagged, batch):
                        handle(result[1:], result[0])
                        if not more_wanted():
                            break
    except KeyboardInterrupt:  # the report of the pairs done so far
        print("\ninterrupted", file=out)
    if process_check:
        checked = [i for i, _ in zip(range(index), range(process_check))]
        for sig, text in differences_between_processes(seed, checked):
            report.counterexamples.append((sig, "process", "process", text))
            print(f"\nCOUNTEREXAMPLE {sig}\n{text}\n", file=out, flush=True)
            if findings is not None:
                _write_finding(findings, sig, text)
        report.process_checked = len(checked)
    report.builds = sum(builds_by_worker.values())
    report.seconds = time.time() - start
    print_report(report, out)
    return report


def _run_base_tagged(args):
    return (os.getpid(),) + run_base(args)


def _write_finding(folder: pathlib.Path, sig: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    scheme, _, name = sig.partition("-")
    path = folder / f"{scheme}-{name[:80]}.md"
    if path.exists():
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"# {sig}\n\nFound by the differential hash fuzzer (`python -m fuzz`).\n\n```python\n{text}\n```\n")
    tmp.rename(path)


def print_report(report: Report, out) -> None:
    print(
        f"\n{report.pairs} pairs from {report.bases} base nets ({len(report.invalid_bases)} base nets discarded: "
        f"RETURNN or the serializer rejects them), {report.builds} RETURNN builds, {report.seconds:.0f} s",
        file=out,
    )
    columns = [
        "pairs",
        "kept",
        "moved",
        "kept, RETURNN same",
        "moved, RETURNN same",
        "invalid",
        "refused",
        "counterexamples",
    ]
    for scheme in ("graph", "dict"):
        print(f"\n{scheme} scheme\n", file=out)
        print("| pair kind | " + " | ".join(columns) + (" | exercised |" if scheme == "graph" else " |"), file=out)
        print("|---" * (len(columns) + 1 + (scheme == "graph")) + "|", file=out)
        for kind in KINDS:
            row = report.table.get((scheme, kind))
            if row is None:
                continue
            cells = [str(row[c]) for c in columns] + ([str(row["exercised"])] if scheme == "graph" else [])
            print(f"| {kind} | " + " | ".join(cells) + " |", file=out)
    total = {s: sum(r["counterexamples"] for (sc, _), r in report.table.items() if sc == s) for s in ("graph", "dict")}
    print(
        f"\ncounterexamples: graph {total['graph']}, dict {total['dict']} "
        f"({len({c[0] for c in report.counterexamples})} kinds)",
        file=out,
    )
    print(f"\nconfig hashes compared with a fresh process's: {report.process_checked} bases, 2 schemes", file=out)
    print(f"\npairs by source of their base: {dict(sorted(report.sources.items()))}", file=out)
    print("pairs by the generators that made their base:", file=out)
    for generator in [*GENERATORS, *WIDE_GENERATORS]:
        wide = " (wide)" if generator in WIDE_GENERATORS else ""
        print(f"  {generator}{wide}: {report.generators.get(generator, 0)}", file=out)
    print_coverage(report.options, out)
    reasons: dict[str, int] = {}
    for _, problem in report.invalid_bases:
        reasons[problem[:90]] = reasons.get(problem[:90], 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda x: -x[1])[:10]:
        print(f"  discarded base nets: {count} x {reason}", file=out)


def recheck(folder: pathlib.Path, out=sys.stdout) -> int:
    """Re-checks each finding written to ``folder`` (its two nets) with the hashing code imported now: prints
    whether it still holds; returns how many do. A finding of hashes in two processes is run again that way."""
    import ast

    import fuzz.code_options
    from i6_core.returnn.config import CodeWrapper

    from i6_rc_jobs._verify.semantics import load_config

    _init_worker(own_process=False)
    names: dict[str, Any] = {name: d for d in _all_dims() for i, name in DIM_NAMES.items() if i == id(d)}
    names.update(CodeWrapper=CodeWrapper, fuzz=fuzz)
    holding = 0
    for path in sorted(folder.glob("*.md")):
        text = path.read_text()
        scheme = "dict" if path.name.startswith("dict-") else "graph"
        extern_data = extern_data_b = None
        codes = [re.search(rf"^{side}_code = (.*)$", text, re.M) for side in "ab"]
        found = [re.search(rf"^{side} = (\{{.*?^\}})$", text, re.M | re.S) for side in "ab"]
        if all(codes):  # a returnn_common model: the configs written of both nets
            configs = [load_config(ast.literal_eval(c.group(1))) for c in codes if c is not None]
            a, b = (c.typed_value("network") for c in configs)
            extern_data, extern_data_b = (c.typed_value("extern_data") for c in configs)
        elif all(found):
            a, b = (eval(f.group(1), dict(names)) for f in found if f is not None)  # the snippet this module wrote
        else:
            continue
        lines = counterexample_holds(_JUDGE, scheme, a, b, "staged_networks=" in text, extern_data, extern_data_b)
        holding += lines is not None
        print(f"{path.name}: {'still holds: ' + lines[0] if lines else 'fixed'}", file=out, flush=True)
    return holding

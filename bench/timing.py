"""Repeated timing of multi-step pipelines: per step and in all, median over repetitions after a warm-up.

A method is a function ``(rep) -> None`` that runs its steps inside ``rep.step(name)`` and builds fresh objects
itself, so no repetition reuses what an earlier one computed. An error ends the repetition: the error text is
recorded for the failing step instead of a number, because a broken alternative must show up as broken."""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
import traceback
from typing import Any, Callable, Iterator, Optional


class Rep:
    """One repetition: the seconds per step, facts such as byte sizes, and the step that failed (if any)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.facts: dict[str, Any] = {}
        self.current: Optional[str] = None

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.current = name
        start = time.perf_counter()
        yield
        self.seconds[name] = time.perf_counter() - start
        self.current = None


def error_text(error: BaseException) -> str:
    """The exception as one line plus where it was raised, so the JSON tells which code failed."""
    frames = traceback.extract_tb(error.__traceback__)
    text = f"{type(error).__name__}: {error}".splitlines()[0][:300] if str(error) else type(error).__name__
    if not frames:
        return text
    last = frames[-1]
    where = f" (at {last.filename.rsplit('/', 3)[-1]}:{last.lineno}"
    return text + where + (f": {last.line.strip()})" if not str(error) and last.line else ")")


def measure_interleaved(
    methods: dict[str, tuple[Callable[[Rep], None], tuple[str, ...]]], reps: int, warmup: int = 1
) -> dict[str, dict[str, Any]]:
    """Runs every method warmup + reps times, round-robin (repetition i of all methods, then i + 1), so that a burst
    of load on a shared machine hits all methods alike instead of one; medians in ms per step and of the
    per-repetition totals. GC stays on (it is part of the real cost), but a collection before each repetition keeps
    one repetition's garbage from being charged to the next. A failing method is still repeated, so that the steps
    before the failure get medians too; its total is None and its first error is kept."""
    samples: dict[str, list[Rep]] = {name: [] for name in methods}
    errors: dict[str, list[tuple[str, str]]] = {name: [] for name in methods}
    for i in range(warmup + reps):
        for name, (method, _) in methods.items():
            rep = Rep()
            gc.collect()
            try:
                method(rep)
            except Exception as e:  # noqa: BLE001 - an alternative's failure is a result, recorded as text
                errors[name].append((rep.current or "?", error_text(e)))
            if i >= warmup:
                samples[name].append(rep)
    return {name: _summary(samples[name], steps, errors[name], reps) for name, (_, steps) in methods.items()}


def _summary(samples: list[Rep], steps: tuple[str, ...], errors: list[tuple[str, str]], reps: int) -> dict[str, Any]:
    result: dict[str, Any] = {"ok": not errors, "reps": reps, "steps": {}}
    if errors:
        result["failed_step"], result["error"] = errors[0]
    for name in steps:
        values = [r.seconds[name] * 1e3 for r in samples if name in r.seconds]
        if len(values) == len(samples):
            result["steps"][name] = {"median_ms": statistics.median(values), "ms": [round(v, 3) for v in values]}
        else:
            result["steps"][name] = {"error": result["error"] if name == result["failed_step"] else "not reached"}
    totals = [sum(r.seconds[name] for name in steps) * 1e3 for r in samples] if not errors else []
    result["total_ms"] = statistics.median(totals) if totals else None
    result["total_ms_all"] = [round(v, 3) for v in totals]
    result["facts"] = _facts(samples)
    return result


def _facts(samples: list[Rep]) -> dict[str, Any]:
    """Facts of the first repetition, and whether every repetition agreed on them (e.g. the same hash); timings
    among them (``*_ms``) are medians over the repetitions and left out of that agreement."""

    def fixed(rep: Rep) -> dict[str, Any]:
        return {k: v for k, v in rep.facts.items() if not k.endswith("_ms")}

    facts = dict(samples[0].facts)
    for key in facts:
        if key.endswith("_ms"):
            facts[key] = statistics.median(r.facts[key] for r in samples)
    facts["stable_across_reps"] = all(fixed(r) == fixed(samples[0]) for r in samples)
    return facts

"""cProfile of our four steps (construct, sis_hash, pickle, write) on one model, to find the hot spots."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import tempfile
from typing import Optional

from .methods import ours
from .models import Model
from .timing import Rep


def profile_ours(model: Model, reps: int = 3, top: int = 25, dump: Optional[str] = None) -> str:
    """Runs our four steps ``reps`` times under cProfile (after one unprofiled warm-up) and returns the top ``top``
    functions by cumulative and by own time; ``dump`` also saves the raw stats (for snakeviz or pstats)."""
    with tempfile.TemporaryDirectory() as tmp:
        run = ours(model, os.path.join(tmp, "returnn.config"), details=False)
        run(Rep())
        profiler = cProfile.Profile()
        profiler.enable()
        seconds = []
        for _ in range(reps):
            rep = Rep()
            run(rep)
            seconds.append(rep.seconds)
        profiler.disable()
    if dump:
        profiler.dump_stats(dump)
    out = io.StringIO()
    steps = ", ".join(f"{name} {sum(s[name] for s in seconds) * 1e3 / reps:.1f} ms" for name in seconds[0])
    out.write(f"profile of ours on {model.name}, {reps} repetitions (per repetition, profiled: {steps})\n")
    for key in ("cumulative", "tottime"):
        out.write(f"\n=== top {top} by {key} ===\n")
        stats = pstats.Stats(profiler, stream=out)
        stats.strip_dirs().sort_stats(key).print_stats(top)
    return out.getvalue()

"""Naming many dims of one description: time per dim for 2000, 4000 and 8000 dims, which should stay flat (the
allocator resumes each stem's suffix search; it was quadratic: 2000 dims 6.4 s, 8000 78 s).

``.venv/bin/python -m bench.naming``"""

from __future__ import annotations

import time

from returnn.tensor import Dim

from i6_rc_jobs import ReturnnCommonSerializer

SIZES = (2000, 4000, 8000)


def seconds_to_serialize(n: int) -> float:
    """Seconds to convert a network of ``n`` distinct dims that all share the description ``"hidden"``."""
    network = {f"l{i}": {"class": "linear", "out_dim": Dim(i + 1, description="hidden")} for i in range(n)}
    start = time.perf_counter()
    ReturnnCommonSerializer(network=network)
    return time.perf_counter() - start


def main() -> None:
    per_dim = {}
    for n in SIZES:
        seconds = min(seconds_to_serialize(n) for _ in range(3))
        per_dim[n] = seconds / n
        print(f"{n:5d} dims: {seconds:7.3f} s, {per_dim[n] * 1e6:7.1f} us per dim")
    print(f"per-dim ratio {SIZES[-1]}/{SIZES[0]}: {per_dim[SIZES[-1]] / per_dim[SIZES[0]]:.2f} (flat: ~1)")


if __name__ == "__main__":
    main()

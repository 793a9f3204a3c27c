"""What hashing a model by what it computes costs against hashing it by its code, in the build (cold: the build cache
empty) and in a manager start (warm: the build cached). Run from the repository root:

    .venv/bin/python -m bench.computation_cost [--reps 3] [--out bench/results/computation_cost.json]

A setup in a temporary directory holds one model file: i6_models' ``ConformerEncoderV1`` (2 layers, dim 64) with its
VGG frontend (``VGG4LayerActFrontendV1``) over 80 features, i6_models from the pinned checkout (``.deps/src``). Each
start is a fresh interpreter, as ``sis manager`` is, that makes ``by_content("bench_model:Model")`` (by code) or the
same with ``computation=Inputs.of(("B", "T", 80), TensorSpec(("B", "T"), "bool"), T=(16, 3000))`` and hashes it;
the variants alternate. Cold: each start with an empty build cache of its own; warm: a start after one that built.
Printed: the median seconds of each, and the ratio computation / code."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.manager import REPO, date

MODEL = textwrap.dedent("""
    import torch
    from i6_models.assemblies.conformer import conformer_v1
    from i6_models.config import ModuleFactoryV1
    from i6_models.parts import conformer as parts
    from i6_models.parts.frontend import vgg_act

    DIM = 64


    class Model(conformer_v1.ConformerEncoderV1):
        def __init__(self):
            frontend = ModuleFactoryV1(
                vgg_act.VGG4LayerActFrontendV1,
                vgg_act.VGG4LayerActFrontendV1Config(
                    in_features=80, conv1_channels=8, conv2_channels=8, conv3_channels=8, conv4_channels=8,
                    conv_kernel_size=(3, 3), conv_padding=None, pool1_kernel_size=(2, 1), pool1_stride=(2, 1),
                    pool1_padding=None, pool2_kernel_size=(2, 1), pool2_stride=(2, 1), pool2_padding=None,
                    activation=torch.nn.functional.relu, out_features=DIM,
                ),
            )
            silu = torch.nn.functional.silu
            block = conformer_v1.ConformerBlockV1Config(
                ff_cfg=parts.ConformerPositionwiseFeedForwardV1Config(DIM, 4 * DIM, 0.1, silu),
                mhsa_cfg=parts.ConformerMHSAV1Config(DIM, 4, 0.1, 0.1),
                conv_cfg=parts.ConformerConvolutionV1Config(DIM, 31, 0.1, silu, torch.nn.BatchNorm1d(DIM)),
            )
            super().__init__(conformer_v1.ConformerEncoderV1Config(num_layers=2, frontend=frontend, block_cfg=block))
    """)
#: One manager start: makes and hashes the marker, prints the seconds that took and how it is hashed.
MANAGER = textwrap.dedent("""
    import json
    import sys
    import time

    started = time.perf_counter()
    from sisyphus.hash import sis_hash_helper

    from i6_rc_jobs import Inputs, TensorSpec, by_content

    computation = None
    if sys.argv[1] == "computation":
        computation = Inputs.of(("B", "T", 80), TensorSpec(("B", "T"), "bool"), T=(16, 3000))
    marker = by_content("bench_model:Model", computation=computation)
    sis_hash_helper(marker)
    computed = marker.computed()
    print(json.dumps({"seconds": time.perf_counter() - started, "how": computed.summary() if computed else "code"}))
    """)
SCHEMES = ("code", "computation")


def start(setup: Path, scheme: str, cache: Path) -> dict[str, Any]:
    """One manager start: its wall time (the interpreter's start included), the seconds of making and hashing the
    marker, and how it was hashed."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(setup), str(REPO / ".deps" / "src" / "i6_models"), str(REPO)]),
        "I6_RC_BUILD_CACHE": str(cache),
        "CUDA_VISIBLE_DEVICES": "",
    }
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manager.py", scheme], cwd=setup, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return {"wall": wall, **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "computation_cost.json"))
    args = parser.parse_args()
    runs: dict[str, dict[str, list[float]]] = {scheme: {"cold": [], "warm": []} for scheme in SCHEMES}
    how = {}
    with tempfile.TemporaryDirectory(prefix="computation-cost-") as tmp:
        setup = Path(tmp)
        (setup / "bench_model.py").write_text(MODEL)
        (setup / "manager.py").write_text(MANAGER)
        for rep in range(args.reps):
            for scheme in SCHEMES:
                cache = setup / f"cache-{scheme}-{rep}"
                cold = start(setup, scheme, cache)
                warm = start(setup, scheme, cache)
                runs[scheme]["cold"].append(cold["wall"])
                runs[scheme]["warm"].append(warm["wall"])
                how[scheme] = warm["how"]
                print(f"rep {rep} {scheme}: cold {cold['wall']:.1f} s, warm {warm['wall']:.2f} s ({warm['how']})")
    lines = [
        "| start | by code: median s | by computation: median s | computation / code |",
        "|---|---:|---:|---:|",
    ]
    result: dict[str, Any] = {"date": date(), "reps": args.reps, "how": how, "runs": runs}
    for kind in ("cold", "warm"):
        code, computation = (statistics.median(runs[scheme][kind]) for scheme in SCHEMES)
        result[f"{kind}_ratio"] = computation / code
        lines.append(f"| {kind} | {code:.2f} | {computation:.2f} | {computation / code:.2f} |")
    print("\n".join(lines))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

"""Shrinking a counterexample while it persists, and writing it as a reproducer."""

from __future__ import annotations

import copy
from typing import Any, Iterator, Optional

from .dims import DIM_PROLOG, _all_dims, py
from .judge import Judge, hashes, serializer
from .nets import Net, _first, layers_of, rename


def counterexample_holds(judge: Judge, scheme: str, a: Any, b: Any, staged: bool) -> Optional[list[str]]:
    ha, hb = hashes(a, staged), hashes(b, staged)
    if type(ha[scheme]) is str or ha[scheme] != hb[scheme]:
        return None
    code_a, code_b = serializer(a, "dict", staged).get(), serializer(b, "dict", staged).get()
    built_a, built_b = judge.build(code_a, a, staged), judge.build(code_b, b, staged)
    if built_a.error or built_b.error:
        return None
    lines = judge.differences(built_a, built_b, staged, loaded=scheme == "dict")
    return lines or None


def shrink(judge: Judge, scheme: str, a: Any, b: Any, staged: bool, budget: int = 40) -> tuple[Any, Any, list[str]]:
    """Drops layers (references to one go to its first source) and options from both nets while the counterexample
    persists."""
    lines = counterexample_holds(judge, scheme, a, b, staged)
    if lines is None:  # flaky: keep it as found
        return a, b, ["(not reproduced when shrinking)"]
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for candidate in _shrink_candidates(a, b, staged):
            tries += 1
            if tries > budget:
                break
            found = counterexample_holds(judge, scheme, *candidate, staged)
            if found is not None:
                a, b, lines = candidate[0], candidate[1], found
                improved = True
                break
    return a, b, lines


def _nets(value: Any, staged: bool) -> list[Net]:
    return [value[e] for e in sorted(value)] if staged else [value]


def _shrink_candidates(a: Any, b: Any, staged: bool) -> Iterator[tuple[Any, Any]]:
    memo = lambda: {id(d): d for d in _all_dims()}  # noqa: E731
    paths = sorted(
        {w.path for n in _nets(a, staged) for w in layers_of(n)}
        & {w.path for n in _nets(b, staged) for w in layers_of(n)}
    )
    for path in sorted(paths, key=lambda p: -p.count("/")) + []:
        if path.rpartition("/")[2] == "output":
            continue
        na, nb = copy.deepcopy(a, memo()), copy.deepcopy(b, memo())
        if all(
            _drop_layer(n, path)
            for n in _nets(na, staged) + _nets(nb, staged)
            if any(w.path == path for w in layers_of(n))
        ):
            yield na, nb
    for path in paths:
        for key in (
            "dropout",
            "L2",
            "activation",
            "with_bias",
            "name_scope",
            "trainable",
            "loss_opts",
            "loss_scale",
            "is_output_layer",
            "param_variational_noise",
            "forward_weights_init",
            "initial_output",
        ):
            na, nb = copy.deepcopy(a, memo()), copy.deepcopy(b, memo())
            changed = False
            for n in _nets(na, staged) + _nets(nb, staged):
                for w in layers_of(n):
                    if w.path == path and key in w.desc:
                        del w.desc[key]
                        changed = True
            if changed:
                yield na, nb


def _drop_layer(net: Net, path: str) -> bool:
    for w in layers_of(net):
        if w.path == path:
            source = w.desc.get("from", "data")
            source = _first(source) if source else "data"
            if type(source) is not str:
                return False
            del w.container[w.name]
            rename(net, w.name, source, in_code=True)
            return True
    return False


def reproducer(scheme: str, kind: str, a: Any, b: Any, staged: bool, lines: list[str], crash: bool = False) -> str:
    part = "staged_networks" if staged else "network"
    if crash:
        return "\n".join(
            [
                f"# pair kind {kind}: the serializer crashes on b without a path: {lines[0]}",
                "from i6_rc_jobs import ReturnnCommonSerializer",
                DIM_PROLOG,
                f"b = {py(b)}",
                f'ReturnnCommonSerializer(extern_data=EXTERN_DATA, {part}=b, hash_scheme="graph")._sis_hash()',
            ]
        )
    check = (
        "same_model(sa.get(), sb.get())"
        if not staged
        else "[same_model(sa.get() + f'\\nnetwork = get_network({e})\\n', sb.get() + f'\\nnetwork = get_network({e})\\n') for e in sorted(a)]"
    )
    return "\n".join(
        [
            f"# {scheme} scheme, pair kind {kind}: the {scheme} hashes are equal, RETURNN finds:",
            *(f"#   {line}" for line in lines),
            "import os",
            'os.environ["CUDA_VISIBLE_DEVICES"] = ""',
            "from i6_rc_jobs import ReturnnCommonSerializer",
            "from i6_rc_jobs.semantics import same_model",
            DIM_PROLOG,
            f"a = {py(a)}",
            f"b = {py(b)}",
            f'sa = ReturnnCommonSerializer(extern_data=EXTERN_DATA, {part}=a, hash_scheme="{scheme}")',
            f'sb = ReturnnCommonSerializer(extern_data=EXTERN_DATA, {part}=b, hash_scheme="{scheme}")',
            "assert sa._sis_hash() == sb._sis_hash()",
            f"print({check})  # the eval judge; bench.hash_fuzz.fingerprints also judges training",
        ]
    )

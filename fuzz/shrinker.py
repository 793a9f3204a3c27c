"""Shrinking a counterexample while it persists, and writing it as a reproducer."""

from __future__ import annotations

import copy
from typing import Any, Iterator, Optional

from .dims import DIM_PROLOG, _all_dims, py
from .judge import Judge, hashes, serializer
from .nets import Net, _first, layers_of, rename


def counterexample_holds(
    judge: Judge,
    scheme: str,
    a: Any,
    b: Any,
    staged: bool,
    extern_data: Optional[dict] = None,
    extern_data_b: Optional[dict] = None,
) -> Optional[list[str]]:
    """What RETURNN finds different in two nets whose ``scheme`` hashes are equal; None if they are not, or if
    RETURNN finds them the same. ``extern_data_b``: b's, if not the same dict as a's (b loaded of its own config)."""
    extern_b = extern_data if extern_data_b is None else extern_data_b
    ha, hb = hashes(a, staged, extern_data), hashes(b, staged, extern_b)
    if type(ha[scheme]) is str or ha[scheme] != hb[scheme]:
        return None
    code_a, code_b = serializer(a, "dict", staged, extern_data).get(), serializer(b, "dict", staged, extern_b).get()
    built_a, built_b = judge.build(code_a, a, staged), judge.build(code_b, b, staged)
    if built_a.error and built_b.error:
        return None
    lines = judge.differences(built_a, built_b, staged, loaded=scheme == "dict")
    return lines or None


def shrink(
    judge: Judge, scheme: str, a: Any, b: Any, staged: bool, extern_data: Optional[dict] = None, budget: int = 40
) -> tuple[Any, Any, list[str]]:
    """Drops layers (references to one go to its first source) and options from both nets while the counterexample
    persists."""
    lines = counterexample_holds(judge, scheme, a, b, staged, extern_data)
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
            found = counterexample_holds(judge, scheme, *candidate, staged, extern_data)
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


def reproducer(
    scheme: str,
    kind: str,
    a: Any,
    b: Any,
    staged: bool,
    lines: list[str],
    crash: bool = False,
    extern_data: Optional[dict] = None,
) -> str:
    """A Python snippet that shows the counterexample: both nets, their equal hashes, what RETURNN finds. Nets over
    the generated nets' dims are written as dicts; others (returnn_common's models) as the configs written of them,
    which load as the same dicts."""
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
    if extern_data is None:
        nets = [
            DIM_PROLOG,
            f"a = {py(a)}",
            f"b = {py(b)}",
            f'sa = ReturnnCommonSerializer(extern_data=EXTERN_DATA, {part}=a, hash_scheme="{scheme}")',
            f'sb = ReturnnCommonSerializer(extern_data=EXTERN_DATA, {part}=b, hash_scheme="{scheme}")',
        ]
    else:
        nets = [
            "from i6_rc_jobs._verify.semantics import load_config",
            *(f"{n}_code = {serializer(net, 'dict', staged, extern_data).get()!r}" for n, net in (("a", a), ("b", b))),
            "ca, cb = load_config(a_code), load_config(b_code)",
            *(
                f'{s} = ReturnnCommonSerializer(extern_data={c}.typed_value("extern_data"), '
                f'network={c}.typed_value("network"), hash_scheme="{scheme}")'
                for s, c in (("sa", "ca"), ("sb", "cb"))
            ),
        ]
    stages = [""] if not staged else [f"\nnetwork = get_network({e})\n" for e in sorted(a)]
    return "\n".join(
        [
            f"# {scheme} scheme, pair kind {kind}: the {scheme} hashes are equal, RETURNN finds:",
            *(f"#   {line}" for line in lines),
            "import os",
            'os.environ["CUDA_VISIBLE_DEVICES"] = ""',
            "from i6_rc_jobs import ReturnnCommonSerializer",
            "from i6_rc_jobs._verify.semantics import same_model",
            "from i6_rc_jobs._verify.training_semantics import training_differences, training_fingerprint",
            *nets,
            "assert sa._sis_hash() == sb._sis_hash()",
            f"for stage in {stages!r}:",
            "    print(same_model(sa.get() + stage, sb.get() + stage))",
            "    ta, tb = (training_fingerprint(s.get() + stage)[1] for s in (sa, sb))",
            "    print(training_differences(ta, tb))",
        ]
    )

"""Hashes of both schemes, and the judge: each written config built with RETURNN (eval and training fingerprints
of :mod:`i6_rc_jobs._verify.training_semantics`) and loaded as dicts and dims, and the differences of two builds."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Any, Optional

from returnn.tensor import Dim

from i6_rc_jobs._verify.training_semantics import training_differences, training_fingerprint

from .dims import EXTERN_DATA


def serializer(net: Any, scheme: str, staged: bool, extern_data: Optional[dict] = None):
    """The serializer of a pair's net (over the generated nets' extern data unless given)."""
    from i6_rc_jobs import ReturnnCommonSerializer

    extern_data = EXTERN_DATA if extern_data is None else extern_data
    if staged:
        return ReturnnCommonSerializer(extern_data=extern_data, staged_networks=net, hash_scheme=scheme)
    return ReturnnCommonSerializer(extern_data=extern_data, network=net, hash_scheme=scheme)


def hashes(net: Any, staged: bool, extern_data: Optional[dict] = None) -> dict[str, Any]:
    """scheme -> its hash (bytes), or the error text of a net the serializer refuses."""
    from i6_rc_jobs._serialization.errors import SerializationError

    result = {}
    for scheme in ("dict", "graph"):
        try:
            result[scheme] = serializer(net, scheme, staged, extern_data)._sis_hash()
        except SerializationError as exc:  # refused with its path: the pair is discarded
            result[scheme] = f"error: {exc}"
        except Exception as exc:  # a crash: bad input must give a SerializationError with the path
            result[scheme] = f"crash: {type(exc).__name__}: {exc}"
    return result


@dataclass
class Built:
    """What RETURNN makes of one written config: per stage, the eval fingerprint and the training one; or why it
    failed; and the loaded dicts in a canonical form (dims numbered, descriptions left out)."""

    error: Optional[str] = None
    eval: dict = field(default_factory=dict)
    train: dict = field(default_factory=dict)
    loaded: Any = None


def stage_codes(code: str, net: Any, staged: bool) -> dict[int, str]:
    if not staged:
        return {0: code}
    return {epoch: code + f"\nnetwork = get_network({epoch})\n" for epoch in sorted(net)}


class Judge:
    """Builds configs with RETURNN (cached by code) and compares them."""

    def __init__(self):
        self.cache: dict[str, Built] = {}
        self.builds = 0
        self.shrunk: set[str] = set()  # signatures of the counterexamples shrunk so far

    def build(self, code: str, net: Any, staged: bool) -> Built:
        built = self.cache.get(code)
        if built is None:
            built = self.cache[code] = Built()
            try:
                built.loaded = loaded_form(code, net, staged)
                for epoch, stage in stage_codes(code, net, staged).items():
                    self.builds += 1
                    with _quiet():
                        built.eval[epoch], built.train[epoch] = training_fingerprint(stage)
            except Exception as exc:
                built.error = f"{type(exc).__name__}: {str(exc)[:300]}"
        return built

    def differences(self, a: Built, b: Built, staged: bool, loaded: bool) -> list[str]:
        """What RETURNN finds different ([] for the same; a net it builds and one it refuses differ); with ``loaded``,
        also whether the configs load as the same dicts and dims."""
        if a.error is not None or b.error is not None:  # one that builds and one that does not run differently
            return [] if a.error and b.error else [f"only {'b' if a.error else 'a'} builds: {a.error or b.error}"]
        lines = []
        if loaded and a.loaded != b.loaded:
            lines.append(
                "the written configs load as other dicts or dims: " + _first_form_difference(a.loaded, b.loaded)
            )
        if a.eval.keys() != b.eval.keys():
            return lines + [f"stages {sorted(a.eval)} != {sorted(b.eval)}"]
        for epoch in a.eval:
            lines += [f"{_stage(epoch, staged)}{line}" for line in a.eval[epoch].differences(b.eval[epoch])]
        if lines:
            return lines
        for epoch in a.train:
            lines += [
                f"{_stage(epoch, staged)}training: {line}"
                for line in training_differences(a.train[epoch], b.train[epoch])
            ]
        return lines


def _stage(epoch: int, staged: bool) -> str:
    return f"stage {epoch}: " if staged else ""


@contextlib.contextmanager
def _quiet():
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def loaded_form(code: str, net: Any, staged: bool) -> Any:
    """The dicts the written config loads as: extern_data and each network (by stage), each dim replaced by what
    RETURNN compares and reads of it: the number of its ``same_as`` base by first occurrence (RETURNN's ``Dim``
    equality compares the bases, so a copy and its base are one dim to it; distinct objects that no equality joins
    stay distinct), and its own kind, size, match_priority, flags and derivation; descriptions left out unless
    auto-generated (cosmetic otherwise: the judge's builds check the axis strings that read them)."""
    from i6_rc_jobs._verify.semantics import load_config

    config = load_config(code)
    nets = (
        {0: config.typed_value("network")}
        if not staged
        else {e: config.typed_value("get_network")(epoch=e) for e in sorted(net)}
    )
    numbers: dict[int, int] = {}

    def dim_form(d: Dim) -> Any:
        if d.is_batch_dim():
            return ("batch",)
        key = id(d.get_same_base())
        if key not in numbers:
            numbers[key] = len(numbers)
        derived = d.derived_from_op
        return (
            "dim",
            numbers[key],
            str(d.kind),
            d.dimension,
            d.match_priority,
            d.description if d.auto_generated else None,
            (d.special, d.undefined, d.capacity),
            None if derived is None else (derived.kind, tuple(dim_form(i) for i in derived.inputs)),
        )

    def form(v: Any) -> Any:
        if isinstance(v, Dim):
            return dim_form(v)
        if type(v) is dict:
            return ("dict", tuple((k, form(v[k])) for k in sorted(v, key=repr)))
        if type(v) in (list, tuple):
            return (type(v).__name__, tuple(form(i) for i in v))
        if type(v) in (set, frozenset):
            return ("set", tuple(sorted((form(i) for i in v), key=repr)))
        if type(v).__module__ == "numpy":  # an array (returnn_common writes constants as numpy arrays), a scalar
            return ("numpy", str(v.dtype), v.shape, v.tobytes())
        return (type(v).__name__, v)

    return form(config.typed_value("extern_data")), {e: form(n) for e, n in nets.items()}


def _first_form_difference(a: Any, b: Any) -> str:
    text_a, text_b = repr(a), repr(b)
    i = next((i for i, (x, y) in enumerate(zip(text_a, text_b)) if x != y), min(len(text_a), len(text_b)))
    return f"...{text_a[max(0, i - 80) : i + 80]}... != ...{text_b[max(0, i - 80) : i + 80]}..."

"""The computation fingerprint of a torch model: what its forward computes in eval and in train mode over the
declared inputs (the graphs of :mod:`.capture`), the values its parameters and buffers start from under a fixed
seed (by name, and which are one tensor), and the torch that computes it (its ops' meaning, its random
generators). Two models with equal fingerprints compute the same from the same start: a refactor keeps the digest,
an edit of what is computed, of a shape or of an initialization moves it."""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from i6_rc_jobs._computation.errors import NotCaptured
from i6_rc_jobs._computation.inputs import Inputs

__all__ = ["ComputationFingerprint", "NotCaptured", "computation_fingerprint"]

#: The modes the forward is captured in.
MODES = ("eval", "train")
#: Where the listings of two graphs that differ are shown from: at most this many lines of their diff.
SHOWN_LINES = 12


@dataclass(frozen=True)
class ComputationFingerprint:
    """``graphs``: each captured graph's digest by where it holds (``"train B>=2"``); ``init``: each parameter's and
    buffer's start (dtype, shape, SHA-256 of its bytes; a tensor shared by several names is listed under the first,
    the others as ``= <first>``); ``listings``: each graph's nodes as text (what :meth:`differences` shows; not
    hashed, the digests stand for them)."""

    torch: str
    inputs: dict[str, Any]
    graphs: dict[str, str]
    init: dict[str, str]
    listings: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)
    #: The lines of the watched files run in construction and in the forward (:class:`.coverage.Lines`; not hashed).
    lines: dict[str, dict[str, list[int]]] = field(default_factory=dict, compare=False, repr=False)
    #: The classes of the model's modules and their bases, as ``module:qualname`` (not hashed: whether their methods
    #: ran decides what of the code counts beside, :mod:`i6_rc_jobs._code_hash.computed`).
    classes: list[str] = field(default_factory=list, compare=False, repr=False)
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        what = {"torch": self.torch, "inputs": self.inputs, "graphs": self.graphs, "init": self.init}
        object.__setattr__(self, "digest", hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest())

    def differences(self, other: ComputationFingerprint) -> list[str]:
        """One line per difference (a graph's with the lines of its listing that differ); [] iff equal."""
        found = []
        if self.torch != other.torch:
            found.append(f"torch {self.torch} -> {other.torch}")
        if self.inputs != other.inputs:
            found.append(f"inputs {self.inputs} -> {other.inputs}")
        for name in sorted(set(self.init) | set(other.init)):
            ours, theirs = self.init.get(name, "missing"), other.init.get(name, "missing")
            if ours != theirs:
                found.append(f"initial value of {name}: {_short(ours)} -> {_short(theirs)}")
        for label in sorted(set(self.graphs) | set(other.graphs)):
            if self.graphs.get(label) == other.graphs.get(label):
                continue
            found.append(
                f"graph {label}: {self.graphs.get(label, 'missing')[:12]} -> {other.graphs.get(label, 'missing')[:12]}"
            )
            diff = difflib.unified_diff(self.listings.get(label, []), other.listings.get(label, []), lineterm="", n=0)
            found += [f"  {line}" for line in list(diff)[2:][:SHOWN_LINES] if not line.startswith("@@")]
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": self.torch,
            "inputs": self.inputs,
            "graphs": self.graphs,
            "init": self.init,
            "listings": self.listings,
            "lines": self.lines,
            "classes": self.classes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ComputationFingerprint:
        return cls(*(data[name] for name in ("torch", "inputs", "graphs", "init", "listings", "lines", "classes")))


def _short(start: str) -> str:
    return start if start.startswith("=") or start == "missing" else start[: start.index(":") + 13]


def computation_fingerprint(
    make: Callable[[], Any], inputs: Inputs, seed: int = 0, watched: frozenset[str] = frozenset()
) -> ComputationFingerprint:
    """The fingerprint of the model ``make()`` constructs (under ``torch.manual_seed(seed)``, on CPU), with the lines
    of the ``watched`` files (real paths) that construction and the forward ran; raises :class:`NotCaptured` with
    the reason where the capture is not proven complete."""
    import torch

    from i6_rc_jobs._computation.capture import capture
    from i6_rc_jobs._computation.coverage import Lines

    lines = Lines(watched)
    torch.manual_seed(seed)
    with lines.phase("construction"):
        model = make()
    if not isinstance(model, torch.nn.Module):
        raise NotCaptured(f"{type(model).__name__} is no torch.nn.Module: there is no forward to capture")
    init = initial_values(model)
    graphs, listings = {}, {}
    for mode in MODES:
        for label, graph in capture(model, inputs, mode, lines).items():
            graphs[label], listings[label] = graph.digest, graph.listing
    classes = sorted({f"{c.__module__}:{c.__qualname__}" for module in model.modules() for c in type(module).__mro__})
    return ComputationFingerprint(
        str(torch.__version__), inputs.describe(), graphs, init, listings, lines.to_json(), classes
    )


def initial_values(model: Any) -> dict[str, str]:
    """Each parameter and buffer by its name in the checkpoint, with its start; a tensor that several names share
    (tied weights) under its first name, the others naming it."""
    from i6_rc_jobs._computation.graph_digest import tensor_digest

    seen: dict[int, str] = {}
    found = {}
    named = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    for name, tensor in named:
        if id(tensor) in seen:
            found[name] = f"= {seen[id(tensor)]}"
        else:
            seen[id(tensor)] = name
            found[name] = tensor_digest(tensor)
    return found

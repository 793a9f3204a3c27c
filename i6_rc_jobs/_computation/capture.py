"""The capture of a model's forward in one mode (eval or train): ``torch.export`` in strict mode (TorchDynamo reads
the Python code: a graph break, data-dependent Python control flow or a side effect outside the graph fails the
export) with each named dim dynamic over its declared range, and the graph's assertions on sizes evaluated over the
whole range. Where the only failing size of a dim is 1 (torch's traces assume a dynamic size is not 1, e.g. for a
reshape), the graph holds for 2 and more, and the size 1 is captured as a graph of its own. The exported graph must
then compute what the model computes, checked at two other shapes. Anything else refuses the capture:
:class:`NotCaptured` with the reason, in one line."""

from __future__ import annotations

import contextlib
import copy
import warnings
from typing import Any, Iterator

from i6_rc_jobs._computation import asserts
from i6_rc_jobs._computation.graph_digest import GraphDigest, size_symbols
from i6_rc_jobs._computation.coverage import Lines
from i6_rc_jobs._computation.errors import NotCaptured
from i6_rc_jobs._computation.inputs import Inputs

#: How close the exported graph's outputs must come to the model's (float32, the same ops in the same order).
TOLERANCE = 1e-5
#: What TorchDynamo warns of when the traced code changes Python state (a module attribute, a global list), which no
#: graph holds.
SIDE_EFFECTS = "side effects happened"
#: The prefix of the model's parameters in the module its forward is exported as.
WRAPPED = "model."
#: The seed of the example tensors, and of the random draws of the train-mode check.
SEED = 1234


def _max_pool1d(
    input: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """``max_pool1d`` as ATen computes it with indices (``max_pool2d`` over an axis of size 1): the same values,
    and torch's export keeps the time dim dynamic through it, while through ``max_pool1d`` it fixes the size."""
    import torch

    def pair(value: Any) -> tuple[int, int]:
        return (1, value[0] if isinstance(value, (tuple, list)) else value)

    functional = torch.nn.functional
    step = kernel_size if stride is None or stride == [] else stride
    args = (input.unsqueeze(-2), pair(kernel_size), pair(step), (0, pair(padding)[1]), pair(dilation))
    if return_indices:  # (a flat index over a height of 1 is the index along the width)
        values, indices = functional.max_pool2d_with_indices(*args, ceil_mode=ceil_mode, return_indices=True)
        return values.squeeze(-2), indices.squeeze(-2)
    return functional.max_pool2d(*args, ceil_mode=ceil_mode).squeeze(-2)


#: Functions that torch's export cannot keep sizes dynamic through, replaced while it traces by what ATen computes
#: them as (the check against the model proves the values alike).
EQUIVALENTS = (("torch.nn.functional", "max_pool1d", _max_pool1d),)


@contextlib.contextmanager
def _equivalents() -> Iterator[None]:
    import importlib

    saved = []
    try:
        for module_name, name, replacement in EQUIVALENTS:
            module = importlib.import_module(module_name)
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, replacement)
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def capture(model: Any, inputs: Inputs, mode: str, lines: Lines) -> dict[str, GraphDigest]:
    """The graphs of ``model``'s forward in ``mode`` that together cover the ranges, by a label that says where
    each holds (``"eval"``, or ``"eval B>=2"`` and ``"eval B=1"``); the lines of watched files that the model's
    forward runs are recorded in ``lines`` (phase ``"forward"``)."""
    graphs: dict[str, GraphDigest] = {}
    pending: list[dict[str, int]] = [{}]
    while pending:
        fixed = pending.pop(0)
        program, axes = _export(model, inputs, mode, fixed)
        ranges = {name: (low, high) for name, low, high in inputs.ranges if name not in fixed}
        try:
            found = asserts.failing(program, axes, ranges)
        except asserts.NotEvaluable as e:
            raise NotCaptured(f"{_where(mode, fixed)}: where the graph holds is unknown: {e}") from None
        restricted = {}
        if found is not None:
            ones = [d for d in sorted(ranges) if found["points"][d] == [1] and ranges[d][1] > 1]
            if not ones:
                at = ", ".join(f"{d}={size}" for d, size in found["at"].items())
                raise NotCaptured(f"{_where(mode, fixed)}: the graph does not hold at {at}: {found['assertion']}")
            restricted = {ones[0]: (2, ranges[ones[0]][1])}
            pending.append({**fixed, ones[0]: 1})
        _check(model, program, inputs, mode, fixed, {**ranges, **restricted}, lines)
        label = _where(mode, fixed) + "".join(f" {d}>=2" for d in restricted)
        graphs[label] = GraphDigest(program, size_symbols(program, axes), prefix=WRAPPED)
    return graphs


def _forward(model: Any) -> Any:
    """The model's forward as a module that passes its arguments on as given (torch's strict export refuses a
    forward with positional-only parameters, as i6_models' blocks have); the model's parameters are its own under
    :data:`WRAPPED`."""
    import torch

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> Any:
            return self.model(*args)

    return Forward()


def _where(mode: str, fixed: dict[str, int]) -> str:
    return mode + "".join(f" {d}={size}" for d, size in sorted(fixed.items()))


def _export(model: Any, inputs: Inputs, mode: str, fixed: dict[str, int]) -> tuple[Any, dict[tuple[int, int], str]]:
    """The exported program, and which (input, axis) is which named dim."""
    import torch
    from torch.export import Dim

    static = {**{name: low for name, low, high in inputs.ranges if low == high}, **fixed}
    dims = {name: Dim(name, min=low, max=high) for name, low, high in inputs.ranges if name not in static}
    example = inputs.tensors_for(inputs.example_sizes(static), SEED)
    dynamic = tuple(
        {axis: dims[size] for axis, size in enumerate(spec.shape) if isinstance(size, str) and size in dims} or None
        for spec in inputs.tensors
    )
    axes = {
        (index, axis): size
        for index, spec in enumerate(inputs.tensors)
        for axis, size in enumerate(spec.shape)
        if isinstance(size, str) and size in dims
    }
    wrapped = _forward(model).train(mode == "train")
    try:
        with _equivalents(), warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            program = torch.export.export(
                wrapped,
                example,
                dynamic_shapes=(dynamic,),
                strict=True,
                prefer_deferred_runtime_asserts_over_guards=True,
            )
    except Exception as e:  # noqa: BLE001 - every failure of the export refuses the capture, with its reason
        raise NotCaptured(f"{_where(mode, fixed)}: torch.export fails: {type(e).__name__}: {_first_line(e)}") from None
    side_effects = [str(w.message) for w in warned if SIDE_EFFECTS in str(w.message)]
    if side_effects:
        raise NotCaptured(f"{_where(mode, fixed)}: the forward has effects outside the graph: {side_effects[0]}")
    return program, axes


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines[:2])[:400] if lines else "(no message)"


def _check(
    model: Any, program: Any, inputs: Inputs, mode: str, fixed: dict[str, int], ranges: dict, lines: Lines
) -> None:
    """The exported graph computes what the model computes, at the smallest sizes where it holds and at sizes
    above the example's (the same random draws in train mode); both on copies, so that a train step's buffer
    updates (batch norm's statistics) leave the model as it was."""
    import torch

    examples = inputs.example_sizes(fixed)
    for sizes in (
        {**{d: low for d, (low, _) in ranges.items()}, **fixed},
        {**{d: min(high, examples[d] + 5) for d, (_, high) in ranges.items()}, **fixed},
    ):
        args = inputs.tensors_for(sizes, SEED + 1)
        ours, theirs = copy.deepcopy(model).train(mode == "train"), copy.deepcopy(program.module())
        with torch.no_grad():
            torch.manual_seed(SEED)
            with lines.phase("forward"):
                expected = ours(*args)
            torch.manual_seed(SEED)
            got = theirs(*args)
        difference = _difference(expected, got)
        if difference is not None:
            at = ", ".join(f"{d}={size}" for d, size in sorted(sizes.items()))
            raise NotCaptured(
                f"{_where(mode, fixed)}: the graph computes otherwise than the model at {at}: {difference}"
            )


def _difference(expected: Any, got: Any) -> Any:
    """None if the outputs are alike, else what differs."""
    import torch

    flat_expected, spec_expected = torch.utils._pytree.tree_flatten(expected)
    flat_got, spec_got = torch.utils._pytree.tree_flatten(got)
    if spec_expected != spec_got:
        return f"outputs of another structure ({spec_got} != {spec_expected})"
    for index, (a, b) in enumerate(zip(flat_expected, flat_got)):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return f"output {index}: a tensor and a {type(b).__name__}"
        if not isinstance(a, torch.Tensor):
            if a != b:
                return f"output {index}: {b!r} != {a!r}"
        elif a.shape != b.shape or a.dtype != b.dtype:
            return f"output {index}: {list(b.shape)} {b.dtype} != {list(a.shape)} {a.dtype}"
        elif not torch.allclose(a.float(), b.float(), rtol=TOLERANCE, atol=TOLERANCE, equal_nan=True):
            return f"output {index} differs by up to {float((a.float() - b.float()).abs().max()):.3g}"
    return None

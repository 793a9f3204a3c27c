"""Where a captured graph holds. ``torch.export`` keeps the conditions on sizes that its trace assumed as assertions in
the graph (``_assert_scalar``: a reshape that took ``B*(T//4) != B``); this module evaluates each of them at every
point of the declared ranges at once (numpy over the grid of sizes), so that the capture is known to hold at every
shape training may feed, or the shapes where it does not are named."""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Optional

import numpy

#: At most this many points (combinations of sizes) are evaluated; wider ranges are refused, not sampled.
MAX_POINTS = 1 << 22

#: The operations on sizes that assertions are built of, as numpy computes them elementwise.
_OPS: dict[str, Callable[..., Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "neg": operator.neg,
    "pow": operator.pow,
    "truediv": operator.truediv,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "and_": numpy.logical_and,
    "or_": numpy.logical_or,
    "torch.sym_not": numpy.logical_not,
    "torch.sym_max": numpy.maximum,
    "torch.sym_min": numpy.minimum,
    "torch.sym_sum": lambda values: sum(values),
}
_DIVIDING = {"floordiv": operator.floordiv, "mod": operator.mod}


class NotEvaluable(Exception):
    """An assertion uses an operation this module does not evaluate: where the graph holds is unknown."""


def failing(program: Any, axes: dict[tuple[int, int], str], ranges: dict[str, tuple[int, int]]) -> Optional[dict]:
    """Where an assertion of ``program`` fails in the ranges: ``at``, the first such point (dim name -> size);
    ``assertion``, the message of one that fails there; ``points``, for each dim the sizes at which any fails. None
    if all hold everywhere. ``axes`` maps (user input, axis) to the dim name its size is. A size divided by zero
    counts as failing (the graph's sizes are undefined there)."""
    from i6_rc_jobs._computation.graph_digest import op_name, size_symbols

    symbols = size_symbols(program, axes)
    dims = sorted(ranges)
    count = math.prod(high - low + 1 for low, high in ranges.values())
    if count > MAX_POINTS:
        raise NotEvaluable(f"the ranges hold {count} combinations of sizes, more than {MAX_POINTS} to check")
    axes_values = [numpy.arange(ranges[d][0], ranges[d][1] + 1) for d in dims]
    grid = dict(zip(dims, numpy.meshgrid(*axes_values, indexing="ij")))
    shape = next(iter(grid.values())).shape if grid else ()
    values: dict[Any, Any] = {}
    bad = numpy.zeros(shape, dtype=bool)
    message = None
    for node in program.graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        name = op_name(node.target)
        if name == "aten.sym_size.int":
            size = node.args[0].meta["val"].shape[node.args[1]]
            values[node] = _size(size, symbols, grid)
        elif name == "aten._assert_scalar.default":
            fails = numpy.broadcast_to(~numpy.asarray(_arg(values, node.args[0], name), dtype=bool), shape)
            if message is None and fails.any():
                message = node.args[1]
            bad |= fails
        elif _sizes_only(node.args, values):
            args = [_raw(values, a) for a in node.args]
            short = name.removeprefix("operator.")
            unknown = [a for a in args if isinstance(a, _Unknown)]
            if unknown:
                values[node] = unknown[0]
            elif short in _DIVIDING:
                denominator = numpy.asarray(args[1])
                bad |= numpy.broadcast_to(denominator == 0, shape)
                args[1] = numpy.where(denominator == 0, 1, denominator)
                values[node] = _DIVIDING[short](*args)
            elif short in _OPS:
                values[node] = _OPS[short](*args)
            else:
                values[node] = _Unknown(name)
    if not bad.any():
        return None
    point = tuple(int(i[0]) for i in numpy.nonzero(bad))
    return {
        "at": {dim: int(grid[dim][point]) for dim in dims},
        "assertion": message or "a size is divided by zero",
        "points": {dim: sorted({int(v) for v in grid[dim][bad]}) for dim in dims},
    }


class _Unknown:
    """A size computed by an operation this module does not evaluate: an assertion that reads it is refused."""

    def __init__(self, op: str):
        self.op = op


def _size(size: Any, symbols: dict[str, str], grid: dict[str, Any]) -> Any:
    if isinstance(size, int):
        return size
    expr = str(size.node.expr)
    if expr not in symbols:
        return _Unknown(f"the size {expr}")
    return grid[symbols[expr]]


def _sizes_only(args: Any, values: dict[Any, Any]) -> bool:
    """Whether the arguments are sizes (computed from sizes) and constants only."""
    import torch.fx

    return all(
        (
            a in values
            if isinstance(a, torch.fx.Node)
            else _sizes_only(a, values) if isinstance(a, list) else isinstance(a, (int, bool))
        )
        for a in args
    )


def _raw(values: dict[Any, Any], arg: Any) -> Any:
    """An argument's value; a list holding an unknown size is unknown."""
    import torch.fx

    if isinstance(arg, torch.fx.Node):
        return values[arg]
    if isinstance(arg, list):
        inner = [_raw(values, a) for a in arg]
        return next((a for a in inner if isinstance(a, _Unknown)), inner)
    return arg


def _arg(values: dict[Any, Any], arg: Any, user: str) -> Any:
    import torch.fx

    if isinstance(arg, torch.fx.Node):
        value = values.get(arg)
        if value is None:
            raise NotEvaluable(f"{user} reads {arg.op} {arg.target}, which is no size")
        if isinstance(value, _Unknown):
            raise NotEvaluable(f"an assertion of the capture computes with {value.op}")
        return value
    if isinstance(arg, list):
        return [_arg(values, a, user) for a in arg]
    return arg

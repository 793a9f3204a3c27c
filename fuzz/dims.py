"""The dims every generated net is made of: one pool per process (the written configs get fresh dims when RETURNN
loads them), the prolog that defines them in a reproducer, and net dicts written as Python over these names."""

from __future__ import annotations

import types
from typing import Any

from i6_core.returnn.config import CodeWrapper

from returnn.tensor import Dim, batch_dim

# Dims: one pool for every net of a process (the written configs get fresh dims when RETURNN loads them).
TIME = Dim(None, name="time", kind=Dim.Types.Spatial)


IN = Dim(5, name="in", kind=Dim.Types.Feature)


CLASSES = Dim(3, name="classes", kind=Dim.Types.Feature)


FEATURES = {n: Dim(n, name=f"f{n}", kind=Dim.Types.Feature) for n in (2, 4, 6, 7, 8, 9)}


TWINS = {n: Dim(n, name=f"g{n}", kind=Dim.Types.Feature) for n in (4, 7)}  # same size and kind as f4, f7: other dims


RENAMED = {n: Dim(n, name=f"renamed{n}", kind=Dim.Types.Feature) for n in (4, 7)}  # only the description differs


WINDOW = Dim(3, name="window", kind=Dim.Types.Spatial)


SPATIAL = [Dim(None, name=f"s{i}", kind=Dim.Types.Spatial) for i in range(6)]  # out dims of dim-creating layers


COPIES = {n: FEATURES[n].copy(description=f"f{n} copy") for n in (4, 7)}  # same_as copies: RETURNN finds them equal


HALF = TIME.ceildiv_right(2)  # a derived dim: what pooling by 2 with padding "same" makes of the time


DIM_NAMES: dict[int, str] = {id(batch_dim): "batch_dim"}


for _name, _dim in [
    ("TIME", TIME),
    ("IN", IN),
    ("CLASSES", CLASSES),
    ("WINDOW", WINDOW),
    *((f"F{n}", d) for n, d in FEATURES.items()),
    *((f"G{n}", d) for n, d in TWINS.items()),
    *((f"R{n}", d) for n, d in RENAMED.items()),
    *((f"S{i}", d) for i, d in enumerate(SPATIAL)),
    *((f"C{n}", d) for n, d in COPIES.items()),
    ("HALF", HALF),
]:
    DIM_NAMES[id(_dim)] = _name


EXTERN_DATA = {
    "data": {"dim_tags": [batch_dim, TIME, IN]},
    "classes": {"dim_tags": [batch_dim, TIME], "sparse_dim": CLASSES, "dtype": "int32"},
}


DIM_PROLOG = "\n".join(
    [
        "from returnn.tensor import Dim, batch_dim",
        "from i6_core.returnn.config import CodeWrapper",
        "import fuzz.code_options",
        'TIME = Dim(None, name="time", kind=Dim.Types.Spatial)',
        'IN = Dim(5, name="in", kind=Dim.Types.Feature)',
        'CLASSES = Dim(3, name="classes", kind=Dim.Types.Feature)',
        'WINDOW = Dim(3, name="window", kind=Dim.Types.Spatial)',
        *(f'F{n} = Dim({n}, name="f{n}", kind=Dim.Types.Feature)' for n in FEATURES),
        *(f'G{n} = Dim({n}, name="g{n}", kind=Dim.Types.Feature)' for n in TWINS),
        *(f'R{n} = Dim({n}, name="renamed{n}", kind=Dim.Types.Feature)' for n in RENAMED),
        *(f'S{i} = Dim(None, name="s{i}", kind=Dim.Types.Spatial)' for i in range(len(SPATIAL))),
        *(f'C{n} = F{n}.copy(description="f{n} copy")' for n in COPIES),
        "HALF = TIME.ceildiv_right(2)",
        "EXTERN_DATA = {",
        '    "data": {"dim_tags": [batch_dim, TIME, IN]},',
        '    "classes": {"dim_tags": [batch_dim, TIME], "sparse_dim": CLASSES, "dtype": "int32"},',
        "}",
    ]
)


def _all_dims() -> list[Dim]:
    return [
        batch_dim,
        TIME,
        IN,
        CLASSES,
        WINDOW,
        HALF,
        *FEATURES.values(),
        *TWINS.values(),
        *RENAMED.values(),
        *SPATIAL,
        *COPIES.values(),
    ]


def py(value: Any, indent: int = 0) -> str:
    """Python code for a net dict of this module's dims (by their names in :data:`DIM_PROLOG`)."""
    pad = "    " * (indent + 1)
    if isinstance(value, Dim):
        return DIM_NAMES.get(id(value), repr(value))
    if type(value) is dict:
        if not value:
            return "{}"
        items = [f"{pad}{py(k)}: {py(v, indent + 1)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + "    " * indent + "}"
    if type(value) is list:
        return "[" + ", ".join(py(v, indent) for v in value) + "]"
    if type(value) is tuple:
        return "(" + ", ".join(py(v, indent) for v in value) + ("," if len(value) == 1 else "") + ")"
    if type(value) is set:
        return "{" + ", ".join(sorted(py(v, indent) for v in value)) + "}"
    if type(value) is CodeWrapper:
        return f"CodeWrapper({value.code!r})"
    if isinstance(value, types.FunctionType):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)

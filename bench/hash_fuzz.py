"""A differential fuzzer of both hash schemes against RETURNN: random valid net dicts, pairs of them that differ by a
rewrite a graph rule claims inert or by a small edit, each pair built with RETURNN and judged; every pair whose hashes
are equal while RETURNN finds a difference is a counterexample. Run from the repository root:

    .venv/bin/python -m bench.hash_fuzz [--seed 1] [--pairs 200] [--processes 2] [--findings DIR] [--build-moved]

Properties: for ``hash_scheme="graph"``, equal graph hashes => RETURNN finds the two nets the same; for the dict scheme,
equal hashes => the written configs load as the same dicts and dims, and RETURNN finds them the same. "The same" is
``i6_rc_jobs.semantics`` (TF variables and shapes, initializers, output and output dims on a fixed input, losses, with
``train_flag=False``) plus what that judge cannot see for training (:func:`fingerprints`): which variables are
trainable, the train-mode output and losses (dropout and other random ops with fixed seeds), the objective (loss
scales and options, L2) and its gradient with respect to every trainable variable.

A base net is valid if RETURNN constructs it (others are discarded and counted); a variant RETURNN rejects is
discarded and counted too. Variants whose both hashes moved are not built unless ``--build-moved`` (the property
holds for them whatever RETURNN does). Each counterexample is shrunk (layers and options dropped while it persists)
and printed as a reproducer; with ``--findings DIR`` each new kind is also written to ``DIR/<scheme>-<name>.md`` as
soon as it is found. Prints per rule and per edit kind how many pairs kept each hash and how many moved it, and each
rule's coverage (pairs where the dict hash moved while the graph hash stayed: the rule did the work)."""

from __future__ import annotations

import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse  # noqa: E402
import bisect  # noqa: E402
import contextlib  # noqa: E402
import copy  # noqa: E402
import functools  # noqa: E402
import io  # noqa: E402
import multiprocessing  # noqa: E402
import pathlib  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any, Callable, Iterator, Optional  # noqa: E402

from returnn.tensor import Dim, batch_dim  # noqa: E402

Net = dict[str, Any]
Generator = Callable[["NetGen"], Optional[str]]

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

ACTIVATIONS = ("relu", "tanh", "sigmoid", "abs", "exp")
COMBINE_KINDS = ("add", "mul", "sub", "maximum", "minimum")


# ---------------------------------------------------------------------------------------------------------------------
# The generator


@dataclass(frozen=True)
class Info:
    """What a layer outputs: its dims without the batch, whether it has the batch, its dtype."""

    dims: tuple
    batch: bool = True
    dtype: str = "float32"

    @property
    def feature(self) -> Optional[Dim]:
        return self.dims[-1] if self.dims and self.dims[-1].dimension is not None else None


class NetGen:
    """Builds one random net dict layer by layer, knowing each layer's output (:class:`Info`); names are unique in
    the whole net (so a rename can replace a name wherever it occurs)."""

    def __init__(self, rng: random.Random, counter: list[int], spatial: list[Dim], depth: int = 0):
        self.rng, self.counter, self.spatial, self.depth = rng, counter, spatial, depth
        self.net: Net = {}
        self.infos: dict[str, Info] = {}

    def name(self, stem: str) -> str:
        self.counter[0] += 1
        return f"{stem}{self.counter[0]}"

    def add(self, stem: str, desc: dict, info: Info) -> str:
        name = self.name(stem)
        self.net[name] = desc
        self.infos[name] = info
        return name

    def pick(self, pred: Callable[[Info], bool], recent: bool = True) -> Optional[str]:
        names = [n for n, i in self.infos.items() if pred(i)]
        if not names:
            return None
        if recent and self.rng.random() < 0.6:
            return names[-1]
        return self.rng.choice(names)

    def feature(self) -> Dim:
        return self.rng.choice(list(FEATURES.values()))

    def fresh_spatial(self) -> Optional[Dim]:
        return self.spatial.pop() if self.spatial else None


def frames(info: Info) -> bool:
    """[B, T, F] float: what most layers take."""
    return info.batch and info.dtype == "float32" and len(info.dims) == 2 and info.dims[0] is TIME and info.feature


def seq_float(info: Info) -> bool:
    """[B, <spatial>, F] float, any spatial dim."""
    return info.batch and info.dtype == "float32" and len(info.dims) == 2 and info.feature is not None


def picks(pred: Callable[[Info], bool]) -> Callable[[Callable[[NetGen, str], Optional[str]]], Generator]:
    """A generator of a layer that reads one earlier layer whose output fits ``pred`` (picked as :meth:`NetGen.pick`
    does): it is called with that layer's name, and adds nothing (None) if no layer fits."""

    def decorate(fn: Callable[[NetGen, str], Optional[str]]) -> Generator:
        @functools.wraps(fn)
        def generate(g: NetGen) -> Optional[str]:
            src = g.pick(pred)
            return None if src is None else fn(g, src)

        return generate

    return decorate


@picks(seq_float)
def g_linear(g: NetGen, src: str) -> Optional[str]:
    out = g.feature()
    desc: dict[str, Any] = {"class": "linear", "from": src, "out_dim": out}
    r = g.rng
    if r.random() < 0.5:
        desc["activation"] = r.choice(ACTIVATIONS[:3])
    if r.random() < 0.2:
        desc["with_bias"] = False
    if r.random() < 0.15:
        desc["L2"] = r.choice((0.01, 0.1))
    if r.random() < 0.15:
        desc["dropout"] = r.choice((0.1, 0.3))
    if r.random() < 0.1:
        desc["trainable"] = False
    if r.random() < 0.1:
        desc["param_variational_noise"] = 0.1
    if r.random() < 0.15:
        desc["forward_weights_init"] = r.choice(("glorot_uniform", "random_normal_initializer(stddev=0.1)", 0.5))
    if r.random() < 0.2:
        desc["name_scope"] = r.choice(("", "/abs_scope", "rel/scope"))
    in_dim = g.infos[src].feature
    others = [
        n
        for n, d in g.net.items()
        if d.get("class") == "linear"
        and d["out_dim"] is out
        and "reuse_params" not in d
        and d.get("with_bias", True) == desc.get("with_bias", True)
        and g.infos.get(_first(d["from"])) is not None
        and g.infos[_first(d["from"])].feature is in_dim
    ]
    if others and r.random() < 0.4:
        shared = r.choice(others)
        if r.random() < 0.3:
            desc["reuse_params"] = {"map": {"W": {"reuse_layer": shared}, "b": {"reuse_layer": shared}}}
        else:
            desc["reuse_params"] = shared
    return g.add("lin", desc, Info((g.infos[src].dims[0], out)))


def _first(sources: Any) -> Any:
    return sources if type(sources) is str else sources[0]


@picks(lambda i: i.dtype == "float32")
def g_activation(g: NetGen, src: str) -> Optional[str]:
    return g.add("act", {"class": "activation", "from": src, "activation": g.rng.choice(ACTIVATIONS)}, g.infos[src])


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_combine(g: NetGen, a: str) -> Optional[str]:
    info = g.infos[a]
    b = g.pick(lambda i: i.dtype == "float32" and (i == info or (not i.batch and set(i.dims) <= set(info.dims))), False)
    kind = g.rng.choice(COMBINE_KINDS)
    return g.add("comb", {"class": "combine", "kind": kind, "from": [a, b]}, info)


EVAL_CODES = (
    "source(0) * 0.5",
    "source(0) + 0.25",
    "0.5 - source(0)",
    "tf.maximum(source(0), 0.0)",
    "source(0) ** 2.0",
    "tf.tanh(source(0)) * 2.0",
    "source(0) * 0.5 + source(0)",
)


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_eval(g: NetGen, a: str) -> Optional[str]:
    r = g.rng
    if r.random() < 0.3:
        b = g.pick(lambda i: i == g.infos[a], False)
        code = r.choice(("source(0) + source(1)", "source(0) * source(1)", "tf.maximum(source(0), source(1))"))
        return g.add("ev", {"class": "eval", "from": [a, b], "eval": code}, g.infos[a])
    return g.add("ev", {"class": "eval", "from": a, "eval": r.choice(EVAL_CODES)}, g.infos[a])


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_eval_named(g: NetGen, a: str) -> Optional[str]:
    """Eval code that names a layer (RETURNN reads the name; the layer is built first, as a source)."""
    other = g.pick(lambda i: i == g.infos[a], False)
    # RETURNN wants every source used, and the named layer built before: it is the second source
    code = f"source(0) + source(1) * self.network.get_layer({other!r}).output.placeholder"
    return g.add("ev", {"class": "eval", "from": [a, other], "eval": code}, g.infos[a])


@picks(lambda i: True)
def g_copy(g: NetGen, src: str) -> Optional[str]:
    return g.add("cp", {"class": "copy", "from": src}, g.infos[src])


@picks(frames)
def g_dropout(g: NetGen, src: str) -> Optional[str]:
    desc = {"class": "dropout", "from": src, "dropout": g.rng.choice((0.1, 0.2, 0.5))}
    if g.rng.random() < 0.3:
        desc["dropout_noise_shape"] = {"*": None, "T": 1}
    return g.add("drop", desc, g.infos[src])


def g_constant(g: NetGen) -> Optional[str]:
    r = g.rng
    value = r.choice((0.5, 1.0, 2.0, 0.0, 3))
    desc: dict[str, Any] = {"class": "constant", "value": value}
    if type(value) is int or r.random() < 0.2:
        desc["dtype"] = "float32"
    name = g.add("const", desc, Info((), batch=False))
    user = g.pick(lambda i: i.batch and i.dtype == "float32" and i.dims)
    if user is None:
        return name
    kind = r.choice(COMBINE_KINDS)
    return g.add(
        "comb", {"class": "combine", "kind": kind, "from": r.choice(([user, name], [name, user]))}, g.infos[user]
    )


@picks(frames)
def g_random(g: NetGen, user: str) -> Optional[str]:
    r = g.rng
    feat = g.infos[user].feature
    # An explicit seed: without one, RETURNN draws it in the order it constructs layers, which no hash models.
    desc: dict[str, Any] = {"class": "random", "distribution": r.choice(("uniform", "normal")), "seed": r.randrange(99)}
    if desc["distribution"] == "uniform":
        desc.update(minval=0.0, maxval=r.choice((0.5, 1.0)))
    else:
        desc.update(mean=0.0, stddev=r.choice((0.5, 1.0)))
    if r.random() < 0.5:
        desc.update(shape=[feat], static=True)
        info = Info((feat,), batch=False)
    else:
        desc.update(shape=[batch_dim, TIME, feat], static=r.choice((True, False)), shape_deps=[user])
        info = g.infos[user]
    noise = g.add("rnd", desc, info)
    return g.add("comb", {"class": "combine", "kind": "add", "from": [user, noise]}, g.infos[user])


@picks(frames)
def g_variable(g: NetGen, user: str) -> Optional[str]:
    r = g.rng
    feat = g.infos[user].feature
    desc: dict[str, Any] = {"class": "variable", "shape": [feat], "init": r.choice((0.0, 1.0, "glorot_uniform"))}
    if r.random() < 0.5:
        desc["param_name"] = "param"
    if r.random() < 0.2:
        desc["trainable"] = False
    var = g.add("var", desc, Info((feat,), batch=False))
    return g.add("comb", {"class": "combine", "kind": r.choice(("add", "mul")), "from": [user, var]}, g.infos[user])


@picks(frames)
def g_reduce(g: NetGen, src: str) -> Optional[str]:
    info = g.infos[src]
    axis = g.rng.choice(info.dims)
    dims = tuple(d for d in info.dims if d is not axis)
    spelled = g.rng.choice((axis, axis, {TIME: "T", info.feature: "F"}[axis], f"stag:{axis.description}"))
    desc = {"class": "reduce", "mode": g.rng.choice(("mean", "sum", "max")), "axis": spelled, "from": src}
    return g.add("red", desc, Info(dims))


@picks(frames)
def g_softmax(g: NetGen, src: str) -> Optional[str]:
    r = g.rng
    out = CLASSES if r.random() < 0.6 else g.feature()
    desc: dict[str, Any] = {"class": "softmax", "from": src, "out_dim": out}
    if out is CLASSES and r.random() < 0.7:
        desc.update(loss="ce", target="classes")
        if r.random() < 0.3:
            desc["loss_scale"] = r.choice((0.5, 2.0))
        if r.random() < 0.3:
            desc["loss_opts"] = r.choice(({"label_smoothing": 0.1}, {"focal_loss_factor": 1.0}))
    return g.add("sm", desc, Info((TIME, out)))


@picks(seq_float)
def g_layer_norm(g: NetGen, src: str) -> Optional[str]:
    return g.add("ln", {"class": "layer_norm", "from": src}, g.infos[src])


@picks(frames)
def g_batch_norm(g: NetGen, src: str) -> Optional[str]:
    desc = {
        "class": "batch_norm",
        "from": src,
        "momentum": g.rng.choice((0.1, 0.01)),
        "epsilon": 1e-3,
        "use_shift": True,
        "use_std": True,
        "update_sample_only_in_training": True,
        "delay_sample_update": True,
        "param_version": 2,
        "masked_time": True,
    }
    return g.add("bn", desc, g.infos[src])


@picks(frames)
def g_loop(g: NetGen, src: str) -> Optional[str]:
    """A rec layer with a dict unit over time, with prev: references."""
    r = g.rng
    feat = g.infos[src].feature
    template = r.randrange(7)
    acc, lin = g.name("acc"), g.name("lin")
    if template == 0:
        unit = {
            acc: {"class": "combine", "kind": "add", "from": ["data:source", f"prev:{acc}"]},
            "output": {"class": "activation", "activation": "tanh", "from": acc},
        }
        out = feat
    elif template == 1:
        out = g.feature()
        unit = {
            lin: {"class": "linear", "from": ["data:source", "prev:output"], "out_dim": out, "activation": "tanh"},
            "output": {"class": "copy", "from": lin},
        }
    elif template == 2:
        out = feat
        unit = {
            acc: {"class": "eval", "from": ["data:source", f"prev:{acc}"], "eval": "source(0) + 0.5 * source(1)"},
            "output": {"class": "combine", "kind": "add", "from": [acc, f"prev:{acc}"]},
        }
        if r.random() < 0.5:
            unit[acc]["initial_output"] = r.choice((0.0, 1.0, "zeros"))
    elif template == 4:  # prev: of a copy, which has its own initial output
        out = feat
        alias = g.name("alias")
        unit = {
            acc: {"class": "combine", "kind": "add", "from": ["data:source", f"prev:{alias}"], "initial_output": 1.0},
            alias: {"class": "copy", "from": acc},
            "output": {"class": "combine", "kind": "add", "from": [f"prev:{acc}", f"prev:{alias}"]},
        }
    elif template == 5:  # a subnetwork in the body reading the previous frame
        out = feat
        sub = g.name("sub")
        unit = {
            acc: {"class": "combine", "kind": "add", "from": ["data:source", f"prev:{sub}"]},
            sub: {
                "class": "subnetwork",
                "from": f"prev:{acc}",
                "subnetwork": {"output": {"class": "eval", "from": "data", "eval": "source(0) * 0.5"}},
            },
            "output": {"class": "copy", "from": acc},
        }
    elif template == 6:  # a cell with its state, one frame at a time
        out = g.feature()
        unit = {  # the cell makes its own feature dim (of n_out): a linear maps it to one of the pool
            lin: {"class": "rnn_cell", "unit": "standardlstm", "from": "data:source", "n_out": r.choice((4, 6))},
            "output": {"class": "linear", "from": lin, "out_dim": out},
        }
        if r.random() < 0.6:
            unit[lin]["initial_state"] = r.choice((0, 0.0, "zeros", 1, "ones", "var"))
    else:
        out = feat
        var = g.add("var", {"class": "variable", "shape": [feat], "init": 0.5}, Info((feat,), batch=False))
        unit = {
            acc: {"class": "combine", "kind": "mul", "from": [f"prev:{acc}", f"base:{var}"]},
            "sum": {"class": "combine", "kind": "add", "from": [acc, "data:source"]},
            "output": {"class": "copy", "from": "sum"},
        }
        unit[acc]["initial_output"] = 1.0
        unit["sum"] = unit.pop("sum")
    desc: dict[str, Any] = {"class": "rec", "from": src, "axis": TIME, "unit": unit}
    if r.random() < 0.2:
        desc["name_scope"] = r.choice(("", "loop_scope"))
    loop = g.add("loop", desc, Info((TIME, out)))
    if template in (0, 2) and r.random() < 0.4:  # a layer inside read from outside: stacked over the loop
        return g.add("cp", {"class": "copy", "from": f"{loop}/{acc}"}, Info((TIME, feat)))
    return loop


@picks(frames)
def g_rnn(g: NetGen, src: str) -> Optional[str]:
    """A rec layer with a string unit."""
    r = g.rng
    out = g.feature()
    desc: dict[str, Any] = {"class": "rec", "unit": r.choice(("standardlstm", "gru")), "from": src, "out_dim": out}
    if r.random() < 0.3:
        desc["name_scope"] = r.choice(("", "rnn_scope"))
    if desc["unit"] == "standardlstm" and r.random() < 0.3:
        desc["initial_state"] = r.choice((0, 0.0, "zeros", 1.0, "ones", "var"))
    return g.add("rnn", desc, Info((TIME, out)))


@picks(frames)
def g_subnetwork(g: NetGen, src: str) -> Optional[str]:
    if g.depth >= 2:
        return None
    r = g.rng
    sub = NetGen(r, g.counter, g.spatial, g.depth + 1)
    sub.infos["data"] = g.infos[src]
    for _ in range(r.randint(1, 3)):
        r.choice((g_linear, g_activation, g_eval, g_combine, g_copy, g_layer_norm, g_variable))(sub)
    last = next(n for n in reversed(list(sub.infos)) if sub.infos[n] == sub.infos[list(sub.infos)[-1]])
    sub.net["output"] = {"class": "copy", "from": last}
    desc: dict[str, Any] = {"class": "subnetwork", "from": src, "subnetwork": sub.net}
    choice = r.random()
    if choice < 0.2:
        desc["concat_sources"] = r.choice((True, False))
        if desc["concat_sources"] is False:
            _replace_strings(sub.net, lambda s: f"data:{src}" if s == "data" else s)
    elif choice < 0.35:
        desc["name_scope"] = ""
    elif choice < 0.45:
        desc["dropout"] = 0.1
    return g.add("sub", desc, sub.infos[last])


@picks(frames)
def g_conv(g: NetGen, src: str) -> Optional[str]:
    r = g.rng
    out = g.feature()
    spatial = g.infos[src].dims[0]
    desc: dict[str, Any] = {
        "class": "conv",
        "from": src,
        "filter_size": (r.choice((1, 3)),),
        "in_spatial_dims": [spatial],
        "out_dim": out,
        "padding": "same",
    }
    new = g.fresh_spatial() if r.random() < 0.5 else None
    if new is not None:
        desc.update(padding="valid", out_spatial_dims=[new], filter_size=(2,))
        spatial = new
    else:
        desc["out_spatial_dims"] = [spatial]
    return g.add("conv", desc, Info((spatial, out)))


@picks(frames)
def g_pool(g: NetGen, src: str) -> Optional[str]:
    new = HALF if g.rng.random() < 0.4 else g.fresh_spatial()
    if new is None:
        return None
    desc = {
        "class": "pool",
        "from": src,
        "mode": g.rng.choice(("max", "avg")),
        "pool_size": (2,),
        "padding": "same",
        "in_spatial_dims": [TIME],
        "out_spatial_dims": [new],
    }
    pooled = g.add("pool", desc, Info((new, g.infos[src].feature)))
    if g.rng.random() < 0.5:  # a random layer over the new dim: its shape needs the pool first
        feat = g.infos[src].feature
        noise = {
            "class": "random",
            "shape": [batch_dim, new, feat],
            "distribution": "uniform",
            "minval": 0.0,
            "maxval": 1.0,
            "seed": g.rng.randrange(99),
            "shape_deps": [pooled],
        }
        rnd = g.add("rnd", noise, Info((new, feat)))
        return g.add("comb", {"class": "combine", "kind": "add", "from": [pooled, rnd]}, Info((new, feat)))
    return pooled


@picks(frames)
def g_window(g: NetGen, src: str) -> Optional[str]:
    info = g.infos[src]
    win = g.add(
        "win",
        {"class": "window", "from": src, "window_size": 3, "window_dim": WINDOW, "axis": TIME},
        Info((TIME, WINDOW, info.feature)),
    )
    return g.add("red", {"class": "reduce", "mode": g.rng.choice(("max", "mean")), "axis": WINDOW, "from": win}, info)


@picks(frames)
def g_cumsum(g: NetGen, src: str) -> Optional[str]:
    axis = g.rng.choice((TIME, "T", "stag:time"))
    return g.add("cs", {"class": "cumsum", "from": src, "axis": axis}, g.infos[src])


@picks(frames)
def g_concat(g: NetGen, a: str) -> Optional[str]:
    fa = g.infos[a].feature
    options = [n for n, i in g.infos.items() if frames(i) and fa.dimension + i.feature.dimension in FEATURES]
    options = [n for n in options if g.infos[n].feature is not fa]
    if not options:
        return None
    b = g.rng.choice(options)
    fb = g.infos[b].feature
    out = FEATURES[fa.dimension + fb.dimension]
    return g.add("cat", {"class": "concat", "from": [(a, fa), (b, fb)], "out_dim": out}, Info((TIME, out)))


@picks(lambda i: frames(i) and i.feature.dimension > 2)
def g_slice(g: NetGen, src: str) -> Optional[str]:
    feat = g.infos[src].feature
    sizes = [n for n in FEATURES if n < feat.dimension]
    if not sizes:
        return None
    n = g.rng.choice(sizes)
    start = g.rng.randint(0, feat.dimension - n)
    desc = {
        "class": "slice",
        "from": src,
        "axis": feat,
        "slice_start": start,
        "slice_end": start + n,
        "out_dim": FEATURES[n],
    }
    return g.add("sl", desc, Info((TIME, FEATURES[n])))


@picks(lambda i: frames(i) and i.feature is FEATURES[8])
def g_split(g: NetGen, src: str) -> Optional[str]:
    split = g.add(
        "split",
        {"class": "split", "from": src, "axis": FEATURES[8], "out_dims": [FEATURES[4], TWINS[4]]},
        Info((TIME, FEATURES[8])),
    )
    part = g.rng.choice((0, 1))
    dim = (FEATURES[4], TWINS[4])[part]
    del g.infos[split]  # only its sub-layers are read
    return g.add("act", {"class": "activation", "activation": "relu", "from": f"{split}/{part}"}, Info((TIME, dim)))


@picks(lambda i: frames(i) and i.feature is FEATURES[8])
def g_split_merge(g: NetGen, src: str) -> Optional[str]:
    split = g.add(
        "sd",
        {"class": "split_dims", "from": src, "axis": FEATURES[8], "dims": [FEATURES[2], FEATURES[4]]},
        Info((TIME, FEATURES[2], FEATURES[4])),
    )
    axes = [FEATURES[2], FEATURES[4]]
    if g.rng.random() < 0.3:
        axes.reverse()
    return g.add(
        "md", {"class": "merge_dims", "from": split, "axes": axes, "out_dim": FEATURES[8]}, Info((TIME, FEATURES[8]))
    )


@picks(frames)
def g_length(g: NetGen, src: str) -> Optional[str]:
    length = g.add("len", {"class": "length", "from": src, "axis": TIME}, Info((), dtype="int32"))
    cast = g.add("cast", {"class": "cast", "from": length, "dtype": "float32"}, Info(()))
    return g.add("comb", {"class": "combine", "kind": "mul", "from": [src, cast]}, g.infos[src])


@picks(frames)
def g_range_in_axis(g: NetGen, src: str) -> Optional[str]:
    rng_layer = g.add(
        "rng", {"class": "range_in_axis", "from": src, "axis": TIME}, Info((TIME,), batch=False, dtype="int32")
    )
    cast = g.add("cast", {"class": "cast", "from": rng_layer, "dtype": "float32"}, Info((TIME,), batch=False))
    return g.add("comb", {"class": "combine", "kind": "add", "from": [src, cast]}, g.infos[src])


@picks(frames)
def g_switch(g: NetGen, a: str) -> Optional[str]:
    b = g.pick(lambda i: i == g.infos[a], False)
    zero = g.add("const", {"class": "constant", "value": 0.0}, Info((), batch=False))
    cmp = g.add(
        "cmp",
        {"class": "compare", "from": [a, zero], "kind": g.rng.choice(("greater", "less"))},
        Info(g.infos[a].dims, dtype="bool"),
    )
    return g.add("sw", {"class": "switch", "condition": cmp, "true_from": a, "false_from": b}, g.infos[a])


@picks(frames)
def g_dot(g: NetGen, src: str) -> Optional[str]:
    feat, out = g.infos[src].feature, g.feature()
    if out is feat:
        return None
    weight = g.add(
        "w", {"class": "variable", "shape": [feat, out], "init": "glorot_uniform"}, Info((feat, out), batch=False)
    )
    return g.add("dot", {"class": "dot", "from": [src, weight], "reduce": feat}, Info((TIME, out)))


def g_gather(g: NetGen) -> Optional[str]:
    out = g.feature()
    emb = g.add(
        "emb",
        {"class": "variable", "shape": [CLASSES, out], "init": "glorot_uniform"},
        Info((CLASSES, out), batch=False),
    )
    return g.add(
        "gat", {"class": "gather", "from": emb, "position": "data:classes", "axis": CLASSES}, Info((TIME, out))
    )


@picks(lambda i: frames(i) and i.feature is CLASSES)
def g_sparse_ce(g: NetGen, src: str) -> Optional[str]:
    desc = {
        "class": "sparse_softmax_cross_entropy_with_logits",
        "logits": src,
        "targets": "data:classes",
        "axis": CLASSES,
    }
    return g.add("xent", desc, Info((TIME,)))


@picks(frames)
def g_softmax_over_spatial(g: NetGen, src: str) -> Optional[str]:
    return g.add("sos", {"class": "softmax_over_spatial", "from": src, "axis": TIME}, g.infos[src])


@picks(frames)
def g_scaled_grad(g: NetGen, src: str) -> Optional[str]:
    return g.add("sg", {"class": "scaled_grad", "from": src, "scale": g.rng.choice((-1.0, 0.5))}, g.infos[src])


@picks(lambda i: frames(i) and i.feature.dimension in (2, 4))
def g_pad(g: NetGen, src: str) -> Optional[str]:
    feat = g.infos[src].feature
    out = FEATURES[feat.dimension + 2]
    desc = {
        "class": "pad",
        "from": src,
        "axes": feat,
        "padding": (1, 1),
        "out_dims": out,
        "value": g.rng.choice((0.0, 1.0)),
    }
    return g.add("pad", desc, Info((TIME, out)))


@picks(frames)
def g_mse_loss(g: NetGen, a: str) -> Optional[str]:
    b = g.pick(lambda i: i == g.infos[a], False)
    if b == a:
        return None
    desc: dict[str, Any] = {"class": "copy", "from": a, "loss": "mse", "target": f"layer:{b}"}
    if g.rng.random() < 0.3:
        desc["loss_scale"] = 0.5
    return g.add("mse", desc, g.infos[a])


@picks(lambda i: i.batch and i.dtype == "float32" and len(i.dims) == 1)
def g_as_is_loss(g: NetGen, src: str) -> Optional[str]:
    return g.add("asis", {"class": "copy", "from": src, "loss": "as_is"}, g.infos[src])


GENERATORS: dict[str, Callable[[NetGen], Optional[str]]] = {
    fn.__name__[2:]: fn
    for fn in (
        g_linear,
        g_activation,
        g_combine,
        g_eval,
        g_eval_named,
        g_copy,
        g_dropout,
        g_constant,
        g_random,
        g_variable,
        g_reduce,
        g_softmax,
        g_layer_norm,
        g_batch_norm,
        g_loop,
        g_rnn,
        g_subnetwork,
        g_conv,
        g_pool,
        g_window,
        g_cumsum,
        g_concat,
        g_slice,
        g_split,
        g_split_merge,
        g_length,
        g_range_in_axis,
        g_switch,
        g_dot,
        g_gather,
        g_sparse_ce,
        g_softmax_over_spatial,
        g_scaled_grad,
        g_pad,
        g_mse_loss,
        g_as_is_loss,
    )
}


def generate(rng: random.Random) -> Net:
    """A random net dict: 2 to 7 generated layers (or groups of layers) over data and classes, an output and maybe losses."""
    g = NetGen(rng, [0], list(SPATIAL))
    g.infos["data"] = Info((TIME, IN))
    for _ in range(rng.randint(2, 7)):
        rng.choice(list(GENERATORS.values()))(g)
    for special, p in ((g_loop, 0.3), (g_mse_loss, 0.25), (g_eval_named, 0.2), (g_eval, 0.3)):
        if rng.random() < p:  # constructs some rules and edits need, more often
            special(g)
    if rng.random() < 0.3:
        g_softmax(g)
    final = g.pick(lambda i: i.batch and i.dtype == "float32" and i.dims)
    g.net["output"] = {"class": "copy", "from": final or "data"}
    if rng.random() < 0.15:
        extra = g.pick(lambda i: i.batch and i.dtype == "float32")
        if extra is not None and extra not in (final, "data"):
            g.net[extra]["is_output_layer"] = True
    return g.net


# ---------------------------------------------------------------------------------------------------------------------
# Walking and editing net dicts


def _replace_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` with every str in it (in dicts, lists, tuples; dict keys of layers too) replaced by ``fn`` (in
    place for dicts)."""
    if type(value) is str:
        return fn(value)
    if type(value) is dict:
        items = list(value.items())
        value.clear()
        for key, item in items:
            value[fn(key) if type(key) is str and type(item) is dict and "class" in item else key] = _replace_strings(
                item, fn
            )
        return value
    if type(value) in (list, tuple):
        return type(value)(_replace_strings(item, fn) for item in value)
    return value


@dataclass
class Where:
    """A layer in a net dict: its container dict, its name, its path."""

    container: dict
    name: str
    path: str
    kind: str  # "root", "sub" (a subnetwork's body), "loop" (a rec unit)

    @property
    def desc(self) -> dict:
        return self.container[self.name]


def layers_of(net: Net, path: str = "", kind: str = "root") -> Iterator[Where]:
    for name, desc in list(net.items()):
        if type(desc) is not dict or "class" not in desc:
            continue
        yield Where(net, name, path + name, kind)
        if type(desc.get("unit")) is dict:
            yield from layers_of(desc["unit"], path + name + "/", "loop")
        if type(desc.get("subnetwork")) is dict:
            yield from layers_of(desc["subnetwork"], path + name + "/", "sub")


KEPT_NAMES = frozenset({"output", "data", "classes", "source", "end"})


def _renamable(w: Where) -> bool:
    return w.name not in KEPT_NAMES and "loss" not in w.desc and "is_output_layer" not in w.desc


def rename(net: Net, old: str, new: str, in_code: bool = True) -> None:
    """Renames the (globally unique) layer ``old`` to ``new`` everywhere: keys, references (path segments after
    prefixes), and with ``in_code`` names quoted in code strings."""
    segment = re.compile(rf"(?<![\w]){re.escape(old)}(?![\w])")

    def fn(text: str) -> str:
        if text == old:
            return new
        if " " in text or "(" in text:
            return segment.sub(new, text) if in_code else text
        parts = re.split(r"([:/])", text)
        return "".join(new if part == old else part for part in parts)

    _replace_strings(net, fn)


def references_to(net: Net, name: str) -> int:
    pattern = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    return sum(bool(pattern.search(text)) for text in _all_strings(net))


def _fresh(net: Net, stem: str) -> str:
    names = {w.name for w in layers_of(net)}
    i = 0
    while f"{stem}{i}" in names:
        i += 1
    return f"{stem}{i}"


def _out_dims(w: Where) -> Optional[set]:
    """The output dims of a generated layer where the generator says them cheaply (for out_shape), else None."""
    desc = w.desc
    cls = desc["class"]
    if cls in ("linear", "softmax") and type(desc.get("from")) is str and desc["from"] == "data":
        return {batch_dim, TIME, desc["out_dim"]}
    if cls == "rec" and type(desc.get("unit")) is str:
        return {batch_dim, TIME, desc["out_dim"]}
    return None


# Rewrites a graph rule claims inert (rule name -> functions net -> bool, False when nothing applies).


def rw_rename(net: Net, rng: random.Random, in_loop: bool = False) -> bool:
    """A layer renamed; in a loop, to a name that sorts where its old name did among the loop's layers, without a
    body (RETURNN constructs a loop's layers in name order, so the graph hash keeps that order)."""
    cands = [w for w in layers_of(net) if _renamable(w) and (w.kind == "loop") == in_loop]
    if in_loop:
        cands = [w for w in cands if "unit" not in w.desc and "subnetwork" not in w.desc]
    if not cands:
        return False
    w = rng.choice(cands)
    new = _fresh(net, f"{w.name}_renamed" if in_loop else "renamed")
    others = sorted(name for name in w.container if name != w.name)
    if in_loop and bisect.bisect(others, w.name) != bisect.bisect(others, new):
        return False
    rename(net, w.name, new)
    return True


def rw_scope(net: Net, rng: random.Random) -> bool:
    """A layer's own name as its name_scope, or a parametrized root layer wrapped in a subnetwork with name_scope ""
    (its variables keep their names)."""
    cands = [w for w in layers_of(net) if w.kind == "root" and _renamable(w) and "name_scope" not in w.desc]
    cands = [w for w in cands if w.desc["class"] in ("linear", "softmax", "layer_norm", "conv", "variable")]
    if not cands:
        return False
    w = rng.choice(cands)
    if rng.random() < 0.4:
        w.desc["name_scope"] = w.name if rng.random() < 0.5 else "/" + w.name
        return True
    wrapper = _fresh(net, "scope")
    inner = copy.deepcopy(w.desc)
    sources = inner.pop("from", None)
    desc = {
        "class": "subnetwork",
        "subnetwork": {w.name: inner, "output": {"class": "copy", "from": w.name}},
        "name_scope": "",
    }
    if sources is not None:
        if type(sources) is not str:
            return False
        desc["from"] = sources
        inner["from"] = "data"
    del w.container[w.name]
    rename(net, w.name, wrapper)
    net[wrapper] = desc
    return True


def rw_wrap_subnetwork(net: Net, rng: random.Random) -> bool:
    """A parameter-free layer of one input wrapped in a subnetwork (a namespace), or a flattened one unwrapped."""
    from i6_rc_jobs.hashing.graph_rules import PARAMETER_FREE_CLASSES

    cands = [
        w
        for w in layers_of(net)
        if w.kind == "root"
        and _renamable(w)
        and w.desc["class"] in PARAMETER_FREE_CLASSES
        and type(w.desc.get("from")) is str
        and not w.desc["from"].startswith("data:")
    ]
    if not cands:
        return False
    w = rng.choice(cands)
    inner = copy.deepcopy(w.desc)
    source = inner["from"]
    inner["from"] = "data"
    w.container[w.name] = {
        "class": "subnetwork",
        "from": source,
        "subnetwork": {"inner": inner, "output": {"class": "copy", "from": "inner"}},
    }
    return True


def rw_copy(net: Net, rng: random.Random) -> bool:
    """A copy layer between a layer and the layers reading it."""
    cands = [w for w in layers_of(net) if w.kind == "root" and w.name not in KEPT_NAMES and references_to(net, w.name)]
    if not cands:
        return False
    w = rng.choice(cands)
    alias = _fresh(net, "alias")
    desc = w.container.pop(w.name)
    rename(net, w.name, alias)
    w.container[w.name] = desc
    w.container[alias] = {"class": "copy", "from": w.name}
    return True


def rw_from_list(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net) if type(w.desc.get("from")) in (str, list, tuple)]
    cands = [w for w in cands if type(w.desc["from"]) is str or len(w.desc["from"]) == 1]
    if not cands:
        return False
    w = rng.choice(cands)
    source = _first(w.desc["from"]) if w.desc["from"] else None
    if source is None or type(source) is not str:
        return False
    w.desc["from"] = rng.choice(
        [v for v in (source, [source], (source,)) if v != w.desc["from"] or type(v) is not type(w.desc["from"])]
    )
    return True


def rw_unreached(net: Net, rng: random.Random) -> bool:
    """An extra parameter-free layer that nothing reads."""
    src = rng.choice(["data"] + [w.name for w in layers_of(net) if w.kind == "root" and w.name != "output"])
    name = _fresh(net, "unused")
    net[name] = rng.choice(
        (
            {"class": "activation", "activation": "tanh", "from": src},
            {"class": "eval", "from": src, "eval": "source(0) * 3.0"},
            {"class": "constant", "value": 2.0},
            {"class": "copy", "from": src},
        )
    )
    return True


def rw_inert_options(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net)]
    w = rng.choice(cands)
    choice = rng.random()
    if choice < 0.4:
        dims = _out_dims(w)
        if dims is None:
            return False
        w.desc["out_shape"] = dims
    elif choice < 0.7:
        others = [o.name for o in layers_of(net) if o.container is w.container and o.name != w.name]
        w.desc["shape_deps"] = [rng.choice(["data"] + others)]
    else:
        if "name_scope" in w.desc or w.kind == "loop":
            return False
        w.desc["name_scope"] = w.name
    return True


def rw_unset_options(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net) if "loss" in w.desc]
    if not cands:
        return False
    w = rng.choice(cands)
    key = rng.choice(("loss_scale", "loss_opts"))
    if key in w.desc:
        return False
    w.desc[key] = rng.choice((1.0, None, 1)) if key == "loss_scale" else rng.choice((None, {}))
    return True


def rw_value_spellings(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net) if w.desc["class"] == "constant" or "initial_state" in w.desc]
    if not cands:
        return False
    w = rng.choice(cands)
    if w.desc["class"] == "constant":
        value = w.desc.get("value", 0.0)
        if type(value) is float and value.is_integer():
            w.desc["value"] = int(value)
            w.desc["dtype"] = "float32"
        elif type(value) is int:
            w.desc["value"] = float(value)
            w.desc.pop("dtype", None)
        else:
            return False
        return True
    state = w.desc["initial_state"]
    same = {0: (0, 0.0, "zeros"), 1: (1, 1.0, "ones")}
    for group in same.values():
        if any(type(state) is type(v) and state == v for v in group):
            w.desc["initial_state"] = rng.choice([v for v in group if not (type(v) is type(state) and v == state)])
            return True
    return False


def rw_scalar_operands(net: Net, rng: random.Random) -> bool:
    """An eval of one source and a float as a combine with a constant layer, or the reverse."""
    from i6_rc_jobs.hashing.graph_spellings import scalar_eval

    cands = [w for w in layers_of(net) if w.desc["class"] == "eval" and type(w.desc.get("from")) is str]
    cands = [w for w in cands if scalar_eval(w.desc["eval"]) is not None and set(w.desc) == {"class", "from", "eval"}]
    if not cands:
        return False
    w = rng.choice(cands)
    kind, number, first = scalar_eval(w.desc["eval"])
    const = _fresh(net, "scalar")
    w.container[const] = {"class": "constant", "value": number}
    sources = [w.desc["from"], const]
    w.container[w.name] = {"class": "combine", "kind": kind, "from": sources if first else sources[::-1]}
    return True


def rw_subnetwork_scope(net: Net, rng: random.Random) -> bool:
    """A root subnetwork without name_scope renamed, with name_scope its old name (its layers keep their scope)."""
    cands = [w for w in layers_of(net) if w.kind == "root" and _renamable(w) and w.desc["class"] == "subnetwork"]
    cands = [w for w in cands if "name_scope" not in w.desc]
    if not cands:
        return False
    old, new = rng.choice(cands).name, _fresh(net, "renamed")
    rename(net, old, new)
    net[new]["name_scope"] = old
    return True


def rw_empty_shape_deps(net: Net, rng: random.Random) -> bool:
    """An empty shape_deps ([] or ()) on a constant or random layer that has none."""
    cands = [w for w in layers_of(net) if w.desc["class"] in ("constant", "random") and "shape_deps" not in w.desc]
    if not cands:
        return False
    rng.choice(cands).desc["shape_deps"] = rng.choice(([], ()))
    return True


def rw_extern_shape_deps(net: Net, rng: random.Random) -> bool:
    """Extern data ("data", "data:data", "data:classes") added to the shape_deps of a constant or random layer outside
    loops, which spells them as a str, a list or a tuple."""
    in_loops = {w.path + "/" for w in layers_of(net) if type(w.desc.get("unit")) is dict}
    cands = [
        w
        for w in layers_of(net)
        if w.desc["class"] in ("constant", "random") and not any(w.path.startswith(loop) for loop in in_loops)
    ]
    if not cands:
        return False
    w = rng.choice(cands)
    deps = w.desc.get("shape_deps", [])
    deps = [deps] if type(deps) is str else list(deps)
    deps.insert(rng.randrange(len(deps) + 1), rng.choice(("data", "data:data", "data:classes")))
    spelling = rng.choice((list, tuple, str)) if len(deps) == 1 else rng.choice((list, tuple))
    w.desc["shape_deps"] = deps[0] if spelling is str else spelling(deps)
    return True


def rw_static_random(net: Net, rng: random.Random) -> bool:
    """A static random layer renamed (it owns no variable, so its name is not hashed)."""
    cands = [w for w in layers_of(net) if _renamable(w) and w.desc["class"] == "random" and w.desc.get("static")]
    if not cands:
        return False
    w = rng.choice(cands)
    rename(net, w.name, _fresh(net, "renamed"))
    return True


RULE_REWRITES: dict[str, Callable[[Net, random.Random], bool]] = {
    "layer-names": rw_rename,
    "parameter-scope": rw_scope,
    "subnetwork-namespace": rw_wrap_subnetwork,
    "subnetwork-scope": rw_subnetwork_scope,
    "copy-alias": rw_copy,
    "from-list": rw_from_list,
    "unreached": rw_unreached,
    "inert-options": rw_inert_options,
    "unset-options": rw_unset_options,
    "value-spellings": rw_value_spellings,
    "scalar-operands": rw_scalar_operands,
    "empty-shape-deps": rw_empty_shape_deps,
    "extern-shape-deps": rw_extern_shape_deps,
    "static-random": rw_static_random,
    "loops": lambda net, rng: rw_rename(net, rng, in_loop=True),
}

# Rewrites the dict scheme claims inert: insertion order, dims' descriptions.


def rw_dict_order(net: Net, rng: random.Random) -> bool:
    def shuffle(value: Any) -> Any:
        if type(value) is dict:
            items = list(value.items())
            rng.shuffle(items)
            value.clear()
            value.update((k, shuffle(v)) for k, v in items)
        elif type(value) in (list, tuple):
            for item in value:
                shuffle(item)
        return value

    shuffle(net)
    return True


def _map_dims(value: Any, fn: Callable[[Dim], Dim], only_first: bool = False) -> Any:
    done = [False]

    def walk(v: Any) -> Any:
        if isinstance(v, Dim):
            if only_first and done[0]:
                return v
            new = fn(v)
            done[0] = done[0] or new is not v
            return new
        if type(v) is dict:
            for key in list(v):
                v[key] = walk(v[key])
            return v
        if type(v) in (list, tuple):
            return type(v)(walk(i) for i in v)
        if type(v) is set:
            return {walk(i) for i in v}
        return v

    return walk(value)


def rw_dim_description(net: Net, rng: random.Random) -> bool:
    """A dim replaced everywhere by one that differs only by its description."""
    n = rng.choice(list(RENAMED))
    if not _contains_dim(net, FEATURES[n]):
        return False
    _map_dims(net, lambda d: RENAMED[n] if d is FEATURES[n] else d)
    return True


def _contains_dim(net: Net, dim: Dim) -> bool:
    found = [False]
    _map_dims(
        copy.deepcopy(net, {id(d): d for d in _all_dims()}), lambda d: found.__setitem__(0, found[0] or d is dim) or d
    )
    return found[0]


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


def rw_dim_copy(net: Net, rng: random.Random) -> bool:
    """A dim replaced by its same_as copy (everywhere, or at one place): RETURNN finds them equal."""
    n = rng.choice(list(COPIES))
    if not _contains_dim(net, FEATURES[n]):
        return False
    _map_dims(net, lambda d: COPIES[n] if d is FEATURES[n] else d, only_first=rng.random() < 0.5)
    return True


DICT_REWRITES: dict[str, Callable[[Net, random.Random], bool]] = {
    "dict-order": rw_dict_order,
    "dim-description": rw_dim_description,
    "dim-copy": rw_dim_copy,
}

# Small edits.

OPTION_EDITS: dict[str, tuple] = {
    "activation": ACTIVATIONS,
    "kind": COMBINE_KINDS,
    "mode": ("mean", "sum", "max", "avg"),
    "dropout": (0.1, 0.2, 0.5),
    "L2": (0.01, 0.1),
    "loss_scale": (0.5, 2.0),
    "with_bias": (True, False),
    "trainable": (True, False),
    "value": (0.5, 1.0, 2.0, 0.0, 10**40),
    "initial_state": ("zeros", "ones", 0.5, "var"),
    "initial_output": (0.0, 1.0, 2.0),
    "momentum": (0.1, 0.01),
    "name_scope": ("", "other_scope", "/top"),
    "param_name": ("param", "weight"),
    "init": (0.0, 1.0, "glorot_uniform"),
    "eval": EVAL_CODES,
    "forward_weights_init": ("glorot_uniform", 0.5),
    "maxval": (0.5, 1.0, 2.0),
    "stddev": (0.5, 1.0),
    "scale": (-1.0, 0.5),
    "label_smoothing": (0.1, 0.2),
    "padding": ("same", "valid"),
    "static": (True, False),
    "distribution": ("uniform", "normal"),
    "param_variational_noise": (0.1, 0.2),
    "unit": ("standardlstm", "gru"),
}


def ed_input(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net) if w.desc.get("from")]
    if not cands:
        return False
    w = rng.choice(cands)
    others = [o.name for o in layers_of(net) if o.container is w.container and o.name != w.name] + ["data"]
    new = rng.choice(others)
    sources = w.desc["from"]
    if type(sources) is str:
        w.desc["from"] = new
    elif type(sources) is list and sources and type(sources[0]) is str:
        sources[rng.randrange(len(sources))] = new
    else:
        return False
    return True


def ed_option(net: Net, rng: random.Random) -> bool:
    cands = [(w, key) for w in layers_of(net) for key in w.desc if key in OPTION_EDITS]
    cands += [
        (w, "label_smoothing")
        for w in layers_of(net)
        if type(w.desc.get("loss_opts")) is dict and "label_smoothing" in w.desc["loss_opts"]
    ]
    if not cands:
        return False
    w, key = rng.choice(cands)
    holder = w.desc["loss_opts"] if key == "label_smoothing" else w.desc
    values = [v for v in OPTION_EDITS[key] if not (type(v) is type(holder[key]) and v == holder[key])]
    holder[key] = rng.choice(values)
    return True


def ed_add_option(net: Net, rng: random.Random) -> bool:
    w = rng.choice(list(layers_of(net)))
    key, value = rng.choice(
        (("dropout", 0.1), ("L2", 0.01), ("trainable", False), ("loss_scale", 0.5), ("is_output_layer", True))
    )
    if key in w.desc:
        return False
    w.desc[key] = value
    return True


CLASS_EDITS = {
    "linear": "softmax",
    "softmax": "linear",
    "activation": "copy",
    "copy": "activation",
    "layer_norm": "copy",
    "cumsum": "copy",
    "dropout": "copy",
    "softmax_over_spatial": "copy",
    "scaled_grad": "copy",
}


def ed_class(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net) if w.desc["class"] in CLASS_EDITS]
    if not cands:
        return False
    w = rng.choice(cands)
    old = w.desc["class"]
    w.desc["class"] = CLASS_EDITS[old]
    if w.desc["class"] == "activation":
        w.desc["activation"] = "relu"
    elif old == "activation":
        w.desc.pop("activation")
    for key in ("axis", "scale", "dropout_noise_shape"):
        if old in ("cumsum", "softmax_over_spatial", "scaled_grad", "dropout"):
            w.desc.pop(key, None)
    if old == "dropout":
        w.desc.pop("dropout", None)
    return True


def ed_name(net: Net, rng: random.Random) -> bool:
    """A rename where RETURNN reads the name: a loss or output layer, a layer with parameters, or a rename that
    leaves a code string naming the old layer."""
    cands = [w for w in layers_of(net) if w.name not in ("data", "classes", "source")]
    if not cands:
        return False
    w = rng.choice(cands)
    new = _fresh(net, "named")
    if w.name == "output":
        desc = w.container.pop("output")
        w.container[new] = desc
        w.container["output"] = {"class": "copy", "from": new}  # the default output's name is read
        if rng.random() < 0.5:
            w.container["output"], w.container[new] = w.container[new], w.container["output"]
            w.container["output"]["from"] = new  # the copy is now under the new name
        return True
    if w.kind == "root" and rng.random() < 0.2 and w.name != "output":
        # a layer named data: RETURNN finds it before extern data, for every reference; or a special value's name
        new = rng.choice(("data", "data", "zeros", "ones", "var", "none"))
    rename(net, w.name, new, in_code=rng.random() < 0.5)
    return True


def ed_dim(net: Net, rng: random.Random) -> bool:
    """One occurrence of a feature dim replaced by another dim of the same size and kind."""
    n = rng.choice(list(TWINS))
    if not _contains_dim(net, FEATURES[n]):
        return False
    _map_dims(net, lambda d: TWINS[n] if d is FEATURES[n] else d, only_first=True)
    return True


def ed_target(net: Net, rng: random.Random) -> bool:
    cands = [w for w in layers_of(net) if type(w.desc.get("target")) is str and w.desc["target"].startswith("layer:")]
    if not cands:
        return False
    w = rng.choice(cands)
    target = w.desc["target"][len("layer:") :]
    if target not in w.container:
        return False
    w.container[target] = {"class": "activation", "activation": "tanh", "from": w.container[target].get("from", "data")}
    return True


def ed_swap_names(net: Net, rng: random.Random) -> bool:
    """Two layers swap names in the references, not in code strings (which then name the other layer)."""
    cands = [w for w in layers_of(net) if _renamable(w)]
    coded = [w for w in cands if any(w.name in t and (" " in t or "(" in t) for t in _all_strings(net))]
    if not coded or len(cands) < 2:
        return False
    one = rng.choice(coded)
    other = rng.choice([w for w in cands if w.name != one.name and w.container is one.container])
    temp = _fresh(net, "swap")
    rename(net, one.name, temp, in_code=False)
    rename(net, other.name, one.name, in_code=False)
    rename(net, temp, other.name, in_code=False)
    return True


def _all_strings(value: Any) -> list[str]:
    found: list[str] = []
    _replace_strings(copy.deepcopy(value, {id(d): d for d in _all_dims()}), lambda t: found.append(t) or t)
    return found


EDITS: dict[str, Callable[[Net, random.Random], bool]] = {
    "edit-swap-names": ed_swap_names,
    "edit-input": ed_input,
    "edit-option": ed_option,
    "edit-add-option": ed_add_option,
    "edit-class": ed_class,
    "edit-name": ed_name,
    "edit-dim": ed_dim,
    "edit-target-layer": ed_target,
}


# ---------------------------------------------------------------------------------------------------------------------
# Hashes, code and the judge


def serializer(net: Any, scheme: str, staged: bool):
    from i6_rc_jobs import ReturnnCommonSerializer

    if staged:
        return ReturnnCommonSerializer(extern_data=EXTERN_DATA, staged_networks=net, hash_scheme=scheme)
    return ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=net, hash_scheme=scheme)


def hashes(net: Any, staged: bool) -> dict[str, Any]:
    """scheme -> its hash (bytes), or the error text of a net the serializer refuses."""
    from i6_rc_jobs.serialization.errors import SerializationError

    result = {}
    for scheme in ("dict", "graph"):
        try:
            result[scheme] = serializer(net, scheme, staged)._sis_hash()
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
                        built.eval[epoch], built.train[epoch] = fingerprints(stage)
            except Exception as exc:
                built.error = f"{type(exc).__name__}: {str(exc)[:300]}"
        return built

    def differences(self, a: Built, b: Built, staged: bool, loaded: bool) -> list[str]:
        """What RETURNN finds different ([] for the same); with ``loaded``, also whether the configs load as the same
        dicts and dims."""
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
                f"{_stage(epoch, staged)}training: {line}" for line in train_differences(a.train[epoch], b.train[epoch])
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
    from i6_rc_jobs.semantics import load_config

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
        return (type(v).__name__, v)

    return form(config.typed_value("extern_data")), {e: form(n) for e, n in nets.items()}


def _first_form_difference(a: Any, b: Any) -> str:
    text_a, text_b = repr(a), repr(b)
    i = next((i for i, (x, y) in enumerate(zip(text_a, text_b)) if x != y), min(len(text_a), len(text_b)))
    return f"...{text_a[max(0, i - 80) : i + 80]}... != ...{text_b[max(0, i - 80) : i + 80]}..."


@dataclass(frozen=True, eq=False)
class TrainFingerprint:
    trainable: tuple[str, ...]
    output: Any
    losses: dict[str, float]
    objective: float
    gradients: dict[str, Any]
    values: bool  # False: random numbers inside a loop made output, losses and gradients depend on RETURNN's order


def _random_samples(fetches: list, graph: Any) -> tuple[list, bool]:
    """The float outputs of the random ops that ``fetches`` depend on (dropout masks, noise, random layers), and
    whether all of them can be fed (not inside a loop)."""
    seen, stack, samples, feedable = set(), [t.op for t in fetches], [], True
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
        if ("Random" in op.type or op.type.startswith("Stateful")) and op.outputs and op.outputs[0].dtype.is_floating:
            if op._control_flow_context is None and graph.is_feedable(op.outputs[0]):
                samples.append(op.outputs[0])
            else:
                feedable = False
    return samples, feedable


def _sample_value(tensor: Any, shape: tuple) -> Any:
    """A random op's output from its type and shape alone: equal wherever two nets draw the same kind of numbers
    in the same shape, whichever seed RETURNN gave the op (it draws them in the order it constructs layers)."""
    import numpy

    from i6_rc_jobs.semantics import _stable_int

    rng = numpy.random.default_rng([_stable_int(tensor.op.type), *shape])
    values = rng.random(shape) if "Uniform" in tensor.op.type else rng.standard_normal(shape).clip(-2, 2)
    return values.astype(tensor.dtype.as_numpy_dtype)


def fingerprints(config_code: str, *, seed: int = 1) -> tuple[Any, TrainFingerprint]:
    """The network built once with RETURNN's dynamic train flag (as its engine trains), its variables set as
    ``i6_rc_jobs.semantics`` sets them: the eval fingerprint (train flag False) and what that judge cannot see (train
    flag True): the trainable variables, the train-mode output, losses, objective and its gradient with respect to
    each trainable variable, with every random number fed from its op's type and shape (:func:`_sample_value`)."""
    import numpy
    import tensorflow as tf

    from i6_rc_jobs import semantics
    from i6_rc_jobs.returnn_check import network_in_new_graph

    config = semantics.load_config(config_code)
    with network_in_new_graph(config, config.typed_value("network"), train_flag="dynamic") as network:
        trainable = {semantics._variable_name(var): var for var in network.get_trainable_params()}
        output = semantics._canonical_axes(network.get_default_output_layer().output.copy_as_batch_major())
        masks = [output.get_sequence_mask_broadcast(axis=i) for i in semantics._dynamic_axes(output)]
        losses = {
            name: value
            for name, holder in network.get_losses_initialized()[0].items()
            if (value := holder.get_loss_value_for_objective()) is not None
        }
        objective = tf.convert_to_tensor(network.get_objective(), tf.float32)
        names = sorted(trainable)
        grads = tf.gradients(objective, [trainable[n] for n in names]) if names else []
        grads = {n: tf.convert_to_tensor(g) for n, g in zip(names, grads) if g is not None}
        fetches = (output.placeholder, masks, losses, objective, grads)
        samples, feedable = _random_samples(tf.nest.flatten(fetches), tf.compat.v1.get_default_graph())
        eval_fingerprint = semantics.network_fingerprint(network, seed=seed, feed={network.train_flag: False})
        variables = {semantics._variable_name(var): var for var in tf.compat.v1.global_variables()}
        constant = [name for name, var in variables.items() if semantics._init_text(var.initial_value)[1]]
        with tf.compat.v1.Session() as session:
            bases = session.run({name: variables[name].initial_value for name in constant})
            session.run(
                [var.initializer for var in variables.values()],
                {
                    var.initializer.inputs[1]: semantics._param_value(name, var, bases.get(name), seed)
                    for name, var in variables.items()
                },
            )
            feed = {**semantics._extern_data_feed(network.extern_data, seed), network.train_flag: True}
            shapes = session.run(samples, feed) if samples else []
            feed.update({t: _sample_value(t, numpy.shape(v)) for t, v in zip(samples, shapes)})
            value, mask_values, loss_values, objective_value, grad_values = session.run(fetches, feed)
    for mask in mask_values:
        value = numpy.where(mask, value, numpy.zeros((), value.dtype))
    losses = {k: float(v) for k, v in loss_values.items()}
    return eval_fingerprint, TrainFingerprint(
        tuple(names), value, losses, float(objective_value), grad_values, feedable
    )


def train_differences(a: TrainFingerprint, b: TrainFingerprint) -> list[str]:
    import numpy

    from i6_rc_jobs.semantics import ATOL, RTOL

    def close(x: Any, y: Any) -> bool:
        x, y = numpy.asarray(x), numpy.asarray(y)
        return x.shape == y.shape and bool(numpy.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True))

    lines = []
    if a.trainable != b.trainable:
        lines.append(f"trainable variables {list(a.trainable)} != {list(b.trainable)}")
    if not (a.values and b.values):
        return lines
    if not close(a.output, b.output):
        lines.append("train-mode output differs")
    if a.losses.keys() != b.losses.keys():
        lines.append(f"train-mode losses {sorted(a.losses)} != {sorted(b.losses)}")
    else:
        lines += [
            f"train-mode loss {k}: {a.losses[k]:.6g} != {b.losses[k]:.6g}"
            for k in a.losses
            if not close(a.losses[k], b.losses[k])
        ]
    if not close(a.objective, b.objective):
        lines.append(f"objective {a.objective:.6g} != {b.objective:.6g}")
    for name in sorted(a.gradients.keys() | b.gradients.keys()):
        ga, gb = a.gradients.get(name), b.gradients.get(name)
        if ga is None or gb is None:
            if not (ga is None and gb is None) and numpy.any(numpy.asarray(ga if gb is None else gb) != 0):
                lines.append(f"gradient of {name}: only in one")
        elif not close(ga, gb):
            lines.append(f"gradient of {name} differs")
    return lines


# ---------------------------------------------------------------------------------------------------------------------
# Pairs, shrinking, reproducers


@dataclass
class Pair:
    kind: str  # a rule name, a dict rewrite or an edit
    base: Any
    variant: Any
    staged: bool
    kept: dict = field(default_factory=dict)  # scheme -> hashes equal
    status: str = "ok"  # "ok", "variant invalid", "refused"
    differences: list = field(default_factory=list)  # what RETURNN finds, when built
    counterexamples: dict = field(default_factory=dict)  # scheme -> (shrunk base, shrunk variant, differences)
    same_model: Optional[bool] = None


def make_base(seed: int, index: int) -> tuple[Any, bool]:
    rng = random.Random(f"{seed}:{index}")
    net = generate(rng)
    if rng.random() < 0.12:  # staged: a second stage with more layers (a generated net grown from the first)
        second = copy.deepcopy(net, {id(d): d for d in _all_dims()})
        rng.choice((rw_unreached, ed_add_option, ed_option))(second, rng)
        return {1: net, rng.choice((3, 5)): second}, True
    return net, False


def make_variant(base: Any, staged: bool, kind: str, rng: random.Random) -> Optional[Any]:
    variant = copy.deepcopy(base, {id(d): d for d in _all_dims()})
    fn = RULE_REWRITES.get(kind) or DICT_REWRITES.get(kind) or EDITS[kind]
    target = variant[rng.choice(sorted(variant))] if staged else variant
    applied = fn(target, rng)
    if not applied or py(variant) == py(base):
        return None
    return variant


KINDS = list(RULE_REWRITES) + list(DICT_REWRITES) + list(EDITS)


def run_base(args: tuple[int, int, int, bool]) -> tuple[int, Optional[str], list[Pair], int]:
    """One base net and its pairs (in a worker)."""
    seed, index, per_base, build_moved = args
    judge = _JUDGE
    base, staged = make_base(seed, index)
    base_hashes = hashes(base, staged)
    if any(type(h) is str for h in base_hashes.values()):
        return index, "refused: " + next(h for h in base_hashes.values() if type(h) is str), [], judge.builds
    base_code = serializer(base, "dict", staged).get()
    built_base = judge.build(base_code, base, staged)
    if built_base.error is not None:
        return index, "invalid: " + built_base.error, [], judge.builds
    rng = random.Random(f"{seed}:{index}:pairs")
    pairs = []
    kinds = rng.sample(KINDS, len(KINDS)) * 2  # each kind that applies gets its chance
    for kind in kinds:
        if len(pairs) >= per_base:
            break
        variant = make_variant(base, staged, kind, rng)
        if variant is None:
            continue
        pair = Pair(kind, base, variant, staged)
        pairs.append(pair)
        variant_hashes = hashes(variant, staged)
        crash = next((h for h in variant_hashes.values() if type(h) is str and h.startswith("crash:")), None)
        if crash is not None:
            pair.status = "refused"
            text = reproducer("dict", kind, base, variant, staged, [crash], crash=True)
            pair.counterexamples["serializer"] = (_signature("serializer", kind, [crash]), text)
            continue
        if any(type(h) is str for h in variant_hashes.values()):
            pair.status = "refused"
            continue
        pair.kept = {s: base_hashes[s] == variant_hashes[s] for s in base_hashes}
        if not any(pair.kept.values()) and not build_moved:
            continue
        code = serializer(variant, "dict", staged).get()
        built = judge.build(code, variant, staged)
        if built.error is not None:
            pair.status = "variant invalid"
            continue
        pair.differences = judge.differences(built_base, built, staged, loaded=False)
        loaded_differs = built_base.loaded != built.loaded
        pair.same_model = not pair.differences
        for scheme, kept in pair.kept.items():
            if kept and (pair.differences or (scheme == "dict" and loaded_differs)):
                found = pair.differences or ["the written configs load as other dicts or dims"]
                signature = _signature(scheme, kind, found)
                a, b, lines = (
                    (base, variant, found)
                    if signature in judge.shrunk
                    else shrink(judge, scheme, base, variant, staged)
                )
                judge.shrunk.add(signature)  # one of a kind is shrunk per process: shrinking costs builds
                pair.counterexamples[scheme] = (signature, reproducer(scheme, kind, a, b, staged, lines))
    for pair in pairs:  # the dicts hold this process's dims: the reproducers are the text
        pair.base = pair.variant = None
    return index, None, pairs, judge.builds


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
    return repr(value)


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


# ---------------------------------------------------------------------------------------------------------------------
# Running


_JUDGE: Judge


def _init_worker(own_process: bool = True) -> None:
    global _JUDGE
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    _JUDGE = Judge()
    if not own_process:  # in the caller's process: its TensorFlow settings stay as they are
        return
    import tensorflow as tf

    # Sessions of small graphs: one thread each (the processes are the parallelism), no graph rewriting (it costs
    # more than these graphs run; both nets of a pair are run alike).
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


def _signature(scheme: str, kind: str, lines: list[str]) -> str:
    first = lines[0] if lines else "?"
    words = re.sub(r"[^a-z]+", "-", re.sub(r"'[^']*'|\[[^\]]*\]|\d+(\.\d+)?", "", first.lower())).strip("-")
    words = "-".join(words.split("-")[:5])
    return f"{scheme}-{kind}-{words}"


@dataclass
class Report:
    table: dict = field(default_factory=dict)  # (scheme, kind) -> counter dict
    bases: int = 0
    invalid_bases: list = field(default_factory=list)
    pairs: int = 0
    counterexamples: list = field(default_factory=list)  # (signature, scheme, kind, text)
    builds: int = 0
    seconds: float = 0.0


def run(
    seed: int = 1,
    pairs: int = 200,
    processes: int = 2,
    per_base: int = 8,
    build_moved: bool = False,
    findings: Optional[pathlib.Path] = None,
    out=sys.stdout,
) -> Report:
    report = Report()
    start = time.time()
    bases = -(-pairs // per_base)
    index = 0
    builds_by_worker: dict[int, int] = {}
    context = multiprocessing.get_context("spawn" if processes > 1 else "fork")
    seen: set[str] = set()

    def handle(result: tuple[int, Optional[str], list[Pair], int], worker: int) -> None:
        idx, problem, found, builds = result
        builds_by_worker[worker] = builds
        report.bases += 1
        if report.bases % 10 == 0:
            print(
                f"[{time.time() - start:.0f} s] {report.pairs} pairs, {len(report.counterexamples)} counterexamples",
                file=sys.stderr,
                flush=True,
            )
        if problem is not None:
            report.invalid_bases.append((idx, problem))
            return
        for pair in found:
            if report.pairs >= pairs:
                break
            report.pairs += 1
            if "serializer" in pair.counterexamples:
                sig, text = pair.counterexamples["serializer"]
                report.counterexamples.append((sig, "serializer", pair.kind, text))
                if sig not in seen:
                    seen.add(sig)
                    print(f"\nCRASH {sig}\n{text}\n", file=out, flush=True)
                    if findings is not None:
                        _write_finding(findings, sig, text)
            for scheme in ("dict", "graph"):
                row = report.table.setdefault(
                    (scheme, pair.kind),
                    {
                        "pairs": 0,
                        "kept": 0,
                        "moved": 0,
                        "refused": 0,
                        "invalid": 0,
                        "kept, RETURNN same": 0,
                        "moved, RETURNN same": 0,
                        "counterexamples": 0,
                        "exercised": 0,
                    },
                )
                row["pairs"] += 1
                if pair.status == "refused":
                    row["refused"] += 1
                    continue
                if pair.status == "variant invalid":
                    row["invalid"] += 1
                    continue
                kept = pair.kept[scheme]
                row["kept" if kept else "moved"] += 1
                if pair.same_model:
                    row["kept, RETURNN same" if kept else "moved, RETURNN same"] += 1
                if scheme == "graph" and kept and not pair.kept["dict"]:
                    row["exercised"] += 1
                if scheme in pair.counterexamples:
                    row["counterexamples"] += 1
                    sig, text = pair.counterexamples[scheme]
                    report.counterexamples.append((sig, scheme, pair.kind, text))
                    if sig not in seen:
                        seen.add(sig)
                        print(f"\nCOUNTEREXAMPLE {sig}\n{text}\n", file=out, flush=True)
                        if findings is not None:
                            _write_finding(findings, sig, text)

    if processes <= 1:
        _init_worker(own_process=False)
        while report.pairs < pairs and index < bases * 3:
            handle(run_base((seed, index, per_base, build_moved)), 0)
            index += 1
    else:
        try:
            with context.Pool(processes, initializer=_init_worker) as pool:
                while report.pairs < pairs and index < bases * 3:
                    more = max(bases - report.bases, processes)
                    batch = [(seed, i, per_base, build_moved) for i in range(index, index + more)]
                    index += len(batch)
                    for result in pool.imap_unordered(_run_base_tagged, batch):
                        handle(result[1:], result[0])
                        if report.pairs >= pairs:
                            break
        except KeyboardInterrupt:  # the report of the pairs done so far
            print("\ninterrupted", file=out)
    report.builds = sum(builds_by_worker.values())
    report.seconds = time.time() - start
    print_report(report, out)
    return report


def _run_base_tagged(args):
    return (os.getpid(),) + run_base(args)


def _write_finding(folder: pathlib.Path, sig: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    scheme, _, name = sig.partition("-")
    path = folder / f"{scheme}-{name[:80]}.md"
    if path.exists():
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"# {sig}\n\nFound by `bench/hash_fuzz.py`.\n\n```python\n{text}\n```\n")
    tmp.rename(path)


def print_report(report: Report, out) -> None:
    print(
        f"\n{report.pairs} pairs from {report.bases} base nets ({len(report.invalid_bases)} base nets discarded: "
        f"RETURNN or the serializer rejects them), {report.builds} RETURNN builds, {report.seconds:.0f} s",
        file=out,
    )
    columns = [
        "pairs",
        "kept",
        "moved",
        "kept, RETURNN same",
        "moved, RETURNN same",
        "invalid",
        "refused",
        "counterexamples",
    ]
    for scheme in ("graph", "dict"):
        print(f"\n{scheme} scheme\n", file=out)
        print("| pair kind | " + " | ".join(columns) + (" | exercised |" if scheme == "graph" else " |"), file=out)
        print("|---" * (len(columns) + 1 + (scheme == "graph")) + "|", file=out)
        for kind in KINDS:
            row = report.table.get((scheme, kind))
            if row is None:
                continue
            cells = [str(row[c]) for c in columns] + ([str(row["exercised"])] if scheme == "graph" else [])
            print(f"| {kind} | " + " | ".join(cells) + " |", file=out)
    total = {s: sum(r["counterexamples"] for (sc, _), r in report.table.items() if sc == s) for s in ("graph", "dict")}
    print(
        f"\ncounterexamples: graph {total['graph']}, dict {total['dict']} "
        f"({len({c[0] for c in report.counterexamples})} kinds)",
        file=out,
    )
    reasons: dict[str, int] = {}
    for _, problem in report.invalid_bases:
        reasons[problem[:90]] = reasons.get(problem[:90], 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda x: -x[1])[:10]:
        print(f"  discarded base nets: {count} x {reason}", file=out)


def recheck(folder: pathlib.Path, out=sys.stdout) -> int:
    """Re-checks each finding written to ``folder`` (its two net dicts) with the hashing code imported now: prints
    whether it still holds; returns how many do."""
    _init_worker(own_process=False)
    names = {name: d for d in _all_dims() for i, name in DIM_NAMES.items() if i == id(d)}
    holding = 0
    for path in sorted(folder.glob("*.md")):
        text = path.read_text()
        found = [re.search(rf"^{side} = (\{{.*?^\}})$", text, re.M | re.S) for side in "ab"]
        if not all(found):
            continue
        a, b = (eval(f.group(1), dict(names)) for f in found)  # the snippet this module wrote
        scheme = "dict" if path.name.startswith("dict-") else "graph"
        lines = counterexample_holds(_JUDGE, scheme, a, b, "staged_networks=" in text)
        holding += lines is not None
        print(f"{path.name}: {'still holds: ' + lines[0] if lines else 'fixed'}", file=out, flush=True)
    return holding


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--per-base", type=int, default=8)
    parser.add_argument("--build-moved", action="store_true", help="also build variants whose hashes both moved")
    parser.add_argument("--findings", type=pathlib.Path, help="write each new kind of counterexample here")
    parser.add_argument("--recheck", type=pathlib.Path, help="only re-check the findings written to this folder")
    args = parser.parse_args(argv)
    if args.recheck is not None:
        return 1 if recheck(args.recheck) else 0
    report = run(args.seed, args.pairs, args.processes, args.per_base, args.build_moved, args.findings)
    return 1 if report.counterexamples else 0


if __name__ == "__main__":
    sys.exit(main())

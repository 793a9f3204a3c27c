"""Random valid net dicts, layer by layer, each layer knowing what it outputs."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional

from returnn.tensor import Dim, batch_dim

from .dims import CLASSES, FEATURES, HALF, IN, SPATIAL, TIME, TWINS, WINDOW
from .nets import Net, _first, _replace_strings

Generator = Callable[["NetGen"], Optional[str]]


ACTIVATIONS = ("relu", "tanh", "sigmoid", "abs", "exp")


COMBINE_KINDS = ("add", "mul", "sub", "maximum", "minimum")


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
    code = (
        f"source(0) + source(1) * self.network.get_layer({other!r}).output.copy_compatible_to(self.output).placeholder"
    )
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
    template = r.randrange(9)
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
            unit[acc]["initial_output"] = r.choice((0.0, 1.0, "zeros", "var"))
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
    elif template == 7:  # two parametrized layers read through prev: (RETURNN builds them in name order)
        out = feat
        other = g.name("lin")
        unit = {
            lin: {"class": "linear", "from": ["data:source", f"prev:{other}"], "out_dim": feat},
            other: {"class": "linear", "from": f"prev:{lin}", "out_dim": feat, "activation": "tanh"},
            "output": {"class": "combine", "kind": "add", "from": [lin, other]},
        }
        if r.random() < 0.5:
            unit[other]["initial_output"] = r.choice(("var", "zeros"))
    elif template == 8:  # a variable in the body, without param_name (its name is the layer's)
        out = feat
        var = g.name("var")
        unit = {
            var: {"class": "variable", "shape": [feat], "init": r.choice(("glorot_uniform", 0.5))},
            acc: {"class": "combine", "kind": "mul", "from": ["data:source", var]},
            "output": {"class": "combine", "kind": "add", "from": [acc, "prev:output"]},
        }
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


# Generators of the constructs below were added after a review found pairs of them that hash alike and run
# differently: what a net can hold beyond plain layers with plain values.


@picks(frames)
def g_masked_computation(g: NetGen, src: str) -> Optional[str]:
    """A masked_computation as returnn_common's ``nn.boolean_mask`` writes it: its unit one layer dict, no ``from``."""
    new = g.fresh_spatial()
    if new is None:
        return None
    feat = g.infos[src].feature
    red = g.add("red", {"class": "reduce", "mode": "sum", "axis": feat, "from": src}, Info((TIME,)))
    zero = g.add("const", {"class": "constant", "value": 0.0}, Info((), batch=False))
    cmp = g.add("cmp", {"class": "compare", "from": [red, zero], "kind": "greater"}, Info((TIME,), dtype="bool"))
    unit: dict[str, Any] = g.rng.choice(
        (
            {"class": "copy", "from": src},
            {"class": "activation", "activation": "tanh", "from": src},
            {"class": "linear", "from": src, "out_dim": feat},
        )
    )
    desc = {"class": "masked_computation", "mask": cmp, "in_spatial_dim": TIME, "out_spatial_dim": new, "unit": unit}
    masked = g.add("masked", desc, Info((new, feat)))
    return g.add("red", {"class": "reduce", "mode": "max", "axis": new, "from": masked}, Info((feat,)))


def g_loop_note(g: NetGen) -> Optional[str]:
    """A loop whose unit holds a ``"#..."`` note entry (RETURNN skips such keys in a net dict)."""
    name = g_loop(g)
    loops = [n for n, d in g.net.items() if d["class"] == "rec" and type(d.get("unit")) is dict]
    if name is None or not loops:
        return None
    unit = g.net[loops[-1]]["unit"]
    layer = next(n for n in unit if n != "output")
    unit[g.rng.choice(("#note", "#comment", "#layer"))] = g.rng.choice(
        ({"class": "copy", "from": layer}, {"from": layer, "info": 1}, {"class": "copy", "from": "prev:output"})
    )
    return name


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_eval_wrapper(g: NetGen, a: str) -> Optional[str]:
    """Eval code as a CodeWrapper (written as it is), naming a layer."""
    from i6_core.returnn.config import CodeWrapper

    other = g.pick(lambda i: i == g.infos[a], False)
    code = (
        f"source(0) + source(1) * self.network.get_layer({other!r}).output.copy_compatible_to(self.output).placeholder"
    )
    return g.add("ev", {"class": "eval", "from": [a, other], "eval": CodeWrapper(repr(code))}, g.infos[a])


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_eval_function(g: NetGen, a: str) -> Optional[str]:
    """A Python function as eval (imported by the config) that reads a layer by a fixed name."""
    from . import code_options

    if code_options.KEYED in g.net:
        return None
    other = g.pick(lambda i: i == g.infos[a], False)
    g.net[code_options.KEYED] = {"class": "copy", "from": other}
    g.infos[code_options.KEYED] = g.infos[other]
    function = g.rng.choice((code_options.plus_keyed, code_options.times_keyed))
    return g.add("ev", {"class": "eval", "from": [a, code_options.KEYED], "eval": function}, g.infos[a])


@picks(lambda i: frames(i) and i.feature is not CLASSES)
def g_default_target(g: NetGen, src: str) -> Optional[str]:
    """A loss without ``target`` (RETURNN's default, "classes") while a layer named ``classes`` exists."""
    if "classes" not in g.net:
        g.net["classes"] = g.rng.choice(
            (
                {"class": "copy", "from": "data:classes"},
                {"class": "eval", "from": "data:classes", "eval": "tf.zeros_like(source(0))"},
            )
        )
    desc: dict[str, Any] = {"class": "softmax", "from": src, "out_dim": CLASSES, "loss": "ce"}
    return g.add("sm", desc, Info((TIME, CLASSES)))


def g_subnetwork_no_from(g: NetGen) -> Optional[str]:
    """A subnetwork without ``from``: it reads extern data, its ``data`` (RETURNN wants ``from`` in every other
    layer)."""
    if g.depth >= 2:
        return None
    r = g.rng
    sub = NetGen(r, g.counter, g.spatial, g.depth + 1)
    sub.infos["data"] = Info((TIME, IN))
    for _ in range(r.randint(1, 3)):
        r.choice((g_linear, g_activation, g_eval, g_copy, g_layer_norm))(sub)
    last = list(sub.infos)[-1]
    sub.net["output"] = {"class": "copy", "from": last}
    return g.add("sub", {"class": "subnetwork", "subnetwork": sub.net}, sub.infos[last])


@picks(frames)
def g_described_axis(g: NetGen, src: str) -> Optional[str]:
    """Axis strings that read a description RETURNN makes from a layer's name: ``"stag:<layer>:window"`` of a window
    without window_dim, ``"stag:<layer>:range"`` of a range layer."""
    info = g.infos[src]
    if g.rng.random() < 0.5:
        win = g.name("win")
        g.net[win] = {"class": "window", "from": src, "window_size": 3, "axis": TIME}
        g.infos[win] = info
        desc = {"class": "reduce", "mode": g.rng.choice(("max", "mean")), "axis": f"stag:{win}:window", "from": win}
        return g.add("red", desc, info)
    rng_layer = g.name("range")
    g.net[rng_layer] = {"class": "range", "limit": g.rng.choice((3, 4)), "dtype": "float32"}
    g.infos[rng_layer] = Info((), batch=False)
    red = g.add(
        "red", {"class": "reduce", "mode": "sum", "axis": f"stag:{rng_layer}:range", "from": rng_layer}, Info((), False)
    )
    return g.add("comb", {"class": "combine", "kind": "mul", "from": [src, red]}, info)


@picks(frames)
def g_axis_in_code(g: NetGen, src: str) -> Optional[str]:
    """Eval code with an axis string inside it (not at its start), read by RETURNN when the code runs."""
    info = g.infos[src]
    axis = g.rng.choice(("stag:time", "T", "F", "dim:3" if WINDOW in info.dims else "t"))
    code = (
        "source(0) + tf.reduce_mean(source(0), "
        f"axis=source(0, as_data=True).get_axis_from_description({axis!r}), keepdims=True)"
    )
    return g.add("ev", {"class": "eval", "from": src, "eval": code}, info)


@picks(frames)
def g_broadcast_out_shape(g: NetGen, src: str) -> Optional[str]:
    """A combine of sources none of which has all dims, which ``out_shape`` allows (broadcasting all sources)."""
    feat = g.infos[src].feature
    red = g.add("red", {"class": "reduce", "mode": "mean", "axis": feat, "from": src}, Info((TIME,)))
    var = g.add("var", {"class": "variable", "shape": [feat], "init": "glorot_uniform"}, Info((feat,), batch=False))
    desc = {
        "class": "combine",
        "kind": g.rng.choice(("add", "mul")),
        "from": [red, var],
        "out_shape": {batch_dim, TIME, feat},
    }
    return g.add("comb", desc, Info((TIME, feat)))


@picks(lambda i: i.batch and i.dtype == "float32" and i.dims)
def g_huge_constant(g: NetGen, user: str) -> Optional[str]:
    """An int constant too large for float32 to hold exactly, with a float dtype."""
    value = g.rng.choice((2**24 + 1, 2**24 + 3, 2**53 + 1, 10**40, -(2**31) - 1))
    const = g.add("const", {"class": "constant", "value": value, "dtype": "float32"}, Info((), batch=False))
    # what float32 lost of the value shows, in float32, where it is added
    code = "tf.cast(source(0) - tf.cast(16777216, source(0).dtype), tf.float32) * 1e-6"
    desc = {"class": "eval", "from": const, "eval": code, "out_type": {"dtype": "float32"}}
    scaled = g.add("ev", desc, Info((), batch=False))
    return g.add("comb", {"class": "combine", "kind": "add", "from": [user, scaled]}, g.infos[user])


@picks(seq_float)
def g_dim_wrapper(g: NetGen, src: str) -> Optional[str]:
    """A CodeWrapper naming the variable the written config defines for a dim (``f4_dim``)."""
    from i6_core.returnn.config import CodeWrapper

    feat = g.infos[src].feature
    if feat not in set(FEATURES.values()) | {IN}:
        return None
    desc = {"class": "linear", "from": src, "out_dim": CodeWrapper(f"{feat.description}_dim")}
    return g.add("lin", desc, Info((g.infos[src].dims[0], feat)))


@picks(frames)
def g_scope_local_names(g: NetGen, src: str) -> Optional[str]:
    """A layer that describes a dim by its name and one of the same local name in a namespace subnetwork, combined:
    RETURNN takes generated dims of one description for one dim, so the local name alone decides whether the two
    line up (edit "edit-local-name" renames the inner one). Windows (``"<name>:window"``, static: any two of a size
    line up in a combine) or range_from_length layers (``"<name>_input_len"``, dynamic)."""
    info = g.infos[src]
    if g.rng.random() < 0.5:
        win = g.name("win")
        window = {"class": "window", "from": src, "window_size": 3, "axis": TIME}
        g.net[win] = window
        inner = {win: {**window, "from": "data"}, "output": {"class": "copy", "from": win}}
        block, both = g.name("block"), g.name("comb")  # not for other layers to read: their dims are not in Info
        g.net[block] = {"class": "subnetwork", "from": src, "subnetwork": inner}
        g.net[both] = {"class": "combine", "kind": "add", "from": [win, block]}
        return g.add("red", {"class": "reduce", "mode": "max", "axis": f"stag:{win}:window", "from": both}, info)
    length = g.add("len", {"class": "length", "from": src, "axis": TIME}, Info((), dtype="int32"))
    double = g.add("comb", {"class": "combine", "kind": "add", "from": [length, length]}, g.infos[length])
    positions = g.name("rfl")
    g.net[positions] = {"class": "range_from_length", "from": double}
    inner = {  # a length of its own: the root's is tagged with the root layer's dim already
        double: {"class": "combine", "kind": "add", "from": [f"base:{length}", f"base:{length}"]},
        positions: {"class": "range_from_length", "from": double},
        "output": {"class": "copy", "from": positions},
    }
    block = g.name("block")
    g.net[block] = {"class": "subnetwork", "from": src, "subnetwork": inner}
    both = g.name("comb")
    g.net[both] = {
        "class": "combine",
        "kind": "add",
        "from": [positions, block, length],
        "allow_broadcast_all_sources": True,
    }
    cast = g.name("cast")
    g.net[cast] = {"class": "cast", "from": both, "dtype": "float32"}
    red = g.add(
        "red", {"class": "reduce", "mode": "max", "axis": f"stag:{positions}_input_len", "from": cast}, Info(())
    )
    return g.add("comb", {"class": "combine", "kind": "mul", "from": [src, red]}, info)


@picks(frames)
def g_dim_tags_key(g: NetGen, src: str) -> Optional[str]:
    """``set_dim_tags`` keyed by an axis string that names a window layer (``"stag:<layer>:window"``): a key that is a
    layer's name."""
    info = g.infos[src]
    win = g.name("win")
    g.net[win] = {"class": "window", "from": src, "window_size": 3, "axis": TIME}
    tagged = g.name("tags")
    g.net[tagged] = {"class": "reinterpret_data", "from": win, "set_dim_tags": {f"stag:{win}:window": WINDOW}}
    return g.add(
        "red", {"class": "reduce", "mode": g.rng.choice(("max", "mean")), "axis": WINDOW, "from": tagged}, info
    )


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_eval_variable(g: NetGen, a: str) -> Optional[str]:
    """Eval code that makes a TF variable, named after the eval layer (``<layer>/w``)."""
    init = g.rng.choice(("zeros", "ones"))
    code = f"source(0) + tf.compat.v1.get_variable('w', shape=(), initializer=tf.compat.v1.{init}_initializer())"
    return g.add("ev", {"class": "eval", "from": a, "eval": code}, g.infos[a])


@picks(lambda i: i.dtype == "float32" and i.batch)
def g_eval_computed_name(g: NetGen, a: str) -> Optional[str]:
    """Eval code that computes the name of the layer it reads (no whole word of it is in the code)."""
    other = g.pick(lambda i: i == g.infos[a], False)
    if other is None or other == "data":
        other = g.add("cp", {"class": "copy", "from": a}, g.infos[a])
    cut = g.rng.randrange(1, len(other))
    named = f"self.network.get_layer({other[:cut]!r} + {other[cut:]!r})"
    code = f"source(0) + source(1) * {named}.output.copy_compatible_to(self.output).placeholder"
    return g.add("ev", {"class": "eval", "from": [a, other], "eval": code}, g.infos[a])


@picks(frames)
def g_float64_scalar(g: NetGen, src: str) -> Optional[str]:
    """A scalar operation of a float64 layer (rule "scalar-operands" holds for float32 only), cast back."""
    wide = g.add("cast", {"class": "cast", "from": src, "dtype": "float64"}, Info(g.infos[src].dims, dtype="float64"))
    scaled = g.add("ev", {"class": "eval", "from": wide, "eval": g.rng.choice(EVAL_CODES[:5])}, g.infos[wide])
    return g.add("cast", {"class": "cast", "from": scaled, "dtype": "float32"}, g.infos[src])


def _by_kind(*generators: Generator) -> dict[str, Generator]:
    """Generators by their kind: the name without ``g_``."""
    return {fn.__name__[2:]: fn for fn in generators}


GENERATORS = _by_kind(
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
WIDE_GENERATORS = _by_kind(
    g_masked_computation,
    g_loop_note,
    g_eval_wrapper,
    g_eval_function,
    g_default_target,
    g_subnetwork_no_from,
    g_described_axis,
    g_axis_in_code,
    g_broadcast_out_shape,
    g_huge_constant,
    g_dim_wrapper,
    g_scope_local_names,
    g_dim_tags_key,
    g_eval_variable,
    g_eval_computed_name,
    g_float64_scalar,
)
"""Generators of what a review found the others never make (their kinds are counted in the report)."""


def generate(rng: random.Random, first: Optional[str] = None) -> tuple[Net, list[str]]:
    """A random net dict: 2 to 7 generated layers (or groups of layers) over data and classes, an output and maybe
    losses; and the kinds of the generators that added to it. ``first``: a generator's kind that adds first."""
    g = NetGen(rng, [0], list(SPATIAL))
    g.infos["data"] = Info((TIME, IN))
    kinds = []
    everything = {**GENERATORS, **WIDE_GENERATORS}
    if first is not None and everything[first](g) is not None:
        kinds.append(first)
    for _ in range(rng.randint(2, 7)):
        kind = rng.choice(list(everything))
        if everything[kind](g) is not None:
            kinds.append(kind)
    for special, p in ((g_loop, 0.3), (g_mse_loss, 0.25), (g_eval_named, 0.2), (g_eval, 0.3)):
        if rng.random() < p and special(g) is not None:  # constructs some rules and edits need, more often
            kinds.append(special.__name__[2:])
    if rng.random() < 0.3 and g_softmax(g) is not None:
        kinds.append("softmax")
    final = g.pick(lambda i: i.batch and i.dtype == "float32" and i.dims)
    g.net["output"] = {"class": "copy", "from": final or "data"}
    if rng.random() < 0.15:
        extra = g.pick(lambda i: i.batch and i.dtype == "float32")
        if extra is not None and extra not in (final, "data"):
            g.net[extra]["is_output_layer"] = True
    return g.net, kinds

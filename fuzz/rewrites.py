"""What makes a pair of a base net: rewrites a graph rule or the dict scheme claims inert, and small edits."""

from __future__ import annotations

import bisect
import copy
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from returnn.tensor import Dim, batch_dim

from .corpora import Entry
from .dims import EXTERN_DATA, COPIES, FEATURES, RENAMED, TIME, TWINS, _all_dims, py
from .generators import ACTIVATIONS, COMBINE_KINDS, EVAL_CODES, WIDE_GENERATORS, generate
from .nets import (
    KEPT_NAMES,
    Net,
    Where,
    _all_strings,
    _contains_dim,
    _first,
    _fresh,
    _map_dims,
    _renamable,
    layers_of,
    references_to,
    rename,
)


def _out_dims(w: Where) -> Optional[set]:
    """The output dims of a generated layer where the generator says them cheaply (for out_shape), else None."""
    desc = w.desc
    cls, out_dim = desc["class"], desc.get("out_dim")
    if not isinstance(out_dim, Dim):  # a corpus net's layer may say its size by n_out
        return None
    if cls in ("linear", "softmax") and type(desc.get("from")) is str and desc["from"] == "data":
        return {batch_dim, TIME, out_dim}
    if cls == "rec" and type(desc.get("unit")) is str:
        return {batch_dim, TIME, out_dim}
    return None


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


def corpus_base(entry: Entry, rng: random.Random) -> tuple[dict, dict]:
    """(extern_data, network) of a corpus config, as RETURNN loads it, with up to three layers renamed."""
    from i6_rc_jobs._verify.semantics import load_config  # (RETURNN's config: loaded only when a corpus is drawn)

    config = load_config(entry.code)
    extern_data: dict[str, Any] = config.typed_value("extern_data")
    network: dict[str, Any] = config.typed_value("network")
    for _ in range(rng.randint(0, 3)):
        rw_rename(network, rng, in_loop=rng.random() < 0.3)
    return extern_data, network


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
    from i6_rc_jobs._hashing.graph_rules import PARAMETER_FREE_CLASSES

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
    from i6_rc_jobs._hashing.graph_spellings import scalar_eval

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


def rw_subnetwork_output(net: Net, rng: random.Random) -> bool:
    """A root subnetwork read by a root layer as a whole in its "from" read instead by the path of the layer its
    "output" copies ("block" as "block/ff"), or such a path read as the whole subnetwork; by any reader, so that the
    readers and subnetworks the rule denies are drawn too."""
    root = [w for w in layers_of(net) if w.kind == "root"]
    swaps = {}  # a root subnetwork's name <-> the path of the layer in it that its output copies
    for w in root:
        body = w.desc.get("subnetwork") if w.desc["class"] == "subnetwork" else None
        output = body.get("output") if type(body) is dict else None
        source = output.get("from") if type(output) is dict and output.get("class") == "copy" else None
        if type(source) is str and source in body:
            swaps[w.name], swaps[f"{w.name}/{source}"] = f"{w.name}/{source}", w.name
    cands = []
    for w in root:
        sources = w.desc.get("from")
        items = [sources] if type(sources) is str else sources if type(sources) in (list, tuple) else ()
        cands += [(w, i) for i, item in enumerate(items) if type(item) is str and item in swaps]
    if not cands:
        return False
    w, i = rng.choice(cands)
    sources = w.desc["from"]
    if type(sources) is str:
        w.desc["from"] = swaps[sources]
    else:
        w.desc["from"] = type(sources)(swaps[item] if j == i else item for j, item in enumerate(sources))
    return True


def rw_empty_shape_deps(net: Net, rng: random.Random) -> bool:
    """An empty shape_deps ([] or ()) on a constant or random layer that has none."""
    cands = [w for w in layers_of(net) if w.desc["class"] in ("constant", "random") and "shape_deps" not in w.desc]
    if not cands:
        return False
    rng.choice(cands).desc["shape_deps"] = rng.choice(([], ()))
    return True


def _read_data(net: Net) -> list[str]:
    """The spellings of the extern data that a root layer reads as a source (data nothing reads as a source would be
    new to the network: the engine feeds it)."""
    read = set()
    for w in layers_of(net):
        sources = w.desc.get("from", "data")
        for source in [sources] if type(sources) is str else sources if type(sources) in (list, tuple) else ():
            if w.kind == "root" and type(source) is str and (source == "data" or source.startswith("data:")):
                read.add(source)
    keys = {"data" if name in ("data", "data:data") else name[len("data:") :] for name in read}
    return [name for name in ("data", "data:data", "data:classes") if (name.rpartition(":")[2] or "data") in keys]


def _constants_outside_loops(net: Net) -> list[Where]:
    in_loops = {w.path + "/" for w in layers_of(net) if type(w.desc.get("unit")) is dict}
    return [
        w
        for w in layers_of(net)
        if w.desc["class"] in ("constant", "random") and not any(w.path.startswith(loop) for loop in in_loops)
    ]


def rw_extern_shape_deps(net: Net, rng: random.Random) -> bool:
    """Extern data that a layer reads as a source ("data", "data:data", "data:classes") added to the shape_deps of a
    constant or random layer outside loops, which spells them as a str, a list or a tuple."""
    cands, read = _constants_outside_loops(net), _read_data(net)
    if not cands or not read:
        return False
    w = rng.choice(cands)
    deps = w.desc.get("shape_deps", [])
    deps = [deps] if type(deps) is str else list(deps)
    deps.insert(rng.randrange(len(deps) + 1), rng.choice(read))
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
    "subnetwork-output": rw_subnetwork_output,
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


def rw_dim_description(net: Net, rng: random.Random) -> bool:
    """A dim replaced everywhere by one that differs only by its description."""
    n = rng.choice(list(RENAMED))
    if not _contains_dim(net, FEATURES[n]):
        return False
    _map_dims(net, lambda d: RENAMED[n] if d is FEATURES[n] else d)
    return True


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


def ed_note(net: Net, rng: random.Random) -> bool:
    """A ``"#..."`` note entry of a loop unit that reads another layer, or is gone."""
    units = [w.desc["unit"] for w in layers_of(net) if w.desc["class"] == "rec" and type(w.desc.get("unit")) is dict]
    cands = [(unit, key) for unit in units for key in unit if key.startswith("#")]
    if not cands:
        return False
    unit, key = rng.choice(cands)
    others = [name for name in unit if not name.startswith("#") and name != "output"] + ["data:source"]
    if rng.random() < 0.3 or type(unit[key]) is not dict:
        del unit[key]
    else:
        unit[key] = {**unit[key], "from": rng.choice(others)}
    return True


def ed_classes_layer(net: Net, rng: random.Random) -> bool:
    """The layer named ``classes`` (which a loss without target may read) computes something else."""
    desc = net.get("classes")
    if type(desc) is not dict:
        return False
    if desc["class"] == "copy":
        net["classes"] = {"class": "eval", "from": "data:classes", "eval": "tf.zeros_like(source(0))"}
    else:
        net["classes"] = {"class": "copy", "from": "data:classes"}
    return True


def ed_out_shape(net: Net, rng: random.Random) -> bool:
    """``out_shape`` left out, or with the batch dim left out of it."""
    cands = [w for w in layers_of(net) if type(w.desc.get("out_shape")) is set]
    if not cands:
        return False
    w = rng.choice(cands)
    if rng.random() < 0.5:
        del w.desc["out_shape"]
    else:
        w.desc["out_shape"] = {d for d in w.desc["out_shape"] if d is not batch_dim}
    return True


def ed_constant_dtype(net: Net, rng: random.Random) -> bool:
    """A constant of another float dtype (an int too large for float32 is exact in float64, or not either)."""
    cands = [w.desc for w in layers_of(net) if w.desc["class"] == "constant" and type(w.desc.get("value")) is int]
    if cands:
        desc = rng.choice(cands)
        desc["dtype"] = "float64" if desc.get("dtype", "float32") == "float32" else "float32"
    return bool(cands)


def ed_unread_data(net: Net, rng: random.Random) -> bool:
    """Extern data that no layer reads as a source ("data:classes") added to the shape_deps of a constant or random
    layer: the network now uses that data (the engine feeds and batches by it)."""
    cands = _constants_outside_loops(net)
    if not cands or "data:classes" in _read_data(net):
        return False
    w = rng.choice(cands)
    deps = w.desc.get("shape_deps", [])
    w.desc["shape_deps"] = [*([deps] if type(deps) is str else deps), "data:classes"]
    return True


def ed_falsy_dtype(net: Net, rng: random.Random) -> bool:
    """A constant without dtype given a falsy one ("" or False), which RETURNN does not take for None."""
    cands = [w.desc for w in layers_of(net) if w.desc["class"] == "constant" and w.desc.get("dtype") is None]
    if cands:
        rng.choice(cands)["dtype"] = rng.choice(("", False))
    return bool(cands)


def ed_local_name(net: Net, rng: random.Random) -> bool:
    """A layer of a subnetwork renamed in it only, where a layer outside it has its name (its local name may describe
    a dim that lines up with that layer's)."""
    outside = {w.name for w in layers_of(net) if w.kind == "root"}
    cands = [w for w in layers_of(net) if w.kind == "sub" and _renamable(w) and w.name in outside]
    if not cands:
        return False
    w = rng.choice(cands)
    rename(w.container, w.name, _fresh(net, "local"))
    return True


EDITS: dict[str, Callable[[Net, random.Random], bool]] = {
    "edit-unread-data": ed_unread_data,
    "edit-falsy-dtype": ed_falsy_dtype,
    "edit-local-name": ed_local_name,
    "edit-note": ed_note,
    "edit-classes-layer": ed_classes_layer,
    "edit-out-shape": ed_out_shape,
    "edit-constant-dtype": ed_constant_dtype,
    "edit-swap-names": ed_swap_names,
    "edit-input": ed_input,
    "edit-option": ed_option,
    "edit-add-option": ed_add_option,
    "edit-class": ed_class,
    "edit-name": ed_name,
    "edit-dim": ed_dim,
    "edit-target-layer": ed_target,
}


def make_variant(base: Any, staged: bool, kind: str, rng: random.Random) -> Optional[Any]:
    variant = copy.deepcopy(base, {id(d): d for d in _all_dims()})
    fn = RULE_REWRITES.get(kind) or DICT_REWRITES.get(kind) or EDITS[kind]
    target = variant[rng.choice(sorted(variant))] if staged else variant
    applied = fn(target, rng)
    if not applied or py(variant) == py(base):
        return None
    return variant


KINDS = list(RULE_REWRITES) + list(DICT_REWRITES) + list(EDITS)


@dataclass
class Base:
    """A base net of pairs: a net dict (or start epoch -> net dict), its extern data, and where it comes from: the
    kinds of the generators that made it, or the test (of returnn_common or RETURNN) whose model it is."""

    net: Any
    staged: bool
    extern_data: dict = field(default_factory=lambda: EXTERN_DATA)
    kinds: list[str] = field(default_factory=list)
    source: str = "generated"


def make_base(
    seed: int, index: int, corpus: Optional[Mapping[str, Sequence[Entry]]] = None, corpus_share: float = 0.0
) -> Base:
    """Base net ``index`` of ``seed``: generated, or with probability ``corpus_share`` one of the ``corpus`` of test
    suites' models by suite (:mod:`fuzz.corpora`; a suite drawn first, then one of its models), renamed at random.
    The first bases of a run start with one generator of :data:`~fuzz.generators.WIDE_GENERATORS` each, so that a
    short run has each, and so does every third base after them, in turn."""
    rng = random.Random(f"{seed}:{index}")
    wide = list(WIDE_GENERATORS)
    if corpus and index >= len(wide) and rng.random() < corpus_share:
        of_suite = corpus[rng.choice(sorted(corpus))]
        entry = of_suite[rng.randrange(len(of_suite))]
        extern_data, network = corpus_base(entry, rng)
        return Base(network, False, extern_data, [entry.suite], f"{entry.suite} {entry.test}")
    first = wide[index % len(wide)] if index < len(wide) or index % 3 == 0 else None
    net, kinds = generate(rng, first)
    # staged: a second stage grown from the first; not for the first bases, so that each wide generator's construct
    # is judged in a net of one stage, which a second cannot spoil
    if index >= len(wide) and rng.random() < 0.12:
        second = copy.deepcopy(net)
        rng.choice((rw_unreached, ed_add_option, ed_option))(second, rng)
        return Base({1: net, rng.choice((3, 5)): second}, True, kinds=kinds)
    return Base(net, False, kinds=kinds)

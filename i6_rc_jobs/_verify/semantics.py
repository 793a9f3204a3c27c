"""
Judge with real RETURNN (TF backend, graph mode) whether two written configs define the same model.

A config's network (each stage of staged networks) is built with ``train_flag=False`` in a fresh graph and reduced to a :class:`Fingerprint`: the TF
variables (names and shapes), the initializer of each as TF sees it (the subgraph of its initial value, without
names and random seeds), and the default output on a fixed input with every variable set from a random generator
seeded by its TF name. Two configs define the same model iff their fingerprints have no differences. Names of layers
that do not name variables, the order in which RETURNN constructs layers (and draws their seeds) and the axis order
do not count.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy

if TYPE_CHECKING:
    import tensorflow as tf
    from returnn.config import Config
    from returnn.tensor import Tensor
    from returnn.tf.network import ExternData, TFNetwork

__all__ = [
    "Fingerprint",
    "fingerprint",
    "fingerprints",
    "differences",
    "network_fingerprint",
    "same_model",
    "load_config",
    "config_networks",
]

DEFAULT_BEHAVIOR_VERSION = 16
"""For configs that set none: returnn_common's ``min_returnn_behavior_version``, which the configs it writes set."""

BATCH_SIZE = 2
SEQ_LENGTHS = ((13, 9), (11, 7), (10, 12), (8, 6))
"""Lengths of the dynamic dims of extern_data, in the order they first occur (keys sorted), cycled. Different per dim,
so that a model that mixes up two of them computes something else; long enough for a few downsamplings by 2."""

PARAM_SCALE = 0.1
RTOL, ATOL = 1e-5, 1e-6

_SEED_INPUTS = frozenset({"seed", "key", "counter"})
"""Inputs of TF's random ops that carry the seed (``StatelessRandom*``: ``seed``; ``*V2``: ``key``, ``counter``)."""
_SEED_ATTRS = frozenset({"seed", "seed2"})
"""Attributes of TF's stateful random ops that carry the seed."""
_IGNORED_ATTRS = _SEED_ATTRS | {"_class"}
"""Seeds, and colocation (``loc:@<op name>``)."""
_INLINE_CONSTANT_SIZE = 16
"""Constants up to this many elements are written out in the init text, larger ones as a hash of their bytes."""


@dataclass(frozen=True, eq=False)
class Fingerprint:
    """What makes a model the model; compare with :meth:`differences` (``==`` is identity: ``output`` is an array)."""

    params: dict[str, tuple[int, ...]]
    """TF variable name (without ``:0``) -> shape"""
    init: dict[str, str]
    """TF variable name -> canonical text of the subgraph of its initial value (see :func:`_init_text`), or for a
    constant initial value that value (``constant float32[64] all 1.0``)"""
    output: numpy.ndarray
    """The default output on the fixed input, axes in canonical order, padding frames zero"""
    output_dims: tuple[str, ...]
    """One entry per axis of ``output``: ``B``, ``T[lengths]`` (dynamic), ``F<size>`` (the feature axis),
    ``S<size>`` (other static); then ``sparse<size>`` if the output is sparse"""
    losses: dict[str, float]
    """The losses RETURNN reports, by score key (the name it writes them under, e.g. in learning_rates), each as it
    goes into the objective (scaled) on the fixed input"""
    data_keys: tuple[str, ...] = ()
    """The extern data the network uses (``get_used_data_keys``), sorted: the engine feeds and batches by them"""

    def differences(self, other: Fingerprint, losses: bool = True) -> list[str]:
        """[] iff both are the same model; else one line per difference, params first. With ``losses=False``, the
        model alone (parameters, initialization, output): what makes two models semantically the same; with losses, also
        what RETURNN reports and feeds while training (score keys and loss values, the data keys it uses)."""
        lines = []
        for name in sorted(self.params.keys() | other.params.keys()):
            if name not in other.params:
                lines.append(f"param {name} {self.params[name]}: only in the first")
            elif name not in self.params:
                lines.append(f"param {name} {other.params[name]}: only in the second")
            elif self.params[name] != other.params[name]:
                lines.append(f"param {name}: shape {self.params[name]} != {other.params[name]}")
            elif self.init[name] != other.init[name]:
                ours, theirs = _first_difference(self.init[name].splitlines(), other.init[name].splitlines())
                lines.append(f"param {name}: init differs: {ours!r} != {theirs!r}")
        if self.output_dims != other.output_dims:
            lines.append(f"output dims {self.output_dims} != {other.output_dims}")
        elif self.output.dtype != other.output.dtype:
            lines.append(f"output dtype {self.output.dtype} != {other.output.dtype}")
        elif self.output.dtype.kind != "f":
            if not numpy.array_equal(self.output, other.output):
                lines.append(f"output differs at {numpy.count_nonzero(self.output != other.output)} positions")
        elif not numpy.allclose(self.output, other.output, rtol=RTOL, atol=ATOL, equal_nan=True):
            diff = numpy.nanmax(numpy.abs(self.output.astype(numpy.float64) - other.output))
            lines.append(f"output differs: max abs diff {diff:.6g}")
        if losses and self.data_keys != other.data_keys:
            lines.append(f"data keys {list(self.data_keys)} != {list(other.data_keys)}")
        if losses and self.losses.keys() != other.losses.keys():
            lines.append(f"losses {sorted(self.losses)} != {sorted(other.losses)}")
        elif losses:
            for name in sorted(self.losses):
                loss, other_loss = self.losses[name], other.losses[name]
                if not numpy.isclose(loss, other_loss, rtol=RTOL, atol=ATOL, equal_nan=True):
                    lines.append(f"loss {name} differs: {loss:.6g} != {other_loss:.6g}")
        return lines


def fingerprint(config_code: str, *, seed: int = 1) -> Fingerprint:
    """
    Builds the network of ``config_code`` (a whole config.py as the serializer writes it) with RETURNN, sets its
    variables and input from ``seed``, and runs its default output.
    """
    config = load_config(config_code)
    return _built_fingerprint(config, config.typed_value("network"), seed)


def fingerprints(config_code: str, *, seed: int = 1) -> dict[str, Fingerprint]:
    """The :func:`fingerprint` of each network of a config: ``{"network": ...}``, or for staged networks
    (``get_network(epoch)``) one per stage, ``"stage from epoch N"``, N the start epochs of its ``if epoch >= N:``
    (as the serializer writes them), each stage built in its own graph."""
    config = load_config(config_code)
    nets = config_networks(config_code, config)
    return {name: _built_fingerprint(config, net, seed) for name, net in nets.items()}


def differences(ours: dict[str, Fingerprint], theirs: dict[str, Fingerprint], losses: bool = True) -> list[str]:
    """:meth:`Fingerprint.differences` of two configs' :func:`fingerprints`, stage by stage (each line after the
    stage's name); [] iff the same model."""
    if ours.keys() != theirs.keys():
        return [f"networks {list(ours)} != {list(theirs)}"]
    return [
        line if name == "network" else f"{name}: {line}"
        for name, prints in ours.items()
        for line in prints.differences(theirs[name], losses=losses)
    ]


def config_networks(config_code: str, config: Config) -> dict[str, Any]:
    """The net dicts of a config by name (see :func:`fingerprints`)."""
    if config.typed_value("network") is not None:
        return {"network": config.typed_value("network")}
    get_network = config.typed_value("get_network")
    if get_network is None:
        raise ValueError("the config defines neither network nor get_network")
    starts = sorted(
        node.comparators[0].value
        for function in ast.walk(ast.parse(config_code))
        if isinstance(function, ast.FunctionDef) and function.name == "get_network"
        for node in ast.walk(function)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == "epoch"
        and isinstance(node.ops[0], ast.GtE)
        and isinstance(node.comparators[0], ast.Constant)
        and type(node.comparators[0].value) is int
    )
    if not starts:
        raise ValueError(
            "get_network has no 'if epoch >= N:', so its stages are unknown (write it as the serializer does)"
        )
    return {f"stage from epoch {start}": get_network(epoch=start) for start in starts}


def _built_fingerprint(config: Config, network: Any, seed: int) -> Fingerprint:
    """The fingerprint of one net dict of ``config``, built in a new graph."""
    from i6_rc_jobs._verify.returnn_check import network_in_new_graph

    with network_in_new_graph(config, network, train_flag=False) as network:
        return network_fingerprint(network, seed=seed)


def network_fingerprint(network: TFNetwork, *, seed: int = 1, feed: dict | None = None) -> Fingerprint:
    """The :class:`Fingerprint` of a network constructed in the default graph; ``feed`` adds to what is fed (e.g.
    a dynamic train flag)."""
    import tensorflow as tf

    variables = {_variable_name(var): var for var in tf.compat.v1.global_variables()}
    inits = {name: _init_text(var.initial_value) for name, var in variables.items()}
    output = _canonical_axes(network.get_default_output_layer().output.copy_as_batch_major())
    masks = [output.get_sequence_mask_broadcast(axis=i) for i in _dynamic_axes(output)]
    lengths = [output.dims[i].dyn_size_ext.placeholder for i in _dynamic_axes(output)]
    losses = {
        name: value
        for name, holder in network.get_losses_initialized()[0].items()
        if (value := holder.get_loss_value_for_objective()) is not None
    }
    init = {}
    with tf.compat.v1.Session() as session:
        constants = {name: var.initial_value for name, var in variables.items() if inits[name][1]}
        bases = session.run(constants) if constants else {}
        for name in variables:
            base = bases.get(name)
            # A constant is its value, however TF spells it (tf.zeros(shape) is a Fill, 0.0 a Const).
            init[name] = inits[name][0] if base is None else f"constant {_array_text(numpy.asarray(base))}"
        if variables:  # what tf.Variable.load does (deprecated): run the initializers with the values fed in
            session.run(
                [var.initializer for var in variables.values()],
                {
                    var.initializer.inputs[1]: _param_value(name, var, bases.get(name), seed)
                    for name, var in variables.items()
                },
            )
        value, mask_values, length_values, loss_values = session.run(
            (output.placeholder, masks, lengths, losses),
            feed_dict={**_extern_data_feed(network.extern_data, seed), **(feed or {})},
        )
    for mask in mask_values:
        value = numpy.where(mask, value, numpy.zeros((), value.dtype))
    return Fingerprint(
        params={name: tuple(var.shape.as_list()) for name, var in variables.items()},
        init=init,
        output=value,
        output_dims=_describe_axes(output, iter(length_values)),
        losses={name: float(value) for name, value in loss_values.items()},
        data_keys=tuple(sorted(network.get_used_data_keys())),
    )


def same_model(code_a: str, code_b: str) -> list[str]:
    """The differences of the models of two configs (stage by stage), each built in its own graph; [] iff the same
    model."""
    return differences(fingerprints(code_a), fingerprints(code_b))


@contextlib.contextmanager
def pinned_code_forgotten() -> Iterator[None]:
    """Afterwards, the modules that configs loaded meanwhile imported from pinned model code (``by_content``) are
    forgotten, and their finders gone: the next config loaded in this process imports its own pinned code, not the
    modules of the same names that the first one pinned."""
    finders = list(sys.meta_path)
    try:
        yield
    finally:
        for finder in sys.meta_path:
            if finder not in finders:
                for name in getattr(finder, "pinned", ()):
                    sys.modules.pop(name, None)
        sys.meta_path[:] = finders


def load_config(config_code: str) -> Config:
    """The config as RETURNN loads it (a file that starts with ``#!`` is Python), with a behavior version."""
    from returnn.config import Config

    config = Config()
    config.load_file(io.StringIO("#!rnn.py\n" + config_code))
    config.typed_dict.setdefault("behavior_version", DEFAULT_BEHAVIOR_VERSION)
    return config


def _variable_name(var: tf.Variable) -> str:
    return var.name.rpartition(":")[0]


def stable_int(text: str) -> int:
    """A number from ``text`` that is the same in every process (``hash()`` of a str is not)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _param_value(name: str, var: tf.Variable, base: numpy.ndarray | None, seed: int) -> numpy.ndarray:
    """
    Noise of scale :data:`PARAM_SCALE` from a generator seeded by the variable's name, added to its initial value if
    that is deterministic (a constant, such as the ones of a layer-norm scale or the variance of a batch norm, which
    would be invalid below 0) and to 0 if it is random. Other variables (integer) get no noise.
    """
    dtype = var.dtype.base_dtype.as_numpy_dtype
    shape = tuple(var.shape.as_list())
    value = numpy.zeros(shape, dtype) if base is None else numpy.asarray(base, dtype)
    if numpy.issubdtype(dtype, numpy.floating):
        rng = numpy.random.default_rng([seed, stable_int(name)])
        value = (value + PARAM_SCALE * rng.standard_normal(shape)).astype(dtype)
    return value


def _extern_data_feed(extern_data: ExternData, seed: int) -> dict[Any, numpy.ndarray]:
    """Placeholders of all extern data and of the lengths of their dynamic dims -> fixed values from ``seed``."""
    feed = {}
    lengths_by_dim: list[tuple[Any, tuple[int, ...]]] = []  # Dims compare by more than identity: a list, by `is`
    for key in sorted(extern_data.data):
        data = extern_data.data[key]
        shape = []
        for dim in data.dims:
            if dim.is_batch_dim():
                shape.append(BATCH_SIZE)
            elif dim.dimension is not None:
                shape.append(dim.dimension)
            else:
                lengths = next((found for known, found in lengths_by_dim if known is dim), None)
                if lengths is None:
                    lengths = SEQ_LENGTHS[len(lengths_by_dim) % len(SEQ_LENGTHS)]
                    lengths_by_dim.append((dim, lengths))
                    if dim.dyn_size_ext.dims != (data.get_batch_dim_tag(),):
                        raise ValueError(f"extern_data[{key!r}]: {dim} has sizes of dims {dim.dyn_size_ext.dims}")
                    feed[dim.dyn_size_ext.placeholder] = numpy.array(lengths, dim.dyn_size_ext.dtype)
                shape.append(max(lengths))
        rng = numpy.random.default_rng([seed, stable_int(key)])
        if data.sparse_dim is not None:
            value: numpy.ndarray = rng.integers(0, data.sparse_dim.dimension, shape)
        elif data.dtype == "bool":
            value = rng.random(shape) < 0.5
        elif data.dtype.startswith(("int", "uint")):
            value = rng.integers(0, 10, shape)
        else:
            value = rng.standard_normal(shape)
        feed[data.placeholder] = value.astype(data.dtype)
    return feed


def _canonical_axes(output: Tensor) -> Tensor:
    """
    ``output`` with batch first, then the dynamic axes, the other static axes, the feature axis last; within each
    group in RETURNN's order. Dicts that differ only in the axis order of intermediate layers give the same order.
    """
    ranks = [_axis_rank(output, axis) for axis in range(output.batch_ndim)]
    return output.copy_transpose(sorted(range(output.batch_ndim), key=lambda axis: ranks[axis]))


def _axis_rank(output: Tensor, axis: int) -> int:
    dim = output.dims[axis]
    if dim.is_batch_dim():
        return 0
    if dim.dimension is None:
        return 1
    return 3 if axis == output.feature_dim_axis else 2


def _dynamic_axes(output: Tensor) -> list[int]:
    return [axis for axis in range(output.batch_ndim) if _axis_rank(output, axis) == 1]


def _describe_axes(output: Tensor, lengths: Iterable[numpy.ndarray]) -> tuple[str, ...]:
    """See :attr:`Fingerprint.output_dims`; ``lengths`` are the sizes of the dynamic axes, in order."""
    lengths = iter(lengths)
    described = []
    for axis, dim in enumerate(output.dims):
        rank = _axis_rank(output, axis)
        if rank == 0:
            described.append("B")
        elif rank == 1:
            described.append(f"T{numpy.asarray(next(lengths)).tolist()}")
        else:
            described.append(f"{'S' if rank == 2 else 'F'}{dim.dimension}")
    if output.sparse_dim is not None:
        described.append(f"sparse{output.sparse_dim.dimension}")
    return tuple(described)


def _init_text(initial_value: tf.Tensor) -> tuple[str, bool]:
    """
    The subgraph that computes ``initial_value``, one line per op in post-order of a walk along the inputs in their
    order: ``%3 = Mul(%1, %2) {T=float32}``. Op and tensor names, colocation and seeds (attributes and the seed
    inputs of stateless random ops, as ``<seed>``) are left out, so a param under another layer name, or whose seed
    RETURNN drew in another order, has the same text; op types, attributes and constants count.
    Also says whether the value is a constant: no seed, no stateful op (such as a random op or a variable read).
    """
    lines: list[str] = []
    numbers: dict[Any, int] = {}
    constant = True

    def visit(op: tf.Operation) -> int:
        nonlocal constant
        if op in numbers:
            return numbers[op]
        args = []
        for arg_name, tensor in zip(_input_arg_names(op), op.inputs):
            if arg_name in _SEED_INPUTS:
                args.append("<seed>")
                constant = False
            else:
                args.append(f"%{visit(tensor.op)}" + (f":{tensor.value_index}" if tensor.value_index else ""))
        args += [f"^%{visit(control)}" for control in op.control_inputs]
        constant &= not op.op_def.is_stateful and _SEED_ATTRS.isdisjoint(op.node_def.attr)
        attrs = ", ".join(
            f"{key}={_attr_text(op, key)}" for key in sorted(op.node_def.attr) if key not in _IGNORED_ATTRS
        )
        numbers[op] = len(lines)
        lines.append(f"%{numbers[op]} = {op.type}({', '.join(args)}) {{{attrs}}}")
        return numbers[op]

    root = visit(initial_value.op)
    lines.append(f"return %{root}:{initial_value.value_index}")
    return "\n".join(lines), constant


def _input_arg_names(op: tf.Operation) -> list[str]:
    """The name of the op's input argument for each of its inputs (list arguments expanded)."""
    names = []
    for arg in op.op_def.input_arg:
        if arg.number_attr:
            count = op.get_attr(arg.number_attr)
        elif arg.type_list_attr:
            count = len(op.get_attr(arg.type_list_attr))
        else:
            count = 1
        names += [arg.name] * count
    return names


def _attr_text(op: tf.Operation, key: str) -> str:
    import tensorflow as tf
    from tensorflow.core.framework.tensor_pb2 import TensorProto

    value = op.get_attr(key)
    return _array_text(tf.make_ndarray(value)) if isinstance(value, TensorProto) else _value_text(value)


def _value_text(value: Any) -> str:
    import tensorflow as tf
    from google.protobuf import text_format
    from google.protobuf.message import Message

    if isinstance(value, tf.DType):
        return value.name
    if isinstance(value, Message):
        return "{" + text_format.MessageToString(value, as_one_line=True) + "}"
    if isinstance(value, bytes):
        return repr(value.decode(errors="backslashreplace"))
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    return repr(value)


def _array_text(array: numpy.ndarray) -> str:
    """A constant: dtype, shape and the values, or a hash of the bytes for large ones that are not all alike."""
    head = f"{array.dtype}{list(array.shape)}"
    if array.size <= _INLINE_CONSTANT_SIZE:
        return f"{head} {array.tolist()}"
    if (array == array.flat[0]).all():
        return f"{head} all {array.flat[0].tolist()}"
    return f"{head} sha256:{hashlib.sha256(numpy.ascontiguousarray(array).tobytes()).hexdigest()[:16]}"


def _first_difference(ours: list[str], theirs: list[str]) -> tuple[str, str]:
    for our_line, their_line in zip(ours, theirs):
        if our_line != their_line:
            return our_line, their_line
    return f"{len(ours)} lines", f"{len(theirs)} lines"

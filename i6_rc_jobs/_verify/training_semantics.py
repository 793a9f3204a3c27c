"""
What :mod:`i6_rc_jobs._verify.semantics` cannot see of a model, because it shows only in training: judged by building the
network once with RETURNN's dynamic train flag, as its engine trains.

A :class:`TrainingFingerprint` holds the trainable variables (those RETURNN's updater trains), the initial value of
every variable as RETURNN's own initializers draw it (graph seed and network seed fixed, so initializers whose seeds
RETURNN draws in another order give other values), and, with the variables set as :mod:`i6_rc_jobs._verify.semantics` sets
them, the train-mode output and losses, the objective (loss scales and options, L2) and its gradient with respect to
each trainable variable. Every random number that these depend on (dropout masks, variational noise, random layers)
is fed from its op's type and shape alone, so two nets that draw the same kind of numbers in the same shape get the
same numbers whatever seeds RETURNN gave the ops; numbers drawn inside a loop cannot be fed, and for such nets only
the trainable variables and initial values are compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy

from i6_rc_jobs._verify import semantics

if TYPE_CHECKING:
    import tensorflow as tf

__all__ = ["TrainingFingerprint", "training_fingerprint", "training_fingerprints", "training_differences"]


@dataclass(frozen=True, eq=False)
class TrainingFingerprint:
    """What training shows of a model; compare with :func:`training_differences`."""

    trainable: tuple[str, ...]
    """Names of the variables RETURNN trains, sorted"""
    initial: dict[str, numpy.ndarray]
    """TF variable name -> its value right after RETURNN's initializers ran (fixed graph and network seeds)"""
    output: numpy.ndarray
    """The train-mode default output, as :attr:`i6_rc_jobs._verify.semantics.Fingerprint.output`"""
    losses: dict[str, float]
    """Train-mode losses by score key"""
    objective: float
    gradients: dict[str, numpy.ndarray]
    """Trainable variable name -> gradient of the objective"""
    values: bool
    """False: random numbers inside a loop made output, losses and gradients depend on RETURNN's order"""


def training_fingerprint(config_code: str, *, seed: int = 1) -> tuple[semantics.Fingerprint, TrainingFingerprint]:
    """The config's ``network`` built once with the dynamic train flag: its :class:`i6_rc_jobs._verify.semantics.Fingerprint`
    (train flag False) and its :class:`TrainingFingerprint` (train flag True)."""
    config = semantics.load_config(config_code)
    return _built(config, config.typed_value("network"), seed)


def training_fingerprints(config_code: str, *, seed: int = 1) -> dict[str, TrainingFingerprint]:
    """The :class:`TrainingFingerprint` of each network of a config, named as
    :func:`i6_rc_jobs._verify.semantics.fingerprints` names them."""
    config = semantics.load_config(config_code)
    nets = semantics.config_networks(config_code, config)
    return {name: _built(config, net, seed)[1] for name, net in nets.items()}


def training_differences(a: TrainingFingerprint, b: TrainingFingerprint) -> list[str]:
    """[] iff both train alike; else one line per difference."""

    def close(x: Any, y: Any) -> bool:
        x, y = numpy.asarray(x), numpy.asarray(y)
        return x.shape == y.shape and bool(
            numpy.allclose(x, y, rtol=semantics.RTOL, atol=semantics.ATOL, equal_nan=True)
        )

    lines = []
    if a.trainable != b.trainable:
        lines.append(f"trainable variables {list(a.trainable)} != {list(b.trainable)}")
    lines += [
        f"initial value of {name} differs"
        for name in sorted(a.initial.keys() & b.initial.keys())
        if not close(a.initial[name], b.initial[name])
    ]
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
            if numpy.any(numpy.asarray(ga if gb is None else gb) != 0):
                lines.append(f"gradient of {name}: only in one")
        elif not close(ga, gb):
            lines.append(f"gradient of {name} differs")
    return lines


def _built(config: Any, net_dict: Any, seed: int) -> tuple[semantics.Fingerprint, TrainingFingerprint]:
    """Both fingerprints of one net dict of ``config``, built once in a new graph."""
    import tensorflow as tf

    from i6_rc_jobs._verify.returnn_check import network_in_new_graph

    with network_in_new_graph(config, net_dict, train_flag="dynamic") as network:
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
        gradients = {n: tf.convert_to_tensor(g) for n, g in zip(names, grads) if g is not None}
        fetches = (output.placeholder, masks, losses, objective, gradients)
        samples, feedable = _random_samples(tf.nest.flatten(fetches), tf.compat.v1.get_default_graph())
        eval_fingerprint = semantics.network_fingerprint(network, seed=seed, feed={network.train_flag: False})
        variables = {semantics._variable_name(var): var for var in tf.compat.v1.global_variables()}
        constant = [name for name, var in variables.items() if semantics._init_text(var.initial_value)[1]]
        with tf.compat.v1.Session() as session:
            session.run([var.initializer for var in variables.values()])
            initial = session.run({name: var.read_value() for name, var in variables.items()})
            bases = {name: initial[name] for name in constant}
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
    return eval_fingerprint, TrainingFingerprint(
        trainable=tuple(names),
        initial=initial,
        output=value,
        losses={k: float(v) for k, v in loss_values.items()},
        objective=float(objective_value),
        gradients=grad_values,
        values=feedable,
    )


def _random_samples(fetches: list[tf.Tensor], graph: tf.Graph) -> tuple[list[tf.Tensor], bool]:
    """The float outputs of the random ops that ``fetches`` depend on (dropout masks, noise, random layers), and
    whether all of them can be fed (not inside a loop)."""
    seen: set[Any] = set()
    stack = [t.op for t in fetches]
    samples, feedable = [], True
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


def _sample_value(tensor: tf.Tensor, shape: tuple[int, ...]) -> numpy.ndarray:
    """A random op's output from its type and shape alone: equal wherever two nets draw the same kind of numbers
    in the same shape, whichever seed RETURNN gave the op (it draws them in the order it constructs layers)."""
    rng = numpy.random.default_rng([semantics.stable_int(tensor.op.type), *shape])
    values = rng.random(shape) if "Uniform" in tensor.op.type else rng.standard_normal(shape).clip(-2, 2)
    return values.astype(tensor.dtype.as_numpy_dtype)

"""The computation fingerprint with real torch and real i6_models (the pinned checkout): parts that i6_models wrote
twice (V1, V2) and configured to compute the same share one digest, as does a refactored Conformer block; a change
of what is computed (in train mode only, in an initial value, in a constant) moves it, and ``differences`` names the
graph, op or parameter; a capture that cannot be proven complete is refused with its reason (data-dependent control
flow, a branch on a size inside the declared range, effects outside the graph, Python's random numbers); the
Conformer with i6_models' VGG frontend is captured over every batch and time size, alike in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from i6_rc_jobs import ComputationFingerprint, Inputs, NotCaptured, TensorSpec, computation_fingerprint
from tests.support.sisyphus_setup import REPO

I6_MODELS = REPO / ".deps" / "src" / "i6_models"
sys.path.insert(0, str(I6_MODELS))

from i6_models.assemblies.conformer import conformer_v1  # noqa: E402
from i6_models.parts import conformer as parts  # noqa: E402
from i6_models.parts.frontend import vgg_act  # noqa: E402

FEATURES = 16
FRAMES = Inputs.of(("B", "T", FEATURES), T=(2, 300))
MASKED = Inputs.of(("B", "T", FEATURES), TensorSpec(("B", "T"), "bool"), T=(2, 300))
silu = torch.nn.functional.silu


def _feed_forward(version: int, dropout: float = 0.1, axes: Any = None) -> torch.nn.Module:
    if version == 1:
        return parts.ConformerPositionwiseFeedForwardV1(
            parts.ConformerPositionwiseFeedForwardV1Config(FEATURES, 32, dropout, silu)
        )
    return parts.ConformerPositionwiseFeedForwardV2(
        parts.ConformerPositionwiseFeedForwardV2Config(FEATURES, 32, dropout, silu, axes)
    )


def _block_config() -> conformer_v1.ConformerBlockV1Config:
    return conformer_v1.ConformerBlockV1Config(
        ff_cfg=parts.ConformerPositionwiseFeedForwardV1Config(FEATURES, 32, 0.1, silu),
        mhsa_cfg=parts.ConformerMHSAV1Config(FEATURES, 2, 0.1, 0.1),
        conv_cfg=parts.ConformerConvolutionV1Config(FEATURES, 3, 0.1, silu, torch.nn.BatchNorm1d(FEATURES)),
    )


class RefactoredBlock(conformer_v1.ConformerBlockV1):
    """i6_models' ConformerBlockV1 with its forward written otherwise: a helper for the half steps, the residual
    sums the other way round, the scale after the module."""

    def forward(self, x: torch.Tensor, /, sequence_mask: torch.Tensor) -> torch.Tensor:
        x = _half_step(self.ff1, x)
        x = x + self.mhsa(x, sequence_mask)
        x = x + self.conv(x)
        return self.final_layer_norm(_half_step(self.ff2, x))


def _half_step(module: torch.nn.Module, value: torch.Tensor) -> torch.Tensor:
    return value + module(value) * 0.5


class ScaledBlock(conformer_v1.ConformerBlockV1):
    """The block with a third of the first feed-forward instead of a half: another computation."""

    def forward(self, x: torch.Tensor, /, sequence_mask: torch.Tensor) -> torch.Tensor:
        x = self.ff1(x) / 3 + x
        x = self.mhsa(x, sequence_mask) + x
        x = self.conv(x) + x
        return self.final_layer_norm(0.5 * self.ff2(x) + x)


@pytest.mark.parametrize(
    "v1, v2, inputs",
    [
        (lambda: _feed_forward(1), lambda: _feed_forward(2), FRAMES),
        (
            lambda: parts.ConformerConvolutionV1(
                parts.ConformerConvolutionV1Config(FEATURES, 3, 0.1, silu, torch.nn.BatchNorm1d(FEATURES))
            ),
            lambda: parts.ConformerConvolutionV2(
                parts.ConformerConvolutionV2Config(FEATURES, 3, 0.1, silu, torch.nn.BatchNorm1d(FEATURES), None)
            ),
            FRAMES,
        ),
        (
            lambda: parts.ConformerMHSAV1(parts.ConformerMHSAV1Config(FEATURES, 2, 0.1, 0.1)),
            lambda: parts.ConformerMHSAV2(parts.ConformerMHSAV2Config(FEATURES, 2, 0.1, 0.1, None)),
            MASKED,
        ),
    ],
    ids=["feed-forward", "convolution", "self-attention"],
)
def test_i6_models_parts_written_twice_that_compute_the_same_share_one_digest(v1, v2, inputs):
    first, second = computation_fingerprint(v1, inputs), computation_fingerprint(v2, inputs)
    assert type(v1()).forward.__code__.co_code != type(v2()).forward.__code__.co_code  # other code
    assert first.differences(second) == []
    assert first.digest == second.digest
    assert set(first.graphs) >= {"eval", "train"} or set(first.graphs) >= {"eval B>=2", "train B>=2"}


def test_a_refactored_conformer_block_keeps_the_digest_and_a_changed_scale_moves_it():
    inputs = MASKED
    original = computation_fingerprint(lambda: conformer_v1.ConformerBlockV1(_block_config()), inputs)
    refactored = computation_fingerprint(lambda: RefactoredBlock(_block_config()), inputs)
    scaled = computation_fingerprint(lambda: ScaledBlock(_block_config()), inputs)
    assert refactored.digest == original.digest
    assert scaled.digest != original.digest
    said = "\n".join(original.differences(scaled))
    assert "graph eval" in said and "graph train" in said and "aten.div.Tensor" in said, said


class TrainScale(torch.nn.Module):
    """Scales its input by ``scale`` in train mode only."""

    def __init__(self, scale: float):
        super().__init__()
        self.linear = torch.nn.Linear(FEATURES, FEATURES)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.scale if self.training else x)


def test_a_change_seen_only_in_train_mode_moves_the_digest_and_is_named():
    two, three = computation_fingerprint(lambda: TrainScale(2.0), FRAMES), computation_fingerprint(
        lambda: TrainScale(3.0), FRAMES
    )
    assert two.graphs["eval"] == three.graphs["eval"]
    assert two.digest != three.digest
    said = two.differences(three)
    assert said[0].startswith("graph train:") and any("3.0" in line for line in said), said


def test_dropout_of_another_rate_or_broadcast_moves_the_digest():
    plain = computation_fingerprint(lambda: _feed_forward(2), FRAMES)
    broadcast = computation_fingerprint(lambda: _feed_forward(2, axes="T"), FRAMES)
    more_dropout = computation_fingerprint(lambda: _feed_forward(2, dropout=0.2), FRAMES)
    assert len({plain.digest, broadcast.digest, more_dropout.digest}) == 3
    assert plain.graphs["train"] not in (broadcast.graphs["train"], more_dropout.graphs["train"])
    assert any("aten.dropout.default" in line and "0.2, True" in line for line in plain.differences(more_dropout))
    assert any("aten.feature_dropout.default" in line for line in plain.differences(broadcast))


def test_another_initial_value_moves_the_digest_and_names_the_parameter():
    def zero_bias() -> torch.nn.Module:
        model = _feed_forward(1)
        torch.nn.init.zeros_(model.linear_ff.bias)
        return model

    plain, zeroed = computation_fingerprint(lambda: _feed_forward(1), FRAMES), computation_fingerprint(
        zero_bias, FRAMES
    )
    assert plain.graphs == zeroed.graphs
    assert [line.split(":")[0] for line in plain.differences(zeroed)] == ["initial value of linear_ff.bias"]


def test_tied_weights_are_another_model_than_equal_copies():
    class Tied(torch.nn.Module):
        def __init__(self, tie: bool):
            super().__init__()
            self.a = torch.nn.Linear(FEATURES, FEATURES, bias=False)
            self.b = torch.nn.Linear(FEATURES, FEATURES, bias=False)
            self.b.weight = self.a.weight if tie else torch.nn.Parameter(self.a.weight.detach().clone())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))

    tied, copied = computation_fingerprint(lambda: Tied(True), FRAMES), computation_fingerprint(
        lambda: Tied(False), FRAMES
    )
    assert tied.init["b.weight"] == "= a.weight" and copied.init["b.weight"] == copied.init["a.weight"]
    assert tied.digest != copied.digest


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(FEATURES, FEATURES)
        self.calls = 0


class DataDependent(_Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) if x.sum() > 0 else x


class LongInputsOnly(_Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) if x.shape[1] > 100 else x


class CountsCalls(_Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.linear(x)


LOG: list[int] = []


class Logs(_Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        LOG.append(x.shape[0])
        return self.linear(x)


class PythonRandom(_Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import random

        return self.linear(x) * random.random()


@pytest.mark.parametrize(
    "model, inputs, reason",
    [
        (DataDependent, FRAMES, "Data-dependent branching"),
        (LongInputsOnly, FRAMES, "Not all values of T"),
        (CountsCalls, FRAMES, "effects outside the graph"),
        (Logs, FRAMES, "effects outside the graph"),
        (PythonRandom, FRAMES, "RandomValueSource"),
        (lambda: torch.zeros(3), FRAMES, "is no torch.nn.Module"),
    ],
    ids=["data-dependent", "size-branch-in-range", "module-attribute", "global-list", "python-random", "no-module"],
)
def test_a_capture_that_is_not_proven_complete_is_refused_with_its_reason(model, inputs, reason):
    with pytest.raises(NotCaptured, match=reason):
        computation_fingerprint(model, inputs)


def test_a_branch_on_a_size_outside_the_declared_range_is_captured():
    fingerprint = computation_fingerprint(LongInputsOnly, Inputs.of(("B", "T", FEATURES), T=(2, 100)))
    assert all("aten.linear" not in line for listing in fingerprint.listings.values() for line in listing)


def _vgg_conformer() -> torch.nn.Module:
    from i6_models.config import ModuleFactoryV1

    frontend = ModuleFactoryV1(
        vgg_act.VGG4LayerActFrontendV1,
        vgg_act.VGG4LayerActFrontendV1Config(
            in_features=40,
            conv1_channels=4,
            conv2_channels=4,
            conv3_channels=4,
            conv4_channels=4,
            conv_kernel_size=(3, 3),
            conv_padding=None,
            pool1_kernel_size=(2, 1),
            pool1_stride=(2, 1),
            pool1_padding=None,
            pool2_kernel_size=(2, 1),
            pool2_stride=(2, 1),
            pool2_padding=None,
            activation=torch.nn.functional.relu,
            out_features=FEATURES,
        ),
    )
    config = conformer_v1.ConformerEncoderV1Config(num_layers=2, frontend=frontend, block_cfg=_block_config())
    return conformer_v1.ConformerEncoderV1(config)


VGG_INPUTS = Inputs.of(("B", "T", 40), TensorSpec(("B", "T"), "bool"), T=(16, 2000))
#: One process's fingerprint of the VGG Conformer, printed as JSON.
OTHER_PROCESS = textwrap.dedent("""
    import json
    from tests.test_computation_fingerprint import VGG_INPUTS, _vgg_conformer
    from i6_rc_jobs import computation_fingerprint

    fingerprint = computation_fingerprint(_vgg_conformer, VGG_INPUTS)
    print(json.dumps({"digest": fingerprint.digest, "graphs": fingerprint.graphs}))
    """)


@pytest.mark.slow
def test_the_conformer_with_the_vgg_frontend_is_captured_for_every_batch_and_time_size_alike_in_any_process():
    fingerprint = computation_fingerprint(_vgg_conformer, VGG_INPUTS)
    # i6_models' mask pooling (max_pool1d) is captured through max_pool2d, which keeps the time size dynamic; the
    # attention's reshapes hold for a batch of 2 and more, and a batch of 1 has its own graph.
    assert set(fingerprint.graphs) == {"eval B>=2", "eval B=1", "train B>=2", "train B=1"}
    assert any("max_pool2d" in line and "(T//2)" in line for line in fingerprint.listings["eval B>=2"])
    env = {**os.environ, "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    other = json.loads(done.stdout.strip().splitlines()[-1])
    assert other == {"digest": fingerprint.digest, "graphs": fingerprint.graphs}
    again = ComputationFingerprint.from_json(json.loads(json.dumps(fingerprint.to_json())))
    assert again == fingerprint and again.to_json() == fingerprint.to_json()


#: The elementwise ops the property test's graphs are made of: (name, arity, function).
OPS = [
    ("tanh", 1, torch.tanh),
    ("relu", 1, torch.relu),
    ("add", 2, torch.add),
    ("mul", 2, torch.mul),
    ("sub", 2, torch.sub),
]


@st.composite
def _programs(draw: Any) -> tuple[list[tuple[int, tuple[int, ...]]], list[int], int]:
    """A random dataflow graph over the input (value 0): each step applies an op to earlier values; plus another
    order of the steps that respects their dependencies, and a step whose op to change."""
    steps = []
    for index in range(draw(st.integers(2, 7))):
        op = draw(st.integers(0, len(OPS) - 1))
        args = tuple(draw(st.integers(0, index)) for _ in range(OPS[op][1]))
        steps.append((op, args))
    order: list[int] = []
    remaining = set(range(len(steps)))
    while remaining:
        done = {0, *(i + 1 for i in order)}
        ready = sorted(i for i in remaining if set(steps[i][1]) <= done)
        chosen = ready[draw(st.integers(0, len(ready) - 1))]
        order.append(chosen)
        remaining.remove(chosen)
    return steps, order, draw(st.integers(0, len(steps) - 1))


def _module(steps: list[tuple[int, tuple[int, ...]]], order: list[int], swap: bool) -> torch.nn.Module:
    """A module computing ``steps`` in ``order`` (each binary op's operands swapped if ``swap`` and the op is
    commutative); returns every value, so that none is dead."""

    class Program(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            values: dict[int, torch.Tensor] = {0: x}
            for index in order:
                op, args = steps[index]
                name, _, function = OPS[op]
                operands = [values[a] for a in args]
                if swap and name in ("add", "mul"):
                    operands.reverse()
                values[index + 1] = function(*operands)
            return tuple(values[i] for i in sorted(values))

    return Program()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_the_digest_is_the_dataflow_not_the_order_or_operand_order_of_commutative_ops(program):
    steps, order, changed = program
    inputs = Inputs.of(("B", "T", 4), T=(2, 50))
    in_order = computation_fingerprint(lambda: _module(steps, list(range(len(steps))), False), inputs)
    reordered = computation_fingerprint(lambda: _module(steps, order, True), inputs)
    assert reordered.digest == in_order.digest
    other_op = (steps[changed][0] + 1) % len(OPS)
    if OPS[other_op][1] != OPS[steps[changed][0]][1]:
        return  # (another arity: another graph anyway)
    edited = [*steps[:changed], (other_op, steps[changed][1]), *steps[changed + 1 :]]
    assert computation_fingerprint(lambda: _module(edited, list(range(len(steps))), False), inputs).digest != (
        in_order.digest
    )

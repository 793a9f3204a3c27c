"""
Real returnn_common models of i6 researchers (rwth-i6/i6_experiments, ``users/*``, 2022-2023), one module per model.
The researchers' code is not copied here: each module loads it from the pinned i6_experiments checkout
(:mod:`tests.real_models.checkout`), with the adaptations its docstring names and says why (returnn_common's API renames
since, imports of the Sisyphus side of a setup dropped), and builds it from extern data and options of the
researcher's setup, some sizes scaled down for the tests' runtime.

Every module exposes ``KIND`` (what the model is), ``SOURCE`` (its main source path), ``TRAINS`` (None if a step of
training on generated data is possible, else why not), ``SEQ_LENS`` (the ``seq_lens`` of RETURNN's
``DummyGenericDataset`` for that step, if it trains), ``STAGES`` (what ``build()`` returns, see below),
``SEARCH_STAGES`` (the stages built for recognition, with ``nn.choice(search=True)``) and ``build() -> Stages``: per
stage (an epoch from which the net is used, ``"recog"`` or ``"align"``) the raw ``(extern_data, network)`` dicts of
returnn_common with the real RETURNN ``Dim`` objects. Each stage is built from a fresh
``nn.reset_default_root_name_ctx()``; the extern data dims are made once per ``build()`` and shared by all stages, as
the dims of a config's ``extern_data`` are shared by the nets its ``get_network(epoch)`` builds.
"""

from __future__ import annotations

import importlib
import textwrap
import types
from typing import Any, Callable, Union

from returnn_common import nn

from i6_core.returnn.config import ReturnnConfig

from i6_rc_jobs import ReturnnCommonSerializer, rc_compat
from i6_rc_jobs._verify.returnn_check import construct_networks, network_in_new_graph
from i6_rc_jobs._verify.semantics import load_config
from tests import rc_builders

nn = rc_compat.apply(nn)

#: What the configs of these models start with in the researchers' setups (i6_experiments ``common/setups/
#: serialization.py``, ``PythonEnlargeStackWorkaroundNonhashedCode``): RETURNN constructs a layer's inputs recursively,
#: and a deep net (a Conformer of 6 layers) takes more than Python's default recursion limit.
ENLARGE_STACK = textwrap.dedent("""\
    # https://github.com/rwth-i6/returnn/issues/957
    # https://stackoverflow.com/a/16248113/133374
    import resource
    import sys
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (2 ** 29, -1))
    except Exception as exc:
        print(f"resource.setrlimit {type(exc).__name__}: {exc}")
    sys.setrecursionlimit(10 ** 6)
    """)

Stage = Union[int, str]
Stages = dict[Stage, rc_builders.RawDicts]

#: The corpus: module names under tests.real_models.
NAMES = [
    "ctc_conformer_gammatone",
    "hybrid_blstm",
    "transducer_fullsum_staged",
    "att_conformer_staged",
    "ctc_aligner_tts",
    "nar_tts",
    "ctc_conformer_staged",
    "conformer_aed",
    "transducer_blstm_cnn",
    "nar_tts_repeat",
    "transducer_ln_staged",
]


def module(name: str) -> types.ModuleType:
    """The model module of ``name``."""
    return importlib.import_module(f"{__name__}.{name}")


def stage(construct: Callable[[], Any]) -> rc_builders.RawDicts:
    """The raw dicts of what ``construct`` builds (it returns the root module) in a fresh root name context."""
    nn.reset_default_root_name_ctx()
    root = construct()
    return rc_builders.raw_dicts(nn, root)


def returnn_config(prolog: list, **entries: Any) -> ReturnnConfig:
    """A TensorFlow config of returnn_common's behavior version with ``entries``, after :data:`ENLARGE_STACK` and
    ``prolog``."""
    config = {"use_tensorflow": True, "behavior_version": nn.min_returnn_behavior_version, **entries}
    return ReturnnConfig(config, python_prolog=[ENLARGE_STACK, *prolog], black_formatting=False)


def construct(config_file: str, stage: Stage, search: bool) -> list[str]:
    """RETURNN constructs the net of ``stage`` that ``config_file`` defines, as its engine does for training (the
    epoch's net of ``get_network``, or ``network``), or with ``search`` for recognition; the names of its layers."""
    if not search:
        epoch = stage if isinstance(stage, int) else 1  # a config of another stage has one network
        return construct_networks(config_file, [epoch], quiet=True)[epoch]
    with open(config_file) as f:
        config = load_config(f.read())
    with network_in_new_graph(config, config.typed_value("network"), train_flag=False, search=True) as network:
        assert network.get_default_output_layer().output.beam is not None, "the search output has no beam"
        return sorted(network.layers)


def serializer_key(stage: Stage) -> str:
    """Which of :func:`serializers` holds ``stage``."""
    return "train" if isinstance(stage, int) else str(stage)


def serializers(stages: Stages, hash_scheme: str = "dict") -> dict[str, ReturnnCommonSerializer]:
    """The serializers a setup makes of a model's stages: ``"train"`` of the epoch stages (``staged_networks`` when
    there are several; they share the extern data), and one per other stage (e.g. ``"recog"``)."""
    epochs = sorted(key for key in stages if isinstance(key, int))
    extern_data = stages[epochs[0]][0]
    if len(epochs) == 1:
        train = ReturnnCommonSerializer(extern_data=extern_data, network=stages[epochs[0]][1], hash_scheme=hash_scheme)
    else:
        staged = {epoch: stages[epoch][1] for epoch in epochs}
        train = ReturnnCommonSerializer(extern_data=extern_data, staged_networks=staged, hash_scheme=hash_scheme)
    others = {
        str(key): ReturnnCommonSerializer(extern_data=value[0], network=value[1], hash_scheme=hash_scheme)
        for key, value in stages.items()
        if not isinstance(key, int)
    }
    return {"train": train, **others}

"""Real i6 PyTorch setups with the package, from the pinned i6_experiments checkout (never copied here).

The four models of the canonical example setup ``example_setups/librispeech/ctc_rnnt_standalone_2024`` (the CTC
Conformers ``conformer_0924`` and ``conformer_1023``, the LSTM and the Transformer LM), at tiny sizes, made into
configs the way the setup makes them (``serializer.py``'s ``serialize_training`` and ``serialize_forward``, as
``config.py``'s ``get_training_config`` and ``get_prior_config`` call them) and moved by
``ReturnnConfigSerializer.from_i6_core(..., code=functools.partial(by_content, returnn_root=MiniReturnn))``: hashed
alike in two manager processes, written, and checked with MiniReturnn's engine as ``CreateConfigJob(check=True,
returnn_root=MiniReturnn)`` checks them: one train step each, and the CTC models' prior computation
(``prior_init_hook``, ``prior_step``, ``prior_finish_hook``) for one batch.

Two RETURNN-frontend models of ``users/zeyer/experiments/exp2023_04_25_rf`` (``aed``, the attention model of
``conformer_import_moh_att_2023_06_30``) in configs as that setup's ``train.py`` makes them (``_model_def``,
``_train_def``, and its ``get_model``/``train_step`` wrappers), each reference ``by_content``: hashed alike in two
manager processes, written, and checked with upstream RETURNN's engine (one train step).

What the tests adapt, and why:

- ``serializer.I6_MODELS_REPO_PATH`` (the setup's ``CloneGitRepositoryJob`` output, an ``ExternalImport``) is set to
  the pinned i6_models checkout under the same ``hash_overwrite``, as the job's output would be once it ran.
- The model configs are written here as the dicts the lab's ``asdict(ModelConfig(...))`` makes (the setup's ``_cfg``
  modules import torch and i6_models); the check builds each model from its dict through the setup's own
  ``ModelConfig.from_dict``.
- The manager of the example setup imports torch: i6_experiments' ``common/setups/returnn_pytorch/serialization.py``,
  which the setup's ``serializer.py`` imports, imports it at its top. The tests assert that torch was not imported
  before that, and that the manager imported no model code and no i6_models (the builds do).
- The CTC models' audio is an HDF file of generated float32 samples: MiniReturnn's ``DummyDataset`` family gives
  float64 features, which i6_models' ``LogMelFeatureExtractionV1`` refuses (``expected scalar type Float but found
  Double``); the setup's ``OggZipDataset`` gives float32.
- The zeyer setup's ``get_model`` wrapper reads ``extern_data`` (dims) from the config while it constructs, so it
  cannot be constructed in a build (built first with an empty config, it fails with ``TypeError: 'NoneType' object
  is not subscriptable``; with the job's config, ``extern_data`` is no plain value): its markers take no arguments
  and are imported in the build, not constructed; the check constructs the model. Its extern data is written with
  ``dim_tags`` (as the setup writes it), since the wrappers ask for the time dim, which RETURNN's ``Tensor`` sets
  only from ``dim_tags``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.sisyphus_setup import REPO

DEPS = REPO / ".deps" / "src"
MINI_RETURNN = DEPS / "MiniReturnn"
I6_MODELS = DEPS / "i6_models"

_FEATURES = {  # the lab's LogMelFeatureExtractionV1Config (experiments/ctc_bpe/*.py)
    "sample_rate": 16000,
    "win_size": 0.025,
    "hop_size": 0.01,
    "f_min": 60,
    "f_max": 7600,
    "min_amp": 1e-10,
    "num_filters": 80,
    "center": False,
}
_SPECAUG = {"repeat_per_n_frames": 25, "max_dim_time": 20, "max_dim_feat": 16, "num_repeat_feat": 5}


def _frontend(pool1: tuple[int, int]) -> dict[str, Any]:
    """``asdict(VGG4LayerActFrontendV1Config_mod(...))`` as the lab fills it, with 4 channels and 32 outputs."""
    return {
        "in_features": 80,
        "conv1_channels": 4,
        "conv2_channels": 4,
        "conv3_channels": 4,
        "conv4_channels": 4,
        "conv_kernel_size": (3, 3),
        "conv_padding": None,
        "pool1_kernel_size": pool1,
        "pool1_stride": (2, 1),
        "pool1_padding": None,
        "pool2_kernel_size": (2, 1),
        "pool2_stride": (2, 1),
        "pool2_padding": None,
        "activation_str": "ReLU",
        "out_features": 32,
        "activation": None,
    }


_CONFORMER = {  # the lab's 512-dim 12-layer Conformers, 32-dim with 2 layers
    "label_target_size": 10,
    "conformer_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "ff_dim": 64,
    "att_weights_dropout": 0.1,
    "conv_dropout": 0.1,
    "ff_dropout": 0.1,
    "mhsa_dropout": 0.1,
    "conv_kernel_size": 7,
    "final_dropout": 0.1,
    "specauc_start_epoch": 11,
}
#: network module (relative to the setup's pytorch_networks) -> the ``model_config_dict`` of its ``_cfg`` ModelConfig.
MODELS: dict[str, dict[str, Any]] = {
    "ctc.conformer_0924.i6models_relposV1_VGG4LayerActFrontendV1_v1": {  # experiments/ctc_bpe/baseline_128.py
        "feature_extraction_config": _FEATURES,
        "frontend_config": _frontend((2, 1)),
        "specaug_config": _SPECAUG,
        "pos_emb_config": {
            "learnable_pos_emb": False,
            "rel_pos_clip": 16,
            "with_linear_pos": True,
            "with_pos_bias": True,
            "separate_pos_emb_per_head": True,
            "pos_emb_dropout": 0.0,
        },
        **_CONFORMER,
        "mhsa_with_bias": True,
        "dropout_broadcast_axes": None,
        "module_list": ["ff", "conv", "mhsa", "ff"],
        "module_scales": [0.5, 1.0, 1.0, 0.5],
        "aux_ctc_loss_layers": None,
        "aux_ctc_loss_scales": None,
    },
    "ctc.conformer_1023.i6modelsV1_VGG4LayerActFrontendV1_v6": {  # experiments/ctc_bpe/baseline_5k.py
        "feature_extraction_config": _FEATURES,
        "frontend_config": _frontend((3, 1)),
        "specaug_config": {**_SPECAUG, "max_dim_feat": 8},
        **_CONFORMER,
    },
    "lm.lstm.kazuki_lstm_zijian_variant_v1": {  # experiments/lm_bpe/lstm.py
        "vocab_dim": 20,
        "embed_dim": 8,
        "hidden_dim": 16,
        "n_lstm_layers": 2,
        "init_args": {
            "init_args_w": {"func": "normal", "arg": {"mean": 0.0, "std": 0.1}},
            "init_args_b": {"func": "normal", "arg": {"mean": 0.0, "std": 0.1}},
        },
        "bias": True,
        "use_bottle_neck": False,
        "bottle_neck_dim": 512,
        "dropout": 0.2,
    },
    "lm.trafo.kazuki_trafo_zijian_variant_v1": {  # experiments/lm_bpe/trafo.py
        "embed_dim": 8,
        "hidden_dim": 16,
        "vocab_dim": 20,
        "num_layers": 2,
        "block_config": {
            "linear_config": {"input_dim": 16, "ff_dim": 32, "output_dim": 16, "dropout": 0.0, "batch_first": True},
            "mhsa_config": {"input_dim": 16, "num_heads": 2, "dropout": 0.0, "batch_first": True},
        },
        "batch_first": True,
        "dropout": 0.0,
    },
}
#: The data of the CTC models: the setup's MetaDataset data map over an HDF file of generated float32 audio (2 sequences
#: of 0.5 s and 0.4 s at 16 kHz, one channel) and 5 labels each, written by :func:`_audio_hdf` as AUDIO_FILE.
AUDIO = {
    "class": "MetaDataset",
    "data_map": {"raw_audio": ("zip_dataset", "data"), "labels": ("zip_dataset", "classes")},
    "datasets": {"zip_dataset": {"class": "HDFDataset", "files": ["AUDIO_FILE"]}},
    "seq_order_control_dataset": "zip_dataset",
}
#: The data of the LMs: the keys their train_step reads (``data``, ``delayed``), generated by MiniReturnn.
TEXT = {
    "class": "MetaDataset",
    "data_map": {"data": ("lm", "classes"), "delayed": ("lm", "data")},
    "datasets": {
        "lm": {
            "class": "DummyDatasetMultipleDataKeys",
            "data_keys": ["data", "classes"],
            "output_dim": {"data": [20, 1], "classes": [20, 1]},
            "num_seqs": 2,
            "seq_len": 6,
        }
    },
    "seq_order_control_dataset": "lm",
}


def _audio_hdf(path: Path) -> None:
    """What the setup's OggZipDataset gives (float32 samples, int32 labels), as an HDF file."""
    import numpy
    from returnn.datasets.hdf import SimpleHDFWriter

    writer = SimpleHDFWriter(str(path), dim=1, ndim=2, extra_type={"classes": (10, 1, "int32")})
    generator = numpy.random.default_rng(1)
    for index in range(2):
        audio = generator.uniform(-0.5, 0.5, (1, 8000 - 1600 * index, 1)).astype("float32")
        labels = numpy.array([[1, 2, 3, 4, 5]], dtype="int32")
        writer.insert_batch(audio, seq_len=[audio.shape[1]], seq_tag=[f"seq-{index}"], extra={"classes": labels})
    writer.close()


#: A manager start: the setup's configs of each model (training; for the CTC models the prior computation too) moved
#: by content with MiniReturnn as returnn_root, written to NAME.config; prints their hashes, whether torch was imported
#: before the setup's serializer (whose i6_experiments.common.setups.returnn_pytorch.serialization imports torch at
#: its top) and the model code or i6_models it imported.
MANAGER = textwrap.dedent("""
    import functools
    import json
    import sys

    from i6_core.returnn.config import ReturnnConfig
    from sisyphus import tk
    from sisyphus.hash import short_hash

    from i6_rc_jobs import ReturnnConfigSerializer, by_content
    from i6_rc_jobs.jobs.config_file import write_config_file

    torch_before = "torch" in sys.modules
    from i6_experiments.example_setups.librispeech.ctc_rnnt_standalone_2024 import serializer

    mini_returnn, i6_models = sys.argv[1], sys.argv[2]
    models, audio, text = MODELS, AUDIO, TEXT
    # the setup's CloneGitRepositoryJob output: the pinned checkout, under the setup's hash_overwrite
    serializer.I6_MODELS_REPO_PATH = tk.Path(i6_models, hash_overwrite="DEFAULT_I6_MODELS")
    code = functools.partial(by_content, returnn_root=tk.Path(mini_returnn, hash_overwrite="MINI_RETURNN_ROOT"))
    hashes = {}
    for network_module, model_config in models.items():
        name = network_module.rsplit(".", 1)[-1]
        net_args = {"model_config_dict": model_config}
        ctc = network_module.startswith("ctc.")
        data = audio if ctc else text
        train = ReturnnConfig(  # config.py's get_training_config (the lab's LMs: debug=True)
            {"optimizer": {"class": "adam", "epsilon": 1e-16}, "learning_rates": [1e-3], "batch_size": 20000,
             "max_seqs": 2, "train": data},
            post_config={"backend": "torch", "stop_on_nonfinite_train_score": True},
            python_epilog=[serializer.serialize_training(network_module, net_args, debug=not ctc)],
        )
        configs = {name + ".train": train}
        if ctc:
            configs[name + ".prior"] = ReturnnConfig(  # config.py's get_prior_config
                {"batch_size": 20000, "max_seqs": 2, "forward": data},
                post_config={"backend": "torch"},
                python_epilog=[serializer.serialize_forward(network_module, net_args, forward_step_name="prior")],
            )
        for key, config in configs.items():
            moved = ReturnnConfigSerializer.from_i6_core(config, code=code)
            write_config_file(moved, key + ".config")
            hashes[key] = short_hash(moved)
    imported = sorted(name for name in sys.modules if name.startswith("i6_models") or ".pytorch_networks" in name)
    print(json.dumps({"hashes": hashes, "torch": torch_before, "imported": imported}))
    """)


def _env(directory: Path, cache: str, pythonpath: list[Path]) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(map(str, pythonpath)),
        "I6_RC_BUILD_CACHE": str(directory / cache),
        "CUDA_VISIBLE_DEVICES": "",
    }


def _manager(directory: Path, cache: str) -> dict:
    """One manager process (the manager's RETURNN, upstream; i6_experiments and i6_models on its path), writing the
    configs to ``directory``."""
    done = subprocess.run(
        [sys.executable, str(directory.parent / "manager.py"), str(MINI_RETURNN), str(I6_MODELS)],
        cwd=directory,
        env=_env(directory, cache, [REPO, DEPS, I6_MODELS]),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """The configs, written by the first of two manager processes (each its own build cache): both hash them alike
    and neither imports torch."""
    directory = tmp_path_factory.mktemp("i6_setup")
    _audio_hdf(directory / "audio.hdf")
    audio = json.loads(json.dumps(AUDIO).replace("AUDIO_FILE", str(directory / "audio.hdf")))
    script = MANAGER.replace("MODELS, AUDIO, TEXT", f"{MODELS!r}, {audio!r}, {TEXT!r}")
    (directory / "manager.py").write_text(script)
    started = time.monotonic()
    (directory / "configs").mkdir()
    (directory / "again").mkdir()
    first = _manager(directory / "configs", "cache")
    print(f"manager (builds): {time.monotonic() - started:.1f} s")
    second = _manager(directory / "again", "cache")
    assert first["torch"] is False and second["torch"] is False  # (i6_experiments' serialization imports it)
    assert first["imported"] == second["imported"] == []  # no model code, no i6_models in the manager
    assert first["hashes"] == second["hashes"] and len(set(first["hashes"].values())) == 6
    return directory / "configs"


def _check(directory: Path, config: str, returnn: Path = MINI_RETURNN) -> tuple[dict, float]:
    """The torch check of ``config`` as CreateConfigJob(check=True, returnn_root=...) runs it: that RETURNN first on
    PYTHONPATH, which makes the check pick its engine (MiniReturnn's by default); i6_models where the job's
    environment has it (the config puts the ExternalImport's path on sys.path)."""
    from i6_rc_jobs._verify import torch_check

    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, torch_check.__file__, config, "--report", config + ".json"],
        cwd=directory,
        env=_env(directory, "cache", [returnn]),
        capture_output=True,
        text=True,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    return json.loads((directory / (config + ".json")).read_text()), took


@pytest.mark.slow  # builds that import torch, the engine of MiniReturnn or RETURNN
@pytest.mark.parametrize("network_module", list(MODELS))
def test_the_example_setups_model_trains_a_step_in_minireturnn_from_the_moved_config(written, network_module):
    name = network_module.rsplit(".", 1)[-1]
    code = (written / f"{name}.train.config").read_text()
    assert "del _pin_model_code" in code and "\nfrom i6_experiments.example_setups" in code
    report, took = _check(written, f"{name}.train.config")
    print(f"{name}: {report['num_parameters']} parameters, train check {took:.1f} s")
    losses = report["losses"]
    assert losses and all(loss > 0 for loss in losses.values()), losses
    marked = {"conformer_0924": {"ctc_loss_layer2"}, "conformer_1023": {"ctc"}}  # the LMs': "ce"
    assert set(losses) == marked.get(network_module.split(".")[1], {"ce"})


@pytest.mark.slow  # builds that import torch, the engine of MiniReturnn or RETURNN
@pytest.mark.parametrize("network_module", [module for module in MODELS if module.startswith("ctc.")])
def test_the_ctc_models_prior_is_computed_for_a_batch_in_minireturnn(written, network_module):
    name = network_module.rsplit(".", 1)[-1]
    report, took = _check(written, f"{name}.prior.config")
    print(f"{name}: prior check {took:.1f} s")
    train = (
        json.loads((written / f"{name}.train.config.json").read_text())
        if (written / f"{name}.train.config.json").exists()
        else None
    )
    assert "losses" not in report and report["num_parameters"] > 0
    if train is not None:
        assert report["parameters"] == train["parameters"]


#: RETURNN-frontend models of ``users/zeyer/experiments/exp2023_04_25_rf`` (upstream RETURNN): file -> the config's
#: options their construction reads (``get_global_config()``), as small as they go.
RF = "i6_experiments.users.zeyer.experiments.exp2023_04_25_rf"
RF_MODELS: dict[str, dict[str, Any]] = {
    "aed": {"num_enc_layers": 1},
    "conformer_import_moh_att_2023_06_30": {"num_enc_layers": 1},
}
#: A manager start: a config of each model as the setup's ``train.py`` makes it (``_model_def``, ``_train_def`` and
#: its ``get_model``/``train_step`` wrappers, which read ``extern_data``, ``default_input`` and ``target``; the
#: behavior version of the model definitions, 16; extern_data with ``dim_tags``, as the setup writes it: the wrappers
#: ask for the time dim, which RETURNN's Tensor sets from ``dim_tags``, not from ``dims``), each reference by content, written to NAME.config; prints the hashes, whether it imported torch, and the setup's modules
#: it imported.
RF_MANAGER = textwrap.dedent("""
    import json
    import sys

    from returnn.datasets.util.vocabulary import Vocabulary
    from returnn.tensor import Dim, batch_dim

    from i6_rc_jobs import CheckedReturnnConfig, ReturnnConfigSerializer, by_content
    from i6_rc_jobs.jobs.config_file import write_config_file

    rf, models, audio_file = RF, RF_MODELS, sys.argv[1]
    hashes = {}
    for name, options in models.items():
        target_dim = Dim(10, name="vocab")
        target_dim.vocab = Vocabulary.create_vocab_from_labels([str(i) for i in range(10)], eos_label=0)
        values = {
            "extern_data": {
                "data": {"dim_tags": [batch_dim, Dim(None, name="time"), Dim(1, name="audio")], "dtype": "float32"},
                "classes": {"dim_tags": [batch_dim, Dim(None, name="out-spatial")], "sparse_dim": target_dim, "dtype": "int32"},
            },
            "_model_def": by_content(f"{rf}.{name}:from_scratch_model_def"),
            "_train_def": by_content(f"{rf}.{name}:from_scratch_training"),
            "get_model": by_content(f"{rf}.train:_returnn_v2_get_model"),
            "train_step": by_content(f"{rf}.train:_returnn_v2_train_step"),
        }
        config = CheckedReturnnConfig(
            {
                "backend": "torch", "behavior_version": 16, "default_input": "data", "target": "classes",
                "batch_size": 20000, "max_seqs": 2, "optimizer": {"class": "adamw", "epsilon": 1e-16},
                "learning_rate": 1e-3, "train": {"class": "HDFDataset", "files": [audio_file]}, **options,
            },
            python_prolog=[ReturnnConfigSerializer(values, sys_path=[sys.argv[2]])],  # (the setup's recipe/)
        )
        write_config_file(config, name + ".config")
        hashes[name] = config._sis_hash().decode()
    imported = sorted(name for name in sys.modules if name.startswith(rf))
    print(json.dumps({"hashes": hashes, "torch": "torch" in sys.modules, "imported": imported}))
    """)
RETURNN = DEPS / "returnn"


@pytest.fixture(scope="module")
def rf_written(tmp_path_factory) -> Path:
    """The RETURNN-frontend configs, written by the first of two manager processes (each its own build cache)."""
    directory = tmp_path_factory.mktemp("rf_setup")
    _audio_hdf(directory / "audio.hdf")
    (directory / "manager.py").write_text(RF_MANAGER.replace("RF, RF_MODELS", f"{RF!r}, {RF_MODELS!r}"))
    results = []
    for where in ("configs", "again"):
        (directory / where).mkdir()
        done = subprocess.run(
            [sys.executable, str(directory / "manager.py"), str(directory / "audio.hdf"), str(DEPS)],
            cwd=directory / where,
            env=_env(directory / where, "cache", [REPO, DEPS, RETURNN]),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = results
    assert first["torch"] is False and second["torch"] is False and first["imported"] == []
    assert first["hashes"] == second["hashes"] and len(set(first["hashes"].values())) == len(RF_MODELS)
    return directory / "configs"


@pytest.mark.slow  # builds that import torch, the engine of MiniReturnn or RETURNN
@pytest.mark.parametrize("name", list(RF_MODELS))
def test_a_returnn_frontend_model_of_another_setup_trains_a_step_in_upstream_returnn(rf_written, name):
    report, took = _check(rf_written, f"{name}.config", RETURNN)
    print(f"{name}: {report['num_parameters']} parameters, train check {took:.1f} s, losses {report['losses']}")
    assert report["losses"]["train_loss_ce"] > 0 and 0 <= report["losses"]["train_loss_fer"] <= 1


def test_a_machine_question_refused_in_a_build_keeps_what_it_wraps():
    """torch._dynamo, imported the first time while a model is constructed on the meta device (i6_models'
    ``LogMelFeatureExtractionV1``: ``torch.hann_window``), reads ``torch.backends.mps.is_available.__wrapped__``."""
    import torch

    from i6_rc_jobs._code_hash import machine_queries

    original = torch.backends.mps.is_available
    with machine_queries.refused(lambda _file: False):
        assert torch.backends.mps.is_available is not original
        assert torch.backends.mps.is_available.__wrapped__ is original
        assert torch.backends.mps.is_available() == original()
    assert torch.backends.mps.is_available is original

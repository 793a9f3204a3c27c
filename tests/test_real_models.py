"""ReturnnCommonSerializer on real researchers' models (tests.real_models, loaded from the pinned i6_experiments
checkout), every stage: it serializes, the written config gives back returnn_common's own dims and net dict, RETURNN
constructs it, it trains a step on generated data, and its hash is the same in another process (both hash schemes).

Not trained (each module's ``TRAINS`` says why): ``ctc_conformer_gammatone``, whose ``fast_bw`` loss runs RASR's
``nn-trainer`` binary; ``nar_tts`` and ``nar_tts_repeat``, which need one duration per phoneme adding up to the audio
frames, which generated data does not give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Iterator

import pytest
from i6_core.returnn.config import CodeWrapper

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs.jobs.config_file import write_config_file
from tests import real_models
from tests.support.dims import DimMap, assert_equal_up_to_dims
from tests.support.sisyphus_setup import REPO
from tests.support.training import RETURNN_ROOT

# eleven real models built, written, constructed and trained with RETURNN: about 13 minutes
pytestmark = pytest.mark.slow

CASES = [(name, stage) for name in real_models.NAMES for stage in real_models.module(name).STAGES]
TRAINABLE = [name for name in real_models.NAMES if real_models.module(name).TRAINS is None]
HASH_SCHEMES = ("dict", "graph")

#: Run in a process of its own: builds every model of the corpus and writes the hashes of its serializers (or the
#: error that the serializer raised).
_HASHES_SCRIPT = """
import json, sys
from i6_rc_jobs import SerializationError
from tests import real_models

hashes = {}
for name in real_models.NAMES:
    stages = real_models.module(name).build()
    for scheme in %r:
        try:
            for key, serializer in real_models.serializers(stages, scheme).items():
                hashes[f"{name} {key} {scheme}"] = serializer._sis_hash().hex()
        except SerializationError as error:
            hashes[f"{name} {scheme}"] = str(error)
with open(sys.argv[1], "w") as f:
    json.dump(hashes, f)
""" % (HASH_SCHEMES,)


class Corpus:
    """The models, each built once, and their serializers; the hashes of another process, computed meanwhile."""

    def __init__(self, hashes_file: str):
        self._stages: dict[str, real_models.Stages] = {}
        self._serializers: dict[tuple[str, str], dict[str, ReturnnCommonSerializer]] = {}
        self.hashes_file = hashes_file
        self._other_hashes: dict[str, str] | None = None
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.hashes_process = subprocess.Popen(
            [sys.executable, "-c", _HASHES_SCRIPT, hashes_file],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def stages(self, name: str) -> real_models.Stages:
        if name not in self._stages:
            self._stages[name] = real_models.module(name).build()
        return self._stages[name]

    def serializers(self, name: str, hash_scheme: str = "dict") -> dict[str, ReturnnCommonSerializer]:
        if (name, hash_scheme) not in self._serializers:
            self._serializers[name, hash_scheme] = real_models.serializers(self.stages(name), hash_scheme)
        return self._serializers[name, hash_scheme]

    def other_process_hashes(self) -> dict[str, str]:
        if self._other_hashes is None:
            _, stderr = self.hashes_process.communicate(timeout=900)
            assert self.hashes_process.returncode == 0, stderr.decode()[-3000:]
            with open(self.hashes_file) as f:
                self._other_hashes = json.load(f)
        return self._other_hashes


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Iterator[Corpus]:
    built = Corpus(str(tmp_path_factory.mktemp("hashes") / "hashes.json"))
    yield built
    if built.hashes_process.poll() is None:
        built.hashes_process.kill()
    built.hashes_process.communicate()


def _written_stage(serializer: ReturnnCommonSerializer, stage: Any) -> tuple[dict, dict]:
    """The extern data and the net of ``stage`` that the written config defines."""
    namespace: dict = {}
    exec(compile(serializer.get(), "config.py", "exec"), namespace)
    network = namespace["get_network"](epoch=stage) if "get_network" in namespace else namespace["network"]
    return namespace["extern_data"], network


@pytest.mark.parametrize("name, stage", CASES)
def test_written_config_gives_back_returnn_common_s_dims_and_net(corpus, name, stage):
    extern_data, network = corpus.stages(name)[stage]
    assert set(corpus.stages(name)) == set(real_models.module(name).STAGES)
    written_extern_data, written_network = _written_stage(
        corpus.serializers(name)[real_models.serializer_key(stage)], stage
    )
    dims = DimMap()
    assert_equal_up_to_dims(extern_data, written_extern_data, dims, "extern_data")
    assert_equal_up_to_dims(network, written_network, dims, "network")


STAGED = [name for name in real_models.NAMES if sum(isinstance(s, int) for s in real_models.module(name).STAGES) > 1]


@pytest.mark.parametrize("name", STAGED)
def test_written_stages_give_back_each_shared_dim_as_one_dim(corpus, name):
    """The nets of ``get_network(epoch)`` share the extern data dims, and through RETURNN's dim math on them dims
    derived in one stage (sums and products with the pooled time) are met again in another: one config's stages give
    back each dim of returnn_common's stages as one dim, the same in every stage."""
    epochs = sorted(stage for stage in corpus.stages(name) if isinstance(stage, int))
    namespace: dict = {}
    exec(compile(corpus.serializers(name)["train"].get(), "config.py", "exec"), namespace)
    dims = DimMap()
    for epoch in epochs:
        extern_data, network = corpus.stages(name)[epoch]
        assert_equal_up_to_dims(extern_data, namespace["extern_data"], dims, "extern_data")
        assert_equal_up_to_dims(network, namespace["get_network"](epoch=epoch), dims, f"get_network({epoch})")


@pytest.mark.parametrize("name, stage", CASES)
def test_returnn_constructs_the_written_config(corpus, name, stage, tmp_path):
    path = tmp_path / "returnn.config"
    write_config_file(
        real_models.returnn_config([corpus.serializers(name)[real_models.serializer_key(stage)]]), str(path)
    )
    assert real_models.construct(str(path), stage, search=stage in real_models.module(name).SEARCH_STAGES)


@pytest.mark.parametrize("name", TRAINABLE)
def test_trains_a_step_on_generated_data(corpus, name, tmp_path):
    """One epoch of two generated sequences with RETURNN's rnn.py, on the first stage."""
    model = real_models.module(name)
    dataset = {
        "class": "DummyGenericDataset",
        "data_template": CodeWrapper("extern_data"),
        "num_seqs": 2,
        "seq_lens": model.SEQ_LENS,
    }
    entries = {
        "task": "train",
        "device": "cpu",
        "train": dataset,
        "num_epochs": 1,
        "batch_size": 1_000_000,
        "max_seqs": 2,
        "optimizer": {"class": "adam"},
        "learning_rate": 1e-3,
        "model": str(tmp_path / "model"),
        "log": [str(tmp_path / "returnn.log")],
    }
    path = tmp_path / "returnn.config"
    write_config_file(real_models.returnn_config([corpus.serializers(name)["train"]], **entries), str(path))
    done = subprocess.run(
        [sys.executable, os.path.join(RETURNN_ROOT, "rnn.py"), str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (tmp_path / "model.001.index").exists()


@pytest.mark.parametrize("name", real_models.NAMES)
def test_hash_is_the_same_in_another_process(corpus, name):
    other = corpus.other_process_hashes()
    for scheme in HASH_SCHEMES:
        for key, serializer in corpus.serializers(name, scheme).items():
            assert serializer._sis_hash().hex() == other[f"{name} {key} {scheme}"], (key, scheme)

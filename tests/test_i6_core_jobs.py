"""The serializer inside i6_core's own jobs, which copy the ReturnnConfig, add their options and write it
themselves: the written file holds the serializer's code and RETURNN constructs the network from it."""

from __future__ import annotations

import sys

import pytest
from i6_core.returnn.config import ReturnnConfig
from i6_core.returnn.forward import ReturnnForwardJobV2
from i6_core.returnn.search import ReturnnSearchJobV2
from i6_core.returnn.training import Checkpoint, ReturnnTrainingJob
from sisyphus import tk

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._verify.returnn_check import construct_networks
from tests import rc_models
from tests.support.sisyphus_setup import REPO

RETURNN_ROOT = tk.Path(str(REPO / ".deps" / "src" / "returnn"))
PYTHON = tk.Path(sys.executable)


def _config() -> ReturnnConfig:
    from returnn_common import nn

    extern_data, network = rc_models.task12ax_lstm()
    serializer = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    config = {"use_tensorflow": True, "behavior_version": nn.min_returnn_behavior_version, "batch_size": 1000}
    return ReturnnConfig(config, python_prolog=[serializer], black_formatting=False)


def _job_configs(config: ReturnnConfig) -> dict[str, tuple[object, ReturnnConfig]]:
    """Each job and the ReturnnConfig it writes in its create_files task."""
    train = ReturnnTrainingJob(config, num_epochs=2, device="cpu", returnn_root=RETURNN_ROOT, returnn_python_exe=PYTHON)
    forward = ReturnnForwardJobV2(
        model_checkpoint=None,
        returnn_config=config,
        returnn_python_exe=PYTHON,
        returnn_root=RETURNN_ROOT,
        output_files=["output.hdf"],
        device="cpu",
    )
    search = ReturnnSearchJobV2(
        search_data={"class": "Task12AXDataset", "num_seqs": 5},
        model_checkpoint=Checkpoint(tk.Path("/nonexistent/epoch.002.index")),
        returnn_config=config,
        returnn_python_exe=PYTHON,
        returnn_root=RETURNN_ROOT,
        device="cpu",
    )
    return {
        "train": (train, train.returnn_config),
        "forward": (forward, forward.create_returnn_config(**{**forward._sis_kwargs, "returnn_config": config})),
        "search": (search, search.returnn_config),
    }


@pytest.mark.parametrize("name", ["train", "forward", "search"])
def test_job_writes_the_serializer_and_returnn_constructs_it(name, tmp_path):
    config = _config()
    job, job_config = _job_configs(config)[name]
    path = tmp_path / "returnn.config"
    job_config.write(str(path))
    text = path.read_text()
    assert config.python_prolog[0].get() in text
    assert "output" in construct_networks(str(path), quiet=True)[1]
    assert _job_configs(_config())[name][0] is job  # a fresh model built the same way: the same job (hash)


def _training_job(config: ReturnnConfig) -> ReturnnTrainingJob:
    return ReturnnTrainingJob(config, num_epochs=2, device="cpu", returnn_root=RETURNN_ROOT, returnn_python_exe=PYTHON)


def test_a_checked_config_is_checked_when_i6_core_writes_it_and_hashes_as_a_plain_one(tmp_path):
    from i6_rc_jobs import CheckedReturnnConfig

    plain = _config()
    plain.config["learning_rate"] = 0.5  # not the other tests' job (i6_core's write merged its post_config in place)
    checked = CheckedReturnnConfig(dict(plain.config), python_prolog=plain.python_prolog, black_formatting=False)
    job = _training_job(checked)
    assert job is _training_job(plain)  # the same hash: the same job
    path = tmp_path / "returnn.config"
    job.returnn_config.write(str(path))
    assert "output" in construct_networks(str(path), quiet=True)[1]
    with pytest.raises(SerializationError, match=r"^returnn_config.config: config keys \['network'\] are also defined"):
        CheckedReturnnConfig(
            {**plain.config, "network": {"output": {"class": "copy"}}}, python_prolog=plain.python_prolog
        )
    shadowing = CheckedReturnnConfig(dict(plain.config), python_prolog=plain.python_prolog)
    shadowing.config["float"] = 1.0  # after it was made: i6_core's writing of the job's copy refuses it
    with pytest.raises(SerializationError, match=r"config keys \['float'\] would replace the builtins the code of"):
        _training_job(shadowing).create_files()

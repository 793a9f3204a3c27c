"""CreateConfigJob: writes a ReturnnConfig holding ReturnnCommonSerializers to config.py, in a cheap job."""

from __future__ import annotations

from i6_core.returnn.config import ReturnnConfig
from sisyphus import Job, Task

from ..serialization.config_file import serializers_in, write_config_file


class CreateConfigJob(Job):
    """Writes ``out_config`` (first line ``#!rnn.py``) in a mini task that needs neither returnn_common nor
    TensorFlow, so that a broken config fails here and not after a cluster queue wait. With ``check=True`` a second
    task loads the written file with RETURNN and constructs the network of every stage."""

    __sis_hash_exclude__ = {"check": False}

    def __init__(self, returnn_config: ReturnnConfig, *, check: bool = False):
        """
        :param returnn_config: the config; its hash is this job's hash
        :param check: also construct the networks with RETURNN (needs TensorFlow in the worker)
        """
        if not isinstance(returnn_config, ReturnnConfig):
            raise TypeError(f"CreateConfigJob needs an i6_core ReturnnConfig, got {type(returnn_config).__name__}")
        self.returnn_config = returnn_config
        self.check = check
        self.out_config = self.output_path("returnn.config")

    def tasks(self):
        yield Task("run", mini_task=True)
        if self.check:
            yield Task("check_networks", rqmt={"cpu": 1, "mem": 4, "time": 0.5})

    def run(self):
        write_config_file(self.returnn_config, self.out_config.get_path())

    def check_networks(self):
        from ..returnn_check import construct_networks

        epochs = sorted({epoch for s in serializers_in(self.returnn_config) for epoch in s.stage_epochs()}) or [1]
        layers = construct_networks(self.out_config.get_path(), epochs=epochs)
        for epoch, names in sorted(layers.items()):
            print(f"epoch {epoch}: RETURNN constructed {len(names)} layers")

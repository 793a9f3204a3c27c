"""The inputs that the pages' console examples are run on (see ``tests/support/console.py``): each scenario makes
them in a fresh directory with the real stack and returns the directory the commands run in."""

from __future__ import annotations

import pathlib
from typing import Callable

from i6_rc_jobs import ReturnnCommonSerializer
from tests.support.sisyphus_setup import make_setup, run_manager


def config_jobs(directory: pathlib.Path) -> pathlib.Path:
    """A setup whose manager made CreateConfigJobs aliased a, b (model size 2048, learning rate 0.02) and c (= a)."""
    setup = make_setup(
        directory,
        """
        from sisyphus import tk
        from i6_core.returnn.config import ReturnnConfig
        from i6_rc_jobs import CreateConfigJob
        from tests.support.cases import encoder_decoder


        def main():
            for name, lr, model in (("a", 0.01, 256), ("b", 0.02, 2048), ("c", 0.01, 256)):
                serializer = encoder_decoder()
                serializer.network["enc"]["subnetwork"]["ff"]["out_dim"].size = model
                config = ReturnnConfig({"learning_rate": lr}, python_prolog=[serializer], black_formatting=False)
                CreateConfigJob(config).add_alias(name)
                tk.register_output(name, CreateConfigJob(config).out_config)
        """,
    )
    done = run_manager(setup)
    assert (setup / "output" / "b").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    return setup


def renamed_loss(directory: pathlib.Path) -> pathlib.Path:
    """``before/returnn.config`` and ``after/returnn.config``: one network, its loss layer named otherwise."""
    from tests.test_graph_rules import CASES, EXTERN_DATA

    net = {name: layer for name, layer in CASES["unset-options"][0].items() if name != "loss"}
    for side, loss in (("before", "cross_entropy"), ("after", "ce")):
        network = {**net, loss: CASES["unset-options"][0]["loss"]}
        (directory / side).mkdir()
        (directory / side / "returnn.config").write_text(
            ReturnnCommonSerializer(extern_data=EXTERN_DATA, network=network).get()
        )
    return directory


SCENARIOS: dict[str, Callable[[pathlib.Path], pathlib.Path]] = {
    "hash-diff-dims": config_jobs,
    "same-model-losses": renamed_loss,
}

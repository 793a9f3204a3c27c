"""A researcher's first setup, mistake by mistake, in the real Sisyphus manager: each fails where it is made, in
one line that names the fix."""

from __future__ import annotations

import subprocess
import sys

from tests.support.sisyphus_setup import REPO, job_dirs, make_setup, run_manager


def _manager_said(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


def test_a_training_left_at_i6_cores_device_gpu_on_a_machine_without_one_fails_in_one_line(tmp_path):
    """i6_core's ReturnnTrainingJob asks for a GPU by default; Sisyphus's LocalEngine would queue it and wait
    forever. The example's engine refuses it once, and the manager stops."""
    setup = make_setup(
        tmp_path,
        """
        from sisyphus import tk
        from tests.support.training import task12ax_config, training


        def main():
            train = training(task12ax_config(), device="gpu")  # i6_core's default, as the README's pattern had it
            tk.register_output("learning_rates", train.out_learning_rates)
        """,
    )
    said = _manager_said(run_manager(setup, timeout=300))
    refused = [line for line in said.splitlines() if "can never run here" in line]
    assert len(refused) == 1, said[-3000:]
    assert "ReturnnTrainingJob" in refused[0] and "asks for {'gpu': 1}" in refused[0], refused
    assert "ever has ({'gpu': 0})" in refused[0] and "device='cpu'" in refused[0], refused
    assert "device is not hashed, so remove the job's directory" in refused[0]
    assert "Requested resources are higher than maximal available" not in said
    assert "There is nothing I can do" in said, said[-3000:]
    (train,) = job_dirs(setup, "ReturnnTrainingJob")
    assert not list(train.glob("log.run.*"))

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


def test_a_failing_check_stops_the_training_that_waits_for_it_and_fails_where_rnn_py_would(tmp_path):
    """A training given the check's config file as an input (``train.add_input(check.out_config)``) waits for the
    check: after a failed one (a layer class RETURNN does not know) it never starts, after a good one it starts once
    the check is done, and in either case it has the hash it has without waiting (Sisyphus hashes a job's
    arguments, not the inputs added later). Without ``use_tensorflow``, rnn.py stops at once ("No backend
    defined"), and so does the check, in one line."""
    setup = make_setup(
        tmp_path,
        """
        from sisyphus import tk
        from i6_rc_jobs import CreateConfigJob
        from tests.support.training import checked_training, task12ax_config


        def main():
            for name, config in (("bad", task12ax_config("no_such_layer")), ("good", task12ax_config())):
                check, train = checked_training(config, wait_for_check=True)
                check.add_alias(f"{name}/check")
                train.add_alias(f"{name}/train")
                tk.register_output(f"{name}/learning_rates", train.out_learning_rates)
            check = CreateConfigJob(task12ax_config(use_tensorflow=False), check=True)
            check.add_alias("no-backend")
            tk.register_output("no-backend.config", check.out_config)
        """,
    )
    said = _manager_said(run_manager(setup, timeout=600))
    bad, good = setup / "alias" / "bad", setup / "alias" / "good"
    assert (bad / "check" / "error.check_networks.1").exists(), said[-3000:]
    log = (bad / "check" / "log.check_networks.1").read_text()
    assert "epoch 1, layer 'ff0'" in log and "no_such_layer" in log, log[-2000:]
    log = (setup / "alias" / "no-backend" / "log.check_networks.1").read_text()
    (last,) = [line for line in log.splitlines() if line.startswith("error: ")]
    assert "rnn.py selects no backend: Exception: No backend defined" in last, log[-2000:]
    assert "'use_tensorflow': True" in last
    assert not (bad / "train").exists() or not list((bad / "train").glob("log.run.*"))

    assert (good / "train" / "finished.run.1").exists(), said[-3000:]
    checked = (good / "check" / "finished.check_networks.1").stat().st_mtime
    assert checked <= (good / "train" / "log.run.1").stat().st_mtime

    from tests.support.training import checked_training, task12ax_config

    _, alone = checked_training(task12ax_config(), wait_for_check=False)
    assert (good / "train").resolve() == setup / "work" / alone._sis_id()


def test_the_check_command_fails_where_rnn_py_fails(tmp_path):
    """The check's own process (``returnn_check.py CONFIG``, what CreateConfigJob runs) against rnn.py on the same
    written file without ``use_tensorflow``: both stop before any layer."""
    from i6_rc_jobs import returnn_check
    from i6_rc_jobs.serialization.config_file import write_config_file
    from tests.support.training import task12ax_config

    config = str(tmp_path / "returnn.config")
    write_config_file(task12ax_config(use_tensorflow=False), config)
    rnn_py = subprocess.run(
        [sys.executable, str(REPO / ".deps" / "src" / "returnn" / "rnn.py"), config], capture_output=True, text=True
    )
    assert rnn_py.returncode != 0 and "No backend defined" in rnn_py.stdout + rnn_py.stderr
    check = subprocess.run([sys.executable, returnn_check.__file__, config], capture_output=True, text=True)
    assert check.returncode == 1
    assert check.stderr.strip().splitlines()[-1] == (
        f"error: {config}: rnn.py selects no backend: Exception: No backend defined. Please set the config option "
        "'backend'. (a net dict needs 'use_tensorflow': True or 'backend': 'tensorflow-net-dict' in the config)"
    )
    write_config_file(task12ax_config(), config)
    check = subprocess.run([sys.executable, returnn_check.__file__, config], capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.splitlines()[-1].startswith("epoch 1: RETURNN constructed "), check

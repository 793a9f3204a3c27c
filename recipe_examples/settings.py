"""Sisyphus settings for the example setup: every task runs locally (or, with I6_RC_ENGINE=slurm, every task but
the mini tasks on Slurm), nothing asks questions.

Sisyphus executes this file inside ``sisyphus.global_settings`` (manager and workers), so the names
below replace its defaults. See .deps/src/sisyphus/sisyphus/global_settings.py for all settings.
"""

import os
import sys

from i6_rc_jobs import install_failure_hints

# A failure in a config that passed through a returnn_common nn which rc_compat.apply was not applied to ends in the
# line naming the fix, and `sis manager` exits with status 1 when the config fails (Sisyphus's own main exits 0).
install_failure_hints()

_ENGINE = os.environ.get("I6_RC_ENGINE", "local")
if _ENGINE not in ("local", "slurm"):
    raise ValueError(f"I6_RC_ENGINE={_ENGINE!r}: choose local (the default) or slurm")


def engine():
    import logging
    import socket

    from sisyphus.global_settings import STATE_QUEUE_ERROR
    from sisyphus.localengine import LocalEngine

    class FittingLocalEngine(LocalEngine):
        """Sisyphus's LocalEngine, which queues a task that asks for more than it has and then waits for it forever
        (warning "Requested resources are higher than maximal available" every second): this one refuses such a
        task in one line, and the manager, with nothing left to run, stops."""

        def __init__(self, **resources):
            super().__init__(**resources)
            self.refused: set[tuple[str, int]] = set()

        def submit_call(self, call, logpath, rqmt, name, task_name, task_ids):
            over = {key: rqmt[key] for key, most in self.max_resources.items() if rqmt.get(key, 0) > most}
            if not over:
                return super().submit_call(call, logpath, rqmt, name, task_name, task_ids)
            has = {key: self.max_resources[key] for key in over}
            logging.error(
                f"{name}: asks for {over}, more than this machine's engine ever has ({has}), so it can never run here: lower its "
                "requirements (a ReturnnTrainingJob without a GPU: device='cpu'; device is not hashed, so remove the "
                "job's directory from work/ first if it ran before)"
            )
            self.refused.update((name, task_id) for task_id in task_ids)
            return "local", socket.gethostname()

        def task_state(self, task, task_id):
            if (task.task_name(), task_id) in self.refused:
                return STATE_QUEUE_ERROR
            return super().task_state(task, task_id)

    if _ENGINE == "slurm":
        from sisyphus.engine import EngineSelector
        from sisyphus.simple_linux_utility_for_resource_management_engine import (
            SimpleLinuxUtilityForResourceManagementEngine,
        )

        # Mini tasks (CreateConfigJob) run in the manager's machine, the rest is submitted with sbatch.
        slurm = SimpleLinuxUtilityForResourceManagementEngine(default_rqmt={"cpu": 1, "mem": 2, "time": 1})
        return EngineSelector(engines={"short": FittingLocalEngine(cpus=1), "long": slurm}, default_engine="long")
    # One local engine for every task (mini tasks included). 2 CPUs and 16 GB fit a 24 GB machine; a task asking
    # for more (or for a GPU) is refused in one line.
    return FittingLocalEngine(cpus=2, gpus=0, mem=16)


# Workers start with a cleaned environment: only DEFAULT_ENVIRONMENT_KEEP survives and DEFAULT_ENVIRONMENT_SET
# is added. The workers (and the RETURNN processes they start) use the python of the manager, i.e. .venv,
# which finds sisyphus, i6_core, returnn and returnn_common through its .pth file: no PYTHONPATH needed.
# The import cache's location is kept, so that workers find the versions the manager imported (i6_rc_jobs.import_),
# and the engine choice, so that workers read these settings as the manager does.
_python_bin = os.path.dirname(sys.executable)
DEFAULT_ENVIRONMENT_KEEP = {
    "HOME",
    "PWD",
    "USER",
    "TMP",
    "TMPDIR",
    "I6_RC_IMPORTS_CACHE",
    "I6_RC_IMPORTS_DEV",
    "I6_RC_ENGINE",
}
DEFAULT_ENVIRONMENT_SET = {
    "PATH": ":".join([_python_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
    "LANG": "C.UTF-8",
    "SHELL": "/bin/bash",
    "OMP_NUM_THREADS": 1,
    "MKL_NUM_THREADS": 1,
    # No GPU: otherwise RETURNN compiles its native TF ops (NativeLstm2) with nvcc if it finds one, and fails.
    # (On a cluster with GPUs, keep CUDA_VISIBLE_DEVICES instead: Slurm sets it to the GPUs a job got.)
    "CUDA_VISIBLE_DEVICES": "",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}

if _ENGINE == "local":
    # Local disk, small jobs: short waits instead of the defaults, which are meant for network file systems and
    # clusters (and kept for them).
    WAIT_PERIOD_BETWEEN_CHECKS = 2
    WAIT_PERIOD_CACHE = 1
    WAIT_PERIOD_JOB_FS_SYNC = 1
    WAIT_PERIOD_JOB_CLEANUP = 1
    WAIT_PERIOD_MTIME_OF_INPUTS = 0

# Keep finished job directories as they are (logs readable, no finished.tar.gz).
JOB_AUTO_CLEANUP = False
# The default log/finished.log would add a log/ directory next to settings.py.
FINISHED_LOG = "output/finished.log"
# Plain tracebacks in logs (the default IPython one is long and colored).
USE_VERBOSE_TRACEBACK = False

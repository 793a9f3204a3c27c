"""CreateConfigJob: writes a ReturnnConfig holding ReturnnCommonSerializers to config.py, in a cheap job."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional

from i6_core.returnn.config import ReturnnConfig
from sisyphus import Job, Task, tk
from sisyphus import global_settings as gs

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._verify import returnn_check, torch_check
from i6_rc_jobs.jobs.config_file import backend_of, check_config, serializers_in, write_config_file
from i6_rc_jobs.jobs.module_paths import check_importable


class CreateConfigJob(Job):
    """Writes ``out_config`` (first line ``#!rnn.py``) in a mini task that needs neither returnn_common nor
    TensorFlow, so that a broken config fails here and not after a cluster queue wait. With ``check=True`` a second
    task loads the written file with RETURNN and constructs the network of every stage, with the RETURNN and the
    Python the setup trains with (as i6_core's RETURNN jobs take them), in a process of its own; for a config with
    ``backend = "torch"`` it runs the config's ``train_step`` and/or ``forward_step`` on one batch on CPU instead
    (:mod:`i6_rc_jobs._verify.torch_check`), and writes the parameters' names, shapes and count to ``out_check_report``.
    A failed check says why in one line (for a torch config: the stage and the frame of the model's code); everything
    the check printed is in ``out_check_log``.
    """

    __sis_hash_exclude__ = {"check": False, "returnn_root": None, "returnn_python_exe": None}
    #: (None in the pickles of jobs made before it was an output, which a worker may still run)
    out_check_log: Optional[tk.Path] = None

    def __init__(
        self,
        returnn_config: ReturnnConfig,
        *,
        check: bool = False,
        returnn_root: Optional[tk.Path] = None,
        returnn_python_exe: Optional[tk.Path] = None,
    ):
        """
        :param returnn_config: the config; its hash is this job's hash
        :param check: also construct the networks with RETURNN (needs TensorFlow where it runs)
        :param returnn_root: the RETURNN checkout the check imports, as given to i6_core's RETURNN jobs; default:
            the settings' ``RETURNN_ROOT``, else the RETURNN that the check's Python imports
        :param returnn_python_exe: the Python (or wrapper script) the check runs in; default: the settings'
            ``RETURNN_PYTHON_EXE``, else the worker's own
        """
        if not isinstance(returnn_config, ReturnnConfig):
            raise TypeError(f"CreateConfigJob needs an i6_core ReturnnConfig, got {type(returnn_config).__name__}")
        check_config(returnn_config)  # what writing would refuse, said when the job is made
        check_importable(serializers_in(returnn_config))  # what RETURNN and the worker import, said here too
        self.returnn_config = returnn_config
        self.check = check
        self.returnn_root = returnn_root
        self.returnn_python_exe = returnn_python_exe
        self.out_config = self.output_path("returnn.config")
        if check:
            self.out_check_log = self.output_path("check.log")
        if check and backend_of(returnn_config) == "torch":
            self.out_check_report = self.output_path("check_report.json")

    def tasks(self):
        yield Task("run", mini_task=True)
        if self.check:
            yield Task("check_networks", rqmt={"cpu": 1, "mem": 4, "time": 0.5})

    def run(self):
        write_config_file(self.returnn_config, self.out_config.get_path())

    def check_networks(self):
        epochs = sorted({epoch for s in serializers_in(self.returnn_config) for epoch in s.stage_epochs()}) or [1]
        root = self.returnn_root or getattr(gs, "RETURNN_ROOT", None)
        python = self.returnn_python_exe or getattr(gs, "RETURNN_PYTHON_EXE", None) or sys.executable
        env = dict(os.environ)
        if root is not None:  # before the Python's own paths, as rnn.py of that checkout would import it
            env["PYTHONPATH"] = os.pathsep.join([os.fspath(root), *filter(None, [env.get("PYTHONPATH")])])
        if backend_of(self.returnn_config) == "torch":
            report = ["--report", self.out_check_report.get_path()]
            command = [os.fspath(python), torch_check.__file__, self.out_config.get_path(), *report]
        else:
            command = [os.fspath(python), returnn_check.__file__, self.out_config.get_path(), "--epochs"]
            command += map(str, epochs)
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        log = "" if self.out_check_log is None else f" (the whole log: {self.out_check_log.get_path()})"
        if self.out_check_log is not None:
            write_atomically(self.out_check_log.get_path(), (done.stdout + done.stderr).encode())
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()
            errors = [line for line in said if line.startswith("error: ")]
            last = (errors or said or [f"exit status {done.returncode}"])[-1]
            raise RuntimeError(f"CreateConfigJob check with {os.fspath(python)}: {last}{log}")

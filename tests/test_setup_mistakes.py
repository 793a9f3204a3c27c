"""A researcher's first setup, mistake by mistake, in the real Sisyphus manager: each fails where it is made, in
one line that names the fix."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.sisyphus_setup import REPO, end_with_children, job_dirs, make_setup, run_manager

pytestmark = pytest.mark.slow  # each runs a Sisyphus manager, the check or a script with RETURNN


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

    from tests.support.training import task12ax_config, training

    # What the line says of the fix: the job with device="cpu" is this one (its directory is reused).
    assert (setup / "work" / training(task12ax_config(), device="cpu")._sis_id()) == train


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
    from i6_rc_jobs._verify import returnn_check
    from i6_rc_jobs.jobs.config_file import write_config_file
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
    assert check.stderr == "" and len(check.stdout.splitlines()) == 2  # what RETURNN printed is kept back


TRANSFORMER = """
from returnn_common import nn
{apply}
from i6_rc_jobs import ReturnnCommonSerializer, SerializationError

nn.reset_default_root_name_ctx()
time_dim, model_dim = nn.SpatialDim("time"), nn.FeatureDim("model", 16)
data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, model_dim]))
attention = nn.SelfAttention(model_dim, proj_dim=model_dim, key_dim_total=model_dim, value_dim_total=model_dim, num_heads=2)
layer = nn.TransformerEncoderLayer(model_dim, self_attention=attention, ff_dim=nn.FeatureDim("ff", 32))
encoder = nn.TransformerEncoder(layer, num_layers=1, norm=None)
encoder(data, axis=time_dim).mark_as_default_output()
try:
    ReturnnCommonSerializer.from_returnn_common(encoder)
    print("serialized")
except SerializationError as e:
    print(e)
"""


def _transformer_serialized(apply: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", TRANSFORMER.format(apply=apply)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_a_model_built_with_an_nn_that_rc_compat_was_not_applied_to_is_refused_when_serialized():
    """A Transformer builds without ``rc_compat.apply`` (a Conformer does not): serializing it says what is missing
    and the call, before any job holds it."""
    assert _transformer_serialized("") == (
        "from_returnn_common: returnn_common.nn was not made to build with this RETURNN (nn.Loop and nn.Cond "
        "(RETURNN's ControlFlowContext needs an identifier); nn.gating, the Conformer's GLU (RETURNN makes "
        "2*model//2 a dim of its own)): call nn = rc_compat.apply(nn) (from i6_rc_jobs import rc_compat) before "
        "building the model"
    )
    assert _transformer_serialized("from i6_rc_jobs import rc_compat; nn = rc_compat.apply(nn)") == "serialized"


def test_a_config_without_behavior_version_is_refused_when_it_is_made():
    """returnn_common's dicts need its behavior version; without it RETURNN failed inside 'dot', in the check."""
    import pytest

    from i6_rc_jobs import CheckedReturnnConfig, ReturnnCommonSerializer, SerializationError
    from tests import rc_models

    nn = rc_models.nn
    nn.reset_default_root_name_ctx()
    time_dim, in_dim = nn.SpatialDim("time"), nn.FeatureDim("input", 9)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    model = nn.Linear(in_dim, nn.FeatureDim("out", 2))
    model(data).mark_as_default_output()
    serializer = ReturnnCommonSerializer.from_returnn_common(model)
    needed = nn.min_returnn_behavior_version
    with pytest.raises(SerializationError) as raised:
        CheckedReturnnConfig({"use_tensorflow": True}, python_prolog=[serializer])
    assert str(raised.value) == (
        "returnn_config.config['behavior_version']: missing: returnn_common's net dicts need RETURNN's "
        f'behavior_version {needed} or higher, without it RETURNN fails inside a layer: add "behavior_version": '
        f"nn.min_returnn_behavior_version ({needed}) in the config"
    )
    with pytest.raises(SerializationError, match=r"^returnn_config.post_config\['behavior_version'\]: 12 is lower"):
        CheckedReturnnConfig({"use_tensorflow": True}, {"behavior_version": 12}, python_prolog=[serializer])
    CheckedReturnnConfig({"use_tensorflow": True, "behavior_version": needed}, python_prolog=[serializer])


CONFIG_BUILDING_A_MODEL = """
from i6_rc_jobs import ReturnnCommonSerializer
from tests.support import unapplied


def main():
    {call}
"""
HINT = (
    "hint: returnn_common.nn was not made to build with this RETURNN (nn.Loop and nn.Cond (RETURNN's "
    "ControlFlowContext needs an identifier); nn.gating, the Conformer's GLU (RETURNN makes 2*model//2 a dim of its "
    "own)): call nn = rc_compat.apply(nn) (from i6_rc_jobs import rc_compat) before building the model"
)


def test_a_conformer_built_in_the_config_without_rc_compat_ends_the_manager_in_the_fix(tmp_path):
    """The Conformer fails deep inside returnn_common (``2*model//2``), in the manager loading the config: its
    report ends in the line naming the fix, and the manager exits 1 (Sisyphus's own main returns 0 after it)."""
    setup = make_setup(tmp_path / "conformer", CONFIG_BUILDING_A_MODEL.format(call="unapplied.conformer()"))
    proc = run_manager(setup, timeout=300)
    assert "2*model//2" in proc.stderr and "ReturnnConstructTemplateException" in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.rstrip().splitlines()[-1] == HINT
    assert proc.returncode == 1

    # A config failing elsewhere: no hint, and still not exit status 0.
    call = "raise ValueError('a mistake of the config')"
    proc = run_manager(make_setup(tmp_path / "other", CONFIG_BUILDING_A_MODEL.format(call=call)), timeout=300)
    assert proc.stderr.rstrip().splitlines()[-1] == "ValueError: a mistake of the config", proc.stderr[-3000:]
    assert "rc_compat" not in proc.stderr and proc.returncode == 1


def test_a_loop_without_rc_compat_in_a_script_ends_in_the_fix():
    """nn.Loop without ``rc_compat.apply`` fails with RETURNN's TypeError about ``identifier``: outside Sisyphus as
    well, once the script installed the failure hints, Python's report of it ends in the fix, and the exit status is
    Python's (1)."""
    script = """
from returnn_common import nn
import i6_rc_jobs

i6_rc_jobs.install_failure_hints()

time_dim, model_dim = nn.SpatialDim("time"), nn.FeatureDim("model", 4)
data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, model_dim]))
with nn.Loop(axis=time_dim) as loop:
    loop.stack(loop.unstack(data)).mark_as_default_output()
"""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, env=env)
    last_two = done.stderr.rstrip().splitlines()[-2:]
    assert "missing 1 required keyword-only argument: 'identifier'" in last_two[0], done.stderr[-3000:]
    assert last_two[1] == HINT and done.returncode == 1


LOCKER = """
import sys, time
from returnn.util.basic import LockFile

LockFile(sys.argv[1]).lock()
print("locked", flush=True)
time.sleep(600)
"""


def test_a_lock_left_by_a_killed_compile_is_said_in_one_line_by_the_check(tmp_path):
    """A RETURNN that was killed while it held its native-op lock (compiling NativeLstm2) leaves ``lock_file``, on
    which every later RETURNN waits for an hour, saying nothing the check shows: the check names the lock to remove.
    A lock that a live RETURNN holds is not named."""
    from i6_rc_jobs._verify import returnn_check
    from i6_rc_jobs.jobs.config_file import write_config_file
    from tests.support.training import task12ax_config

    cache = tmp_path / "cache"
    dead, live = cache / "returnn_tf_cache" / "ops" / "NativeLstm2" / "0123", cache / "returnn_native" / "Op" / "4567"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3", "RETURNN_CACHE_DIR": str(cache)}
    holders = [
        subprocess.Popen([sys.executable, "-c", LOCKER, str(d)], stdout=subprocess.PIPE, text=True, env=env)
        for d in (dead, live)
    ]
    try:
        assert [holder.stdout.readline() for holder in holders] == ["locked\n"] * 2
        holders[0].kill()
        holders[0].wait()
        for lock in (dead / "lock_file", live / "lock_file"):
            os.utime(lock, (lock.stat().st_atime, lock.stat().st_mtime - 60))  # older than a lock being released
        config = str(tmp_path / "returnn.config")
        write_config_file(task12ax_config(), config)
        check = subprocess.run(
            [sys.executable, returnn_check.__file__, config], capture_output=True, text=True, env=env
        )
    finally:
        for holder in holders:
            end_with_children(holder.pid)
    assert check.returncode == 0, check.stderr[-3000:]
    assert check.stderr == (
        f"warning: {dead / 'lock_file'}: a RETURNN lock that no process on this machine holds (a native-op compile "
        f"that was killed); RETURNN waits up to 1 h for it to age, so remove it: rm {dead / 'lock_file'}\n"
    )


def test_a_failing_task_of_a_worker_is_reported_as_sisyphus_reports_it(tmp_path):
    """The hook that importing i6_rc_jobs chains into a worker changes nothing of a failed task: the worker reports
    it and marks the task failed, and the manager, with nothing left to run, stops (as Sisyphus does, status 0)."""
    setup = make_setup(
        tmp_path,
        """
        from sisyphus import Job, Task, tk
        import i6_rc_jobs


        class Failing(Job):
            def __init__(self):
                self.out = self.output_path("out")

            def tasks(self):
                yield Task("run", mini_task=True)

            def run(self):
                raise ValueError("a failing task")


        def main():
            tk.register_output("out", Failing().out)
        """,
    )
    proc = run_manager(setup, python_path=str(setup), timeout=300)
    (job,) = job_dirs(setup, "Failing")
    assert (job / "error.run.1").exists(), _manager_said(proc)[-3000:]
    log = (job / "log.run.1").read_text()
    assert "ValueError: a failing task" in log and "rc_compat" not in log, log[-2000:]
    assert "There is nothing I can do" in proc.stderr and proc.returncode == 0


RAW_DIM_FIX = (
    "is written as its repr, which is no Python code: put the network into a ReturnnCommonSerializer in "
    "python_prolog, which writes dims as code (or use its DimRefs)"
)


class _Braced:
    """A value whose repr, as i6_core writes it, does not parse back."""

    def __repr__(self) -> str:
        return "Braced{1}"


def test_a_raw_returnn_dim_or_a_repr_that_is_no_code_in_a_config_is_refused_when_it_is_made():
    """i6_core writes a config value by its repr: a RETURNN Dim (``Dim{B}``) failed only in the worker with a
    SyntaxError. A plain ReturnnConfig is refused by CreateConfigJob, a CheckedReturnnConfig when made; a value
    whose repr is code (also over lines, or a CodeWrapper of a value not computed yet) is accepted."""
    import pytest
    from i6_core.returnn.config import CodeWrapper, ReturnnConfig
    from returnn.tensor import Dim, batch_dim
    from sisyphus import tk

    from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob, SerializationError

    out_dim = Dim(5, name="out")
    path = "returnn_config.config['network']['enc']['out_dim']"
    for value, said in (
        (out_dim, f"{path}: Dim{{'out'(5)}} (type returnn.tensor.dim.Dim) {RAW_DIM_FIX}"),
        (batch_dim, f"{path}: Dim{{B}} (type returnn.tensor.dim.Dim) {RAW_DIM_FIX}"),
        (
            _Braced(),
            f"{path}: Braced{{1}} (type tests.test_setup_mistakes._Braced) is written as its repr, which is no Python "
            "code: use a plain value, or a CodeWrapper of the code that makes it",
        ),
    ):
        config = {"network": {"enc": {"class": "linear", "from": "data", "out_dim": value}}}
        with pytest.raises(SerializationError) as raised:
            CreateConfigJob(ReturnnConfig(config))
        assert str(raised.value) == said
        with pytest.raises(SerializationError) as raised:
            CheckedReturnnConfig(config)
        assert str(raised.value) == said
    fine = {"a": CodeWrapper("max(\n  1, 2)  # over lines"), "b": CodeWrapper(tk.Variable("not/computed/yet"))}
    CreateConfigJob(ReturnnConfig({"network": {"enc": fine}}))
    CheckedReturnnConfig({"network": {"enc": fine}})


def test_a_raw_returnn_dim_in_a_plain_config_ends_the_manager_in_one_line(tmp_path):
    """The researcher's trap in the real manager: a net dict with a RETURNN Dim in a plain i6_core ReturnnConfig.
    The manager stops loading the config with the line that names the path and the fix; no job is made."""
    setup = make_setup(
        tmp_path,
        """
        from i6_core.returnn.config import ReturnnConfig
        from returnn.tensor import Dim
        from sisyphus import tk

        from i6_rc_jobs import CreateConfigJob


        def main():
            out_dim = Dim(5, name="out")
            network = {"enc": {"class": "linear", "from": "data", "out_dim": out_dim}}
            job = CreateConfigJob(ReturnnConfig({"network": network}))
            tk.register_output("returnn.config", job.out_config)
        """,
    )
    proc = run_manager(setup, timeout=300)
    assert proc.stderr.rstrip().splitlines()[-1] == (
        "i6_rc_jobs._serialization.errors.SerializationError: returnn_config.config['network']['enc']['out_dim']: "
        f"Dim{{'out'(5)}} (type returnn.tensor.dim.Dim) {RAW_DIM_FIX}"
    ), proc.stderr[-3000:]
    assert proc.returncode == 1 and not job_dirs(setup, "CreateConfigJob")

"""The example on a real one-node Slurm cluster (recipe_examples/slurm/cluster.sh) through Sisyphus's Slurm engine:
the same outputs and job hashes as on the local engine, the training run as a Slurm job, a killed training resumed by
the next manager run, and a worker whose import cache lacks a version saying what to fetch.

They need a Debian machine where they run as root (cluster.sh installs Debian's slurm-wlm and munge if missing, and
starts the daemons); elsewhere they skip, saying why, unless I6_RC_REQUIRE_SLURM=1 (as in CI: .ci/run), which makes
that a failure. The machine is left as it was: a cluster that was up stays up, one brought up here is taken down, and
what bringing it up added (packages, munged, slurm.conf, state and log directories) is removed again.

The setups get the example's settings.py plus the short waits of the local run (the cluster is this machine, with a
local disk), and a short usage-file period, so that a killed task is seen as interrupted after seconds, not a minute:
with Sisyphus's default waits the example takes about twice as long on Slurm.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.support.sisyphus_setup import make_setup, run_manager
from tests.test_sisyphus_stack import EXAMPLES, VENV, _example_num_epochs, _tail, example_epochs

CLUSTER_SH = EXAMPLES / "slurm" / "cluster.sh"
#: What cluster.sh up may add to the machine (see the script), removed again if it was not there before.
CLUSTER_PATHS = [Path(p) for p in ("/etc/slurm/slurm.conf", "/var/spool/i6-rc-slurm", "/var/log/slurm", "/run/munge")]
MUNGED_PID = Path("/run/munge/munged.pid")
SHORT_WAITS = """
# tests/test_slurm.py: a one-node cluster on this machine's local disk, so the local run's short waits; and the
# workers' usage file every 5 s (default 60), so that a killed task counts as interrupted after seconds.
WAIT_PERIOD_BETWEEN_CHECKS = 2
WAIT_PERIOD_CACHE = 1
WAIT_PERIOD_JOB_FS_SYNC = 1
WAIT_PERIOD_JOB_CLEANUP = 1
WAIT_PERIOD_MTIME_OF_INPUTS = 0
PLOGGING_UPDATE_FILE_PERIOD = 5
"""
TRAIN = "i6_core/returnn/training/ReturnnTrainingJob."

pytestmark = pytest.mark.slurm


def _not_possible_here() -> str | None:
    """Why this machine cannot have the one-node cluster, if it cannot."""
    if not Path("/etc/debian_version").is_file():
        return "not a Debian machine (cluster.sh installs Debian's slurm-wlm and munge)"
    if os.geteuid() != 0:
        return "not root (cluster.sh writes /etc/slurm/slurm.conf and starts the Slurm daemons)"
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        return "neither Slurm nor apt-get on this machine"
    return None


def _skip(reason: str):
    """A skip, or with I6_RC_REQUIRE_SLURM=1 (CI) a failure."""
    if os.environ.get("I6_RC_REQUIRE_SLURM") == "1":
        pytest.fail(f"I6_RC_REQUIRE_SLURM=1, but no Slurm cluster: {reason}")
    pytest.skip(f"no Slurm cluster: {reason}")


def _cluster_is_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10).stdout
    except subprocess.TimeoutExpired:
        return False
    return any(state in ("idle", "mixed", "allocated") for state in states.split())


def _installed_packages() -> set[str]:
    listing = ["dpkg-query", "-W", "-f", "${Package} ${Status}\n"]
    out = subprocess.run(listing, capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}


def _munged_pid() -> int | None:
    """The running munged's pid, by its pid file and checked to be munged."""
    try:
        pid = int(MUNGED_PID.read_text())
        return pid if Path(f"/proc/{pid}/comm").read_text().strip() == "munged" else None
    except (OSError, ValueError):
        return None


@pytest.fixture(scope="module")
def slurm_cluster():
    """A one-node cluster for the module: one already up is used as it is; else cluster.sh brings one up, and
    afterwards takes it down and removes what it added (packages installed for it are purged again)."""
    reason = _not_possible_here()
    if reason:
        _skip(reason)
    if _cluster_is_up():
        yield
        return
    packages, munged, paths = _installed_packages(), _munged_pid(), [p for p in CLUSTER_PATHS if p.exists()]
    start = time.monotonic()
    up = subprocess.run([str(CLUSTER_SH), "up"], capture_output=True, text=True, timeout=600)
    print(f"cluster.sh up: {time.monotonic() - start:.1f} s", file=sys.stderr)
    try:
        if up.returncode != 0:
            _skip(f"cluster.sh up failed: {(up.stderr.strip() or up.stdout.strip()).splitlines()[-1]}")
        yield
    finally:
        down = subprocess.run([str(CLUSTER_SH), "down"], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
        started = _munged_pid()
        if munged is None and started is not None:
            os.kill(started, signal.SIGTERM)
        added = sorted(_installed_packages() - packages)
        if added:
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            subprocess.run(["apt-get", "purge", "-y", "-q", *added], env=env, capture_output=True, check=True)
        for path in CLUSTER_PATHS:
            if path not in paths and path.exists():
                shutil.rmtree(path) if path.is_dir() else path.unlink()


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3", **extra)
    env.pop("I6_RC_JOBS_ROOT", None)
    return env


def _example_setup(directory: Path) -> Path:
    """A setup directory for run.sh: the example's settings.py with the short waits, and its config."""
    (directory / "config").mkdir(parents=True)
    (directory / "settings.py").write_text((EXAMPLES / "settings.py").read_text() + SHORT_WAITS)
    for config in (EXAMPLES / "config").glob("*.py"):
        shutil.copy(config, directory / "config")
    return directory


def _run_sh(setup: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = [str(EXAMPLES / "run.sh"), str(setup)]
    return subprocess.run(
        cmd, env=_env(I6_RC_ENGINE="slurm"), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def _job_ids(setup: Path, engine: str) -> list[str]:
    """The job ids (hashes) the config makes, loaded as the manager loads it with I6_RC_ENGINE=engine."""
    code = """
        import json
        from sisyphus.graph import graph
        from sisyphus.loader import config_manager
        config_manager.load_configs()
        print(json.dumps(sorted(job._sis_id() for job in graph.jobs())))
    """
    cmd = [str(VENV / "bin" / "python"), "-c", textwrap.dedent(code)]
    done = subprocess.run(cmd, cwd=setup, env=_env(I6_RC_ENGINE=engine), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _work_job_ids(setup: Path) -> list[str]:
    return sorted(str(p.parent.relative_to(setup / "work")) for p in (setup / "work").rglob("job.save"))


def _train_dirs(setup: Path) -> list[Path]:
    return sorted((setup / "work").glob(TRAIN + "*"))


def _submissions(job: Path, task: str) -> list[dict]:
    """How Sisyphus submitted the job's task, in order (its submit log: one line per submission)."""
    return [eval(line)[1] for line in (job / f"submit_log.{task}").read_text().splitlines()]  # noqa: S307 (its repr)


def _slurm_job_ids(job: Path, task: str) -> list[str]:
    """The Slurm job ids Sisyphus submitted the job's task as, in order."""
    submissions = _submissions(job, task)
    assert all(s["engine_name"] == "slurm" for s in submissions), submissions
    return [job_id for submission in submissions for _, job_id in submission["engine_info"]]


def _scontrol(job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, check=True).stdout
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def _check_example_outputs(setup: Path, resumed_after: int = 0) -> None:
    """The final checkpoint of the last epoch and every epoch's learning rate and scores, as the local run has; for a
    training killed and resumed after the checkpoint of epoch ``resumed_after``, the train scores of the epochs up to
    that one may be missing (RETURNN writes them after the checkpoint, and does not train those epochs again)."""
    out = setup / "output" / "task12ax"
    assert (out / "returnn.config").read_text().startswith("#!rnn.py")
    epochs = example_epochs(out)
    for epoch, data in epochs.items():
        scores = {"dev_score", "dev_error"} | ({"train_score"} if epoch > resumed_after else set())
        assert scores <= set(data["error"]), (epoch, data)


def test_slurm_example_same_outputs_and_hashes_as_local_engine(slurm_cluster, tmp_path):
    """run.sh with I6_RC_ENGINE=slurm: the outputs, the job hashes of the local engine, and the training (and the
    config check) run as Slurm jobs, from sbatch to COMPLETED, with the log Sisyphus's Slurm engine writes."""
    setup = _example_setup(tmp_path / "setup")
    start = time.monotonic()
    proc = _run_sh(setup)
    secs = time.monotonic() - start
    assert proc.returncode == 0, _tail(proc)
    _check_example_outputs(setup)
    assert _work_job_ids(setup) == _job_ids(setup, "local") == _job_ids(setup, "slurm")

    trains = _train_dirs(setup)
    # the returnn_common model (TensorFlow), the RETURNN-frontend one (PyTorch), the CTC example's (MiniReturnn)
    assert len(trains) == 3, trains
    for train in trains:
        (slurm_id,) = _slurm_job_ids(train, "run")
        info = _scontrol(slurm_id)
        assert info["JobName"] == train.relative_to(setup / "work").as_posix().replace("/", ".") + ".run", info
        assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", info
        # The worker ran inside that Slurm job: its log is the engine log named after SLURM_ARRAY_JOB_ID.
        assert (train / "log.run.1").samefile(train / "engine" / f"{info['JobName']}.{slurm_id}.1")
    checks = sorted((setup / "work").glob("i6_rc_jobs/jobs/create_config/CreateConfigJob.*"))
    assert len(checks) == 2, checks  # the CTC example's MiniReturnn config has no check
    for check in checks:
        assert len(_slurm_job_ids(check, "check_networks")) == 1
        assert [s["engine_name"] for s in _submissions(check, "run")] == ["local"]  # a mini task: on the manager
    print(f"example on Slurm: {secs:.1f} s", file=sys.stderr)


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _job_processes(job_id: str) -> list[psutil.Process]:
    """The step daemons of Slurm job ``job_id`` (``slurmstepd: [<id>.batch]``, ``[<id>.0]``, ...) and every process
    under them: the sis worker and the RETURNN it started."""
    steps = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if command.startswith(f"slurmstepd: [{job_id}."):
            steps.append(process)
    return [*steps, *(child for step in steps for child in step.children(recursive=True))]


def _gone(process: psutil.Process) -> bool:
    """Ended (a zombie has ended: only its parent's wait is missing)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _end(processes: list[psutil.Process]) -> None:
    """Ends what the test's Slurm job left: Slurm cancels a suspended job without ending its stopped processes (the
    step daemon, sis worker and rnn.py stayed, stopped, holding memory), so what is left after a grace period is
    killed (SIGKILL ends a stopped process too), and gone when the test goes on."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(map(_gone, processes)):
        time.sleep(0.1)
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if not _gone(process):
                process.kill()
    _wait_for(lambda: all(map(_gone, processes)), 10, f"the Slurm job's processes to end: {processes}")


def test_slurm_killed_training_is_resubmitted_by_the_next_manager_run(slurm_cluster, tmp_path):
    """The training's Slurm job is cancelled after its first epoch, with the manager gone (killed); run.sh again
    resubmits it, RETURNN goes on after its last checkpoint, and the example finishes with the same hashes. An epoch
    takes about a second, so the job is suspended (SIGSTOP, by Slurm) the moment the first checkpoint appears."""
    setup = _example_setup(tmp_path / "setup")
    num_epochs = _example_num_epochs()
    start = time.monotonic()
    manager = subprocess.Popen(
        [str(EXAMPLES / "run.sh"), str(setup)],
        env=_env(I6_RC_ENGINE="slurm"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        first = _wait_for(
            lambda: next((setup / "work").glob(TRAIN + "*/output/models/epoch.001.index"), None), 600, "epoch 1"
        )
        train = first.parents[2]
        (killed_id,) = _slurm_job_ids(train, "run")
        subprocess.run(["scontrol", "suspend", killed_id], check=True)
    finally:
        os.killpg(manager.pid, signal.SIGKILL)
        manager.wait()
    suspended = _job_processes(killed_id)
    assert any("rnn.py" in " ".join(p.cmdline()) for p in suspended), suspended
    subprocess.run(["scancel", killed_id], check=True)
    _wait_for(lambda: _scontrol(killed_id)["JobState"] == "CANCELLED", 60, f"Slurm job {killed_id} cancelled")
    _end(suspended)
    checkpoints = sorted(int(p.name[6:9]) for p in first.parent.glob("epoch.*.index"))
    assert checkpoints[-1] < num_epochs, f"the training had finished before it was killed: {checkpoints}"
    assert not (train / "finished.run.1").exists() and not (setup / "output" / "task12ax" / "checkpoint").exists()

    proc = _run_sh(setup)
    assert proc.returncode == 0, _tail(proc)
    _check_example_outputs(setup, resumed_after=checkpoints[-1])
    assert _work_job_ids(setup) == _job_ids(setup, "local")
    ids = _slurm_job_ids(train, "run")
    assert len(ids) == 2 and ids[0] == killed_id and _scontrol(ids[1])["JobState"] == "COMPLETED", ids
    # RETURNN found the killed run's checkpoints and trained only the epochs after the last of them.
    resumed = (train / "log.run.1").read_text()
    assert f"start training at epoch {checkpoints[-1] + 1}\n" in resumed, _tail_text(resumed)
    assert f"Finished training in epoch {num_epochs}." in resumed
    print(f"killed after epoch {checkpoints[-1]}, resumed on Slurm: {time.monotonic() - start:.1f} s", file=sys.stderr)


def _tail_text(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def test_slurm_worker_without_the_version_in_its_cache_says_what_to_fetch(slurm_cluster, tmp_path, monkeypatch):
    """A job holding a function of a version, run as a Slurm job on a 'node' whose import cache is empty (the
    settings give Slurm jobs a cache of their own): its log ends in one line naming the commit and the fetch command."""
    origin = tmp_path / "origin"
    (origin / "pkg").mkdir(parents=True)
    (origin / "pkg" / "helper.py").write_text("def value():\n    return 1\n")
    git = ["git", "-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(git + args, check=True, capture_output=True)
    commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    date = subprocess.run(git + ["log", "-1", "--format=%cd", "--date=format:%Y%m%d"], capture_output=True, text=True)
    version = f"{date.stdout.strip()}-{commit[:12]}"
    repo = "example.org/test/origin"
    node_cache = tmp_path / "node-cache"
    setup = make_setup(
        tmp_path / "setup",
        f"""
        from i6_core.returnn.config import ReturnnConfig
        from sisyphus import tk
        from i6_rc_jobs import CreateConfigJob
        from i6_rc_jobs import import_

        def main():
            helper = import_({repo!r}, "pkg/helper.py", {version!r})
            config = ReturnnConfig({{"num_epochs": 1}}, python_prolog=[helper.value], black_formatting=False)
            tk.register_output("returnn.config", CreateConfigJob(config, check=True).out_config)
        """,
    )
    node = "\nif 'SLURM_JOB_ID' in os.environ:  # a node with an import cache of its own\n"
    node += f"    os.environ['I6_RC_IMPORTS_CACHE'] = {str(node_cache)!r}\n"
    (setup / "settings.py").write_text((setup / "settings.py").read_text() + SHORT_WAITS + node)
    monkeypatch.setenv("I6_RC_ENGINE", "slurm")
    monkeypatch.setenv("I6_RC_IMPORTS_CACHE", str(tmp_path / "manager-cache"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{origin}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"https://{repo}")
    proc = run_manager(setup, timeout=300)
    (job,) = (setup / "work").glob("i6_rc_jobs/jobs/create_config/CreateConfigJob.*")
    assert (job / "error.check_networks.1").exists(), _tail(proc)
    (slurm_id,) = _slurm_job_ids(job, "check_networks")
    # The worker fails before it links log.check_networks.1 (Sisyphus unpickles the job first): Slurm's output file.
    log = job / "engine" / f"{_scontrol(slurm_id)['JobName']}.{slurm_id}.1"
    last = log.read_text().strip().splitlines()[-1]
    module = f"i6_rc_jobs.versioned.example_org.test.origin.c{commit}"
    assert last == (
        f"i6_rc_jobs._imports.errors.VersionedImportError: example_org/test/origin commit {commit} (host/owner/name as"
        f" its module name spells it) is not in the import cache {node_cache} ({module}): fetch it first: python -m"
        f" i6_rc_jobs fetch <host>/<owner>/<name> <date>-{commit[:12]}"
    )

"""CreateConfigJob in the real Sisyphus manager and worker, and the atomic config writing under it."""

from __future__ import annotations

import os
import stat
import sys

import pytest
from i6_core.returnn.config import CodeWrapper, ReturnnConfig
from sisyphus import tk
from sisyphus.hash import short_hash

from i6_rc_jobs import CreateConfigJob, SerializationError
from i6_rc_jobs._util import atomic_file
from i6_rc_jobs.jobs.config_file import config_code, write_config_file
from tests.support.cases import encoder_decoder, staged
from tests.support.jobs import MakeCheckpoint
from tests.support.sisyphus_setup import REPO, job_dirs, make_setup, run_manager

BLOCKER = '''
import os
import sys

with open(os.path.join(os.path.dirname(__file__), "loaded-in"), "a") as f:
    f.write(" ".join(sys.argv) + "\\n")


class _Block:
    """The worker of this test must write configs without returnn_common and TensorFlow."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("returnn_common", "tensorflow"):
            raise ImportError(f"{name} is blocked in this worker")


sys.meta_path.insert(0, _Block())
'''


def _config(serializer) -> ReturnnConfig:
    return ReturnnConfig({"num_epochs": 2, "learning_rate": 0.01}, python_prolog=[serializer], black_formatting=False)


@pytest.mark.slow
def test_writes_config_in_a_worker_without_returnn_common_and_tensorflow(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    setup = make_setup(
        tmp_path / "setup",
        """
        from sisyphus import tk
        from i6_core.returnn.config import ReturnnConfig
        from i6_rc_jobs import CreateConfigJob
        from tests.support.cases import encoder_decoder


        def main():
            config = ReturnnConfig(
                {"num_epochs": 2, "learning_rate": 0.01}, python_prolog=[encoder_decoder()], black_formatting=False
            )
            tk.register_output("returnn.config", CreateConfigJob(config).out_config)
        """,
    )
    proc = run_manager(setup, python_path=str(blocker))  # manager and worker: the manager needs neither, too
    written = setup / "output" / "returnn.config"
    assert written.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    (job,) = job_dirs(setup, "CreateConfigJob")
    assert (job / "finished").exists()
    assert " worker " in (blocker / "loaded-in").read_text()  # the blocker was active in the worker
    assert written.read_text() == config_code(_config(encoder_decoder()))
    assert written.read_text().startswith("#!rnn.py\n")
    assert job.name.endswith(CreateConfigJob(_config(encoder_decoder()))._sis_id().split(".")[-1])


def test_job_hash_is_the_config_hash_and_check_at_default_leaves_it_alone():
    config = _config(encoder_decoder())
    job = CreateConfigJob(config)
    assert CreateConfigJob(_config(encoder_decoder())) is job  # same hash -> Sisyphus gives back the same job
    assert CreateConfigJob(_config(encoder_decoder()), check=False) is job
    assert CreateConfigJob(_config(encoder_decoder()), check=True) is not job
    other = _config(encoder_decoder())
    other.config["learning_rate"] = 0.02
    assert CreateConfigJob(other) is not job
    assert short_hash(config) == short_hash(_config(encoder_decoder()))


def test_staged_networks_need_no_extra_files(tmp_path):
    path = tmp_path / "returnn.config"
    write_config_file(_config(staged()), str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["returnn.config"]
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert sorted(namespace["get_network"](7)) == ["ff0", "ff1", "output"]


def test_i6_core_staged_network_dict_is_refused_with_a_hint(tmp_path):
    config = ReturnnConfig({}, staged_network_dict={1: {"a": {"class": "copy"}}})
    with pytest.raises(SerializationError, match="staged_networks"):
        write_config_file(config, str(tmp_path / "returnn.config"))


def test_a_killed_write_leaves_no_file(tmp_path, monkeypatch):
    path = tmp_path / "returnn.config"

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic_file.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_config_file(_config(encoder_decoder()), str(path))
    assert list(tmp_path.iterdir()) == []


def test_a_write_interrupted_right_after_the_rename_raises_the_interruption_and_keeps_the_file(tmp_path, monkeypatch):
    replace = os.replace

    def renamed_then_killed(src, dst):
        replace(src, dst)
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic_file.os, "replace", renamed_then_killed)
    path = tmp_path / "returnn.config"
    with pytest.raises(KeyboardInterrupt):
        write_config_file(_config(encoder_decoder()), str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["returnn.config"] and "network = {" in path.read_text()


def test_the_data_is_flushed_to_disk_before_the_file_is_renamed_into_place(tmp_path, monkeypatch):
    calls = []
    fsync, replace = os.fsync, os.replace

    def recorded_fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size))
        fsync(fd)

    def recorded_replace(src, dst):
        calls.append(("replace", src, dst))
        replace(src, dst)

    monkeypatch.setattr(atomic_file.os, "fsync", recorded_fsync)
    monkeypatch.setattr(atomic_file.os, "replace", recorded_replace)
    path = tmp_path / "returnn.config"
    write_config_file(_config(encoder_decoder()), str(path))
    (_, synced, size), (_, src, dst) = calls
    assert synced == src and dst == str(path) and size == path.stat().st_size > 0


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_the_written_file_gets_the_mode_open_would_give_it(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_config_file(_config(encoder_decoder()), str(tmp_path / "returnn.config"))
        (tmp_path / "by_open").write_text("")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "returnn.config").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "returnn.config").stat().st_mode) == stat.S_IMODE(
        (tmp_path / "by_open").stat().st_mode
    )


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "returnn.config"
    path.write_text("previous")
    broken = encoder_decoder()
    broken.network["bad"] = {"class": "eval", "eval": lambda: 0}  # no code form: refused when written
    with pytest.raises(SerializationError, match=r"network\['bad'\]\['eval'\]"):
        write_config_file(_config(broken), str(path))
    assert path.read_text() == "previous" and len(list(tmp_path.iterdir())) == 1


def test_code_that_does_not_compile_is_not_written(tmp_path):
    config = ReturnnConfig({}, python_epilog="def broken(:\n    pass\n")
    with pytest.raises(SyntaxError):
        write_config_file(config, str(tmp_path / "returnn.config"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_check_constructs_every_stage_and_names_the_failing_layer(tmp_path):
    setup = make_setup(
        tmp_path,
        """
        from sisyphus import tk
        from i6_core.returnn.config import ReturnnConfig
        from i6_rc_jobs import CreateConfigJob
        from tests.support.cases import staged


        def main():
            good, bad = staged(), staged()
            bad.staged_networks[10]["ff2"]["class"] = "no_such_layer_class"
            for name, serializer in (("good", good), ("bad", bad)):
                config = ReturnnConfig({"use_tensorflow": True, "behavior_version": 21}, python_prolog=[serializer])
                job = CreateConfigJob(config, check=True)
                job.add_alias(name)
                tk.register_output(name, job.out_config)
            network = {"output": {"class": "linear", "from": "data", "n_out": 2}}  # no serializer: epoch 1
            extern_data = {"data": {"shape": (None, 3)}}
            plain = ReturnnConfig({"use_tensorflow": True, "extern_data": extern_data, "network": network})
            job = CreateConfigJob(plain, check=True)
            job.add_alias("plain")
            tk.register_output("plain", job.out_config)
        """,
    )
    run_manager(setup)
    plain = setup / "alias" / "plain"
    assert "epoch 1: RETURNN constructed" in (plain / "log.check_networks.1").read_text()
    good, bad = setup / "alias" / "good", setup / "alias" / "bad"
    assert (good / "finished.check_networks.1").exists()
    log = (good / "log.check_networks.1").read_text()
    assert all(f"epoch {epoch}" in log for epoch in (1, 5, 10)), log[-2000:]
    assert (bad / "finished.run.1").exists() and (bad / "error.check_networks.1").exists()
    log = (bad / "log.check_networks.1").read_text()
    assert "epoch 10" in log and "'ff2'" in log and "no_such_layer_class" in log, log[-3000:]


@pytest.mark.slow
def test_check_runs_with_the_setups_returnn_and_python_and_says_when_there_is_none(tmp_path):
    """An i6 setup's RETURNN is a checkout under tools/, given to the jobs as returnn_root; the worker's Python need
    not import it. Without it and without an importable RETURNN, the check fails with one line that says what to
    give."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "returnn").symlink_to(REPO / ".deps" / "src" / "returnn")
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER.replace('("returnn_common", "tensorflow")', '("returnn",)'))
    python_without_returnn = tmp_path / "tools" / "python-without-returnn"
    python_without_returnn.write_text(f'#!/bin/sh\nPYTHONPATH={blocker} exec {sys.executable} "$@"\n')
    python_without_returnn.chmod(0o755)
    setup = make_setup(
        tmp_path,
        f"""
        import sys
        from sisyphus import tk
        from i6_core.returnn.config import ReturnnConfig
        from i6_rc_jobs import CreateConfigJob
        from tests.support.cases import staged


        def main():
            config = ReturnnConfig({{"use_tensorflow": True, "behavior_version": 21}}, python_prolog=[staged()])
            given = CreateConfigJob(
                config, check=True, returnn_root=tk.Path("tools/returnn"), returnn_python_exe=tk.Path(sys.executable)
            )
            given.add_alias("given")
            none = CreateConfigJob(config, check=True, returnn_python_exe=tk.Path("{python_without_returnn}"))
            none.add_alias("none")
            for job in (given, none):
                tk.register_output(f"{{job.get_one_alias()}}.config", job.out_config)
        """,
    )
    run_manager(setup)
    log = (setup / "alias" / "given" / "log.check_networks.1").read_text()
    assert f"from {tmp_path}/tools/returnn\n" in log and "epoch 1: RETURNN constructed" in log, log[-2000:]
    log = (setup / "alias" / "none" / "log.check_networks.1").read_text()
    assert (setup / "alias" / "none" / "error.check_networks.1").exists()
    assert "RETURNN is not importable in" in log and "give CreateConfigJob returnn_root=" in log, log[-2000:]


def test_returnn_root_and_python_stay_out_of_the_hash_unless_given():
    config = _config(encoder_decoder())
    assert CreateConfigJob(config, check=True, returnn_root=None) is CreateConfigJob(config, check=True)
    given = CreateConfigJob(config, check=True, returnn_root=tk.Path("/opt/returnn"))
    assert given is not CreateConfigJob(config, check=True)


def test_paths_inside_the_dicts_are_job_inputs_and_written_as_their_value(tmp_path):
    checkpoint = MakeCheckpoint("test_paths_inside_the_dicts").out
    serializer = encoder_decoder()
    serializer.network["enc"]["load_on_init"] = checkpoint
    job = CreateConfigJob(_config(serializer))
    assert any(p.creator is checkpoint.creator for p in job._sis_inputs)
    other = encoder_decoder()
    other.network["enc"]["load_on_init"] = MakeCheckpoint("another").out
    assert CreateConfigJob(_config(other)) is not job
    path = tmp_path / "returnn.config"
    write_config_file(_config(serializer), str(path))
    assert f'"load_on_init": "{checkpoint.get_path()}"' in path.read_text()


def test_a_code_wrapper_of_a_variable_not_set_yet_makes_a_job_and_is_written_once_set(tmp_path):
    variable = tk.Variable(str(tmp_path / "learning_rate"))
    serializer = encoder_decoder()
    serializer.network["enc"]["dropout"] = CodeWrapper(variable)
    serializer.close()
    job = CreateConfigJob(_config(serializer))  # i6_core hashes the variable without its value
    variable.set("0.25")
    path = tmp_path / "returnn.config"
    write_config_file(job.returnn_config, str(path))
    assert '"dropout": 0.25' in path.read_text()

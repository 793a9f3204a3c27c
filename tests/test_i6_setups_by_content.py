"""``by_content`` for i6 setups, with real builds, torch and RETURNN: a config of i6_experiments' serialization objects
moved by ``ReturnnConfigSerializer.from_i6_core(config, code=by_content)``, and ``by_content`` markers in an i6_core
``ReturnnConfigV2`` written by i6_core's own serialization_v2 (also through ``CreateConfigJob``'s writing): each
written config imports the code that was hashed, from its snapshots, when RETURNN loads it, and builds the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.sisyphus_setup import REPO
from tests.test_code_hash import HELPER, MODEL

pytestmark = pytest.mark.slow  # each manager start starts a build server that imports torch

#: A manager start: the i6_experiments config moved by content and the ReturnnConfigV2, each written to a file (the
#: V2 one twice: by i6_core, and as CreateConfigJob writes it); prints their hashes and whether it imported torch.
MANAGER = textwrap.dedent("""
    import json
    import os
    import sys

    from i6_core.returnn.config import ReturnnConfig, ReturnnConfigV2
    from i6_experiments.common.setups.serialization import (
        Collection, ExplicitHash, ExternalImport, Import, NonhashedCode, PartialImport,
    )
    from sisyphus import tk
    from sisyphus.hash import short_hash

    from i6_rc_jobs import CreateConfigJob, ReturnnConfigSerializer, by_content
    from i6_rc_jobs.jobs.config_file import write_config_file

    here = os.getcwd()
    collection = Collection([
        ExternalImport(tk.Path(here, hash_overwrite="MY_MODELS")),
        PartialImport(
            code_object_path="my_model.Model", unhashed_package_root="", hashed_arguments={"dim": 4},
            unhashed_arguments={}, import_as="get_model",
        ),
        Import("my_model.train_step"),
        ExplicitHash("v1"),
        NonhashedCode("print_me = 1\\n"),
    ])
    i6 = ReturnnConfig({"batch_size": 10}, post_config={"backend": "torch"}, python_epilog=[collection])
    moved = ReturnnConfigSerializer.from_i6_core(i6, code=by_content)
    write_config_file(moved, "moved.config")
    v2 = ReturnnConfigV2(
        {"backend": "torch", "get_model": by_content("my_model:Model", dim=4), "train_step": by_content("my_model:train_step")},
        black_formatting=False,
    )
    v2.write("v2.config")
    write_config_file(CreateConfigJob(v2).returnn_config, "v2_job.config")
    hashes = {"moved": short_hash(moved), "by_name": short_hash(ReturnnConfigSerializer.from_i6_core(i6)), "v2": short_hash(v2)}
    print(json.dumps({"hashes": hashes, "torch": "torch" in sys.modules}))
    """)
#: A job: RETURNN loads a config (in a process without i6_rc_jobs), builds the model, runs train_step on a fixed
#: input; prints the loss's shape, the snapshot each module of the setup came from, and the config's print_me.
JOB = textwrap.dedent("""
    import json
    import sys

    import torch
    from returnn.config import Config

    config = Config()
    config.load_file(sys.argv[1])
    model = config.typed_value("get_model")()

    class Data:
        raw_tensor = torch.zeros(2, 4)

    out = config.typed_value("train_step")(model=model, extern_data={"data": Data})
    files = {name: getattr(sys.modules[name].__loader__, "snapshot", None) for name in ("my_model", "act_helper")}
    print(json.dumps({"shape": list(out.shape), "files": files, "print_me": config.typed_value("print_me"),
                      "i6_rc_jobs": "i6_rc_jobs" in sys.modules}))
    """)


def _run(directory: Path, pythonpath: list[str], *argv: str) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(pythonpath),
        "I6_RC_BUILD_CACHE": str(directory / "cache"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    done = subprocess.run([sys.executable, *argv], cwd=directory, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict]:
    directory = tmp_path_factory.mktemp("setup")
    (directory / "my_model.py").write_text(MODEL)
    (directory / "act_helper.py").write_text(HELPER)
    (directory / "manager.py").write_text(MANAGER)
    (directory / "job.py").write_text(JOB)
    result = _run(directory, [str(directory), str(REPO), str(REPO / ".deps" / "src")], "manager.py")
    assert result["torch"] is False
    return directory, result


def _job(directory: Path, config: str) -> dict:
    """The job, run where neither the setup nor i6_rc_jobs is on the path: the config finds the setup's code."""
    return _run(directory, [], str(directory / "job.py"), config)


def test_a_moved_i6_experiments_config_hashes_by_content_and_runs_the_hashed_code(written):
    directory, result = written
    assert result["hashes"]["moved"] != result["hashes"]["by_name"]
    code = (directory / "moved.config").read_text()
    assert code.index("del _pin_model_code") < code.index("from my_model import Model, train_step as train_step_")
    assert "get_model = partial(Model, dim=4)" in code
    ran = _job(directory, "moved.config")
    snapshots = directory / "cache" / "snapshots"
    assert ran["shape"] == [2, 4] and ran["print_me"] == 1
    assert all(Path(file).is_relative_to(snapshots) for file in ran["files"].values()), ran["files"]


@pytest.mark.parametrize("config", ["v2.config", "v2_job.config"])
def test_by_content_in_a_returnn_config_v2_is_written_as_the_pinned_reference(written, config):
    """i6_core's serialization_v2 writes the marker as the reference it wraps, imported after the lines that pin its
    code (not as a ByContent object, which RETURNN could not call); CreateConfigJob writes a V2 config as i6_core
    does."""
    directory, _ = written
    code = (directory / config).read_text()
    assert "ByContent" not in code and code.count("del _pin_model_code") == 2
    assert code.index("del _pin_model_code") < code.index("import_module('my_model', ")
    ran = _job(directory, config)
    snapshots = directory / "cache" / "snapshots"
    assert ran["shape"] == [2, 4] and ran["i6_rc_jobs"] is False
    assert all(Path(file).is_relative_to(snapshots) for file in ran["files"].values()), ran["files"]

"""python -m i6_rc_jobs hash-diff: on real Sisyphus job directories and on pickled configs and serializers."""

from __future__ import annotations

import gzip
import os
import pathlib
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from i6_core.returnn.config import ReturnnConfig

from tests.support.cases import encoder_decoder
from tests.support.console_scenarios import config_jobs
from tests.support.sisyphus_setup import REPO, job_dirs, make_setup, run_manager


def hash_diff(a, b) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "hash-diff", str(a), str(b)], capture_output=True, text=True, cwd=REPO
    )


@pytest.mark.slow
def test_explains_two_job_directories(tmp_path):
    setup = config_jobs(tmp_path)
    a, b = (setup / "alias" / name for name in "ab")
    assert len(job_dirs(setup, "CreateConfigJob")) == 2  # "c" is "a": same hash, same job
    diff = hash_diff(a, b)
    assert diff.returncode == 1, diff.stderr
    prefix = "CreateConfigJob.returnn_config."
    lstm = prefix + "python_prolog_hash[0].network['dec']['unit']['lstm']['out_dim']"
    assert diff.stdout.splitlines() == [  # the changed dim first, named, with what follows from it beneath
        f"dim#6 'model' (first at {lstm}): feature 256 -> feature 2048, and 1 line that follows from it:",
        f"  {lstm}: dim#7 '2*model' feature 512 = mul(2, <dim#6 'model' feature 256>) "
        "-> dim#7 '2*model' feature 4096 = mul(2, <dim#6 'model' feature 2048>)",
        prefix + "returnn_config['learning_rate']: 0.01 -> 0.02",
    ]
    same = hash_diff(a, setup / "alias" / "c")
    assert (same.returncode, same.stdout) == (0, "identical\n")


def test_explains_pickled_configs_and_serializers(tmp_path):
    a, b = encoder_decoder(), encoder_decoder()
    b.network["output"]["loss_scale"] = 0.5
    b.network["enc"]["subnetwork"]["att"]["reduce"] = b.network["enc"]["subnetwork"]["ff"]["out_dim"]
    for name, obj in (("a.pkl", a), ("b.pkl", b)):
        (tmp_path / name).write_bytes(pickle.dumps(obj))
    diff = hash_diff(tmp_path / "a.pkl", tmp_path / "b.pkl")
    assert diff.stdout.splitlines() == [
        "network['enc']['subnetwork']['att']['reduce']: dim#8 'model_1_dim' feature copy of <dim#6 'model'> "
        "match_priority=1 -> dim#6 'model' feature 256",
        "network['output']['loss_scale']: 1.0 -> 0.5",
    ]
    config_a, config_b = (ReturnnConfig({"x": 1}, python_epilog=[s]) for s in (a, a))
    (tmp_path / "ca.pkl").write_bytes(pickle.dumps(config_a))
    (tmp_path / "cb.pkl").write_bytes(pickle.dumps(config_b))
    assert hash_diff(tmp_path / "ca.pkl", tmp_path / "cb.pkl").stdout == "identical\n"


def test_reports_only_what_a_jobs_own_hash_takes():
    """i6_core's ReturnnTrainingJob hashes its config, python and RETURNN, not its requirements."""
    from i6_core.returnn.training import ReturnnTrainingJob
    from sisyphus import tk

    from i6_rc_jobs._cli.explain import explain

    root, python = tk.Path(str(REPO / ".deps" / "src" / "returnn")), tk.Path(sys.executable)
    a, b = (
        ReturnnTrainingJob(
            ReturnnConfig({"learning_rate": lr, "backend": "tensorflow"}),
            time_rqmt=hours,
            returnn_root=root,
            returnn_python_exe=python,
        )
        for lr, hours in ((0.01, 4), (0.02, 8))
    )
    assert list(explain(a, b)) == ["ReturnnTrainingJob.returnn_config.returnn_config['learning_rate']: 0.01 -> 0.02"]


def test_an_input_that_cannot_be_loaded_is_said_in_one_line_with_its_own_exit_status(tmp_path):
    good = tmp_path / "a.pkl"
    good.write_bytes(pickle.dumps(encoder_decoder()))
    (tmp_path / "text").write_text("not a pickle")
    for bad in (tmp_path / "missing", tmp_path / "text"):
        done = hash_diff(good, bad)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        last = done.stderr.splitlines()[-1]  # (Sisyphus may warn before: no settings.py here)
        assert last.startswith(f"hash-diff: {bad}: cannot be loaded as a job or a pickle: ")
        assert "Traceback" not in done.stderr


def test_serializers_hashed_by_hash_value_are_explained_by_it():
    from i6_rc_jobs._cli.explain import explain

    a, b = encoder_decoder(hash_value=("model", 1)), encoder_decoder(hash_value=("model", 2))
    assert list(explain(a, b)) == ["hash_value[1]: 1 -> 2"]
    assert list(explain(encoder_decoder(), a)) == [
        "hash_value: None -> ('model', 1) (hashed by its dicts -> by hash_value)"
    ]


class _Options:
    """A value whose own hash calls Sisyphus's sis_hash while a job's hash is being made."""

    def __init__(self, values: dict):
        self.values = values

    def _sis_hash(self) -> bytes:
        from sisyphus import tools

        return tools.sis_hash({"options": self.values}).encode()


def test_a_value_hashing_itself_with_sis_hash_inside_a_job_does_not_hide_the_jobs_arguments():
    from sisyphus import Job

    from i6_rc_jobs._cli.explain import explain

    class Train(Job):
        def __init__(self, options, learning_rate):
            pass

    a, b = (Train(_Options({"layers": 2}), lr) for lr in (0.1, 0.2))
    assert list(explain(a, b)) == ["Train.learning_rate: 0.1 -> 0.2"]


def _refused(done: subprocess.CompletedProcess, reason: str) -> bool:
    last = done.stderr.splitlines()[-1] if done.stderr else ""  # (Sisyphus may warn before: no settings.py here)
    return (
        done.returncode == 2
        and done.stdout == ""
        and last.startswith("hash-diff: ")
        and reason in last
        and last.endswith("unpickling it could run code; pass --trust to load it")
        and "Traceback" not in done.stderr
    )


def test_help_says_inputs_are_unpickled_and_must_be_trusted():
    done = subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "hash-diff", "--help"], capture_output=True, text=True, cwd=REPO
    )
    text = " ".join(done.stdout.split())
    assert done.returncode == 0 and "unpickled, which runs whatever code they name" in text and "--trust" in text


def test_inputs_writable_by_others_are_refused_unless_trusted(tmp_path):
    a, b = tmp_path / "a.pkl", tmp_path / "b.pkl"
    a.write_bytes(pickle.dumps(encoder_decoder()))
    b.write_bytes(pickle.dumps(encoder_decoder()))
    b.chmod(0o646)
    assert _refused(hash_diff(a, b), f"{b} is writable by others")
    trusted = subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "hash-diff", "--trust", str(a), str(b)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert (trusted.returncode, trusted.stdout) == (0, "identical\n"), trusted.stderr


def test_a_job_directory_is_refused_if_the_directory_or_its_job_save_is_writable_by_others(tmp_path):
    a = tmp_path / "a.pkl"
    a.write_bytes(pickle.dumps(encoder_decoder()))
    job = tmp_path / "job"
    job.mkdir()
    (job / "job.save").write_bytes(gzip.compress(pickle.dumps(encoder_decoder())))
    assert hash_diff(a, job).stdout == "identical\n"
    (job / "job.save").chmod(0o666)
    assert _refused(hash_diff(a, job), f"{job / 'job.save'} is writable by others")
    (job / "job.save").chmod(0o644)
    job.chmod(0o757)
    assert _refused(hash_diff(a, job), f"{job} is writable by others")


def test_inputs_owned_by_another_user_are_refused(tmp_path):
    a = tmp_path / "a.pkl"
    a.write_bytes(pickle.dumps(encoder_decoder()))
    if os.geteuid() == 0:
        other = tmp_path / "other.pkl"
        other.write_bytes(pickle.dumps(encoder_decoder()))
        os.chown(other, 65534, 65534)  # nobody
    else:
        other = pathlib.Path("/etc/passwd")  # owned by root
    assert _refused(hash_diff(a, other), f"{other} is owned by uid {other.stat().st_uid}, not by you")


def _transformer_jobs(hash_scheme: str, *builds: dict, edit=lambda network: network) -> list:
    from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer
    from tests.rc_models import transformer

    jobs = []
    for i, build in enumerate(builds):
        extern_data, network = transformer(num_layers=2, model_dim=build["model_dim"])
        network = edit(network) if i else network
        serializer = ReturnnCommonSerializer(extern_data=extern_data, network=network, hash_scheme=hash_scheme)
        jobs.append(CreateConfigJob(ReturnnConfig({"learning_rate": build["lr"]}, python_prolog=[serializer])))
    return jobs


@pytest.mark.parametrize("hash_scheme", ["dict", "graph"])
def test_a_changed_model_dim_of_a_transformer_comes_first_with_what_follows_from_it_beneath(hash_scheme):
    """returnn_common's Transformer: one model dim size changes the dims made of it and the bounds of every
    initializer; the dim is named and comes first, the rest beneath it, equal changes merged, and the header counts
    the lines beneath. The attention scale (an eval's code, or a float operand in the graph) holds no dim and sits
    beside none: listed apart, in either scheme."""
    from i6_rc_jobs._cli.explain import explain

    lines = list(explain(*_transformer_jobs(hash_scheme, {"model_dim": 64, "lr": 0.1}, {"model_dim": 128, "lr": 0.2})))
    prefix = "CreateConfigJob.returnn_config."
    first_at = prefix + "python_prolog_hash[0].extern_data['data']['dims'][2]"
    assert lines[0].startswith(f"dim#3 'model' (first at {first_at}): feature 64 -> feature 128, and ")
    follows = int(lines[0].split(", and ")[1].split()[0])
    beneath, apart = lines[1 : 1 + follows], lines[1 + follows :]
    assert beneath and all(line.startswith(f"  {prefix}python_prolog_hash[0].network") for line in beneath)
    assert any(
        "dim#4 'model*4' feature 256 = mul(<dim#3 'model'>, 4) -> dim#4 'model*4' feature 512" in line
        for line in beneath
    )
    bounds = [line for line in beneath if "['maxval']" in line]
    assert bounds and any(line.endswith("more places)") for line in bounds)
    assert apart[-1] == prefix + "returnn_config['learning_rate']: 0.1 -> 0.2"  # not from the dim: on its own
    # in the graph, a float operand; in the decoder's loop the eval as written (rule "scalar-operands" holds not there)
    graph_scales = ("/mul'['from'][1][0]: ", "/mul'['eval']: 'source(0) * ")
    scales = ("['subnetwork']['mul']['eval']: 'source(0) * ",) if hash_scheme == "dict" else graph_scales
    assert len(apart) > 1 and all(any(scale in line for scale in scales) for line in apart[:-1]), apart


def test_dims_renumbered_by_a_removed_option_are_no_change_and_every_line_shows_a_difference():
    """``out_shape`` removed everywhere: dims first occur elsewhere and are numbered otherwise, which is no change;
    what is said is the removed options, each a visible difference."""
    from i6_rc_jobs._cli.explain import explain

    def without_out_shape(value):
        if isinstance(value, dict):
            return {key: without_out_shape(item) for key, item in value.items() if key != "out_shape"}
        return value

    jobs = _transformer_jobs("dict", {"model_dim": 64, "lr": 0.1}, {"model_dim": 64, "lr": 0.1}, edit=without_out_shape)
    lines = list(explain(*jobs))
    assert lines
    assert all("['out_shape']: " in line and line.endswith(" -> (missing)") for line in lines), [
        line for line in lines if not line.endswith(" -> (missing)")
    ]


def _i6_setup(directory: pathlib.Path) -> pathlib.Path:
    """An i6-style setup: recipe/ with i6_core, i6_rc_jobs and a recipe package of its own, Sisyphus under tools/,
    settings.py and config/; two CreateConfigJobs and two jobs of the recipe's own class, made by sis manager."""
    setup = make_setup(
        directory,
        """
        from sisyphus import tk
        from i6_core.returnn.config import ReturnnConfig
        from returnn.tensor import Dim, batch_dim
        from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer
        from my_recipe import Train


        def main():
            for name, model in (("a", 256), ("b", 512)):
                model_dim = Dim(model, name="model")
                serializer = ReturnnCommonSerializer(
                    extern_data={"data": {"dims": (batch_dim, Dim(None, name="time"), Dim(8, name="in"))}},
                    network={"output": {"class": "linear", "from": "data", "out_dim": 2 * model_dim}},
                )
                config = ReturnnConfig({"learning_rate": 0.1}, python_prolog=[serializer], black_formatting=False)
                CreateConfigJob(config).add_alias(name)
                tk.register_output(name, CreateConfigJob(config).out_config)
                train = Train(model)
                train.add_alias("train_" + name)
                tk.register_output("train_" + name, train.out)
        """,
    )
    (setup / "recipe" / "my_recipe").mkdir(parents=True)
    (setup / "recipe" / "my_recipe" / "__init__.py").write_text(
        "from sisyphus import Job, Task\n\n\nclass Train(Job):\n    def __init__(self, size):\n"
        "        self.out = self.output_path('out')\n\n    def tasks(self):\n        yield Task('run', mini_task=True)\n\n"
        "    def run(self):\n        open(self.out.get_path(), 'w').close()\n"
    )
    (setup / "recipe" / "i6_core").symlink_to(REPO / ".deps" / "recipe" / "i6_core")
    (setup / "recipe" / "i6_rc_jobs").symlink_to(REPO / "i6_rc_jobs")
    (setup / "tools").mkdir()
    (setup / "tools" / "sisyphus").symlink_to(REPO / ".deps" / "src" / "sisyphus")
    proc = run_manager(setup)
    assert (setup / "output" / "train_b").exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return setup


def _run_bare(args: list[str], cwd: pathlib.Path, python_path: list[pathlib.Path] = ()) -> subprocess.CompletedProcess:
    """Python without the venv's .pth files (-S), which make Sisyphus, i6_core and i6_rc_jobs importable: only its
    PyPI packages, as in a setup whose Sisyphus and recipes are checkouts under tools/ and recipe/."""
    import sysconfig

    path = ":".join(map(str, [sysconfig.get_paths()["purelib"], *python_path]))
    env = dict(os.environ, PYTHONPATH=path, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True, text=True)


def _one_line(done: subprocess.CompletedProcess) -> str:
    """The last stderr line of a run refused with status 2, checked to be no traceback."""
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    return done.stderr.splitlines()[-1]


@pytest.mark.slow
def test_from_a_setup_directory_it_finds_sisyphus_and_the_recipes_as_sis_does(tmp_path):
    setup = _i6_setup(tmp_path / "setup")
    expected = "dim#2 'model' (first at CreateConfigJob.returnn_config.python_prolog_hash[0].network['output']"
    for args, python_path in (
        (["recipe/i6_rc_jobs"], []),  # the package only in recipe/: run as a directory
        (["-m", "i6_rc_jobs"], [setup / "recipe"]),  # or found by PYTHONPATH; Sisyphus then from tools/
    ):
        done = _run_bare([*args, "hash-diff", "alias/a", "alias/b"], setup, python_path)
        assert done.returncode == 1 and done.stdout.startswith(expected), done.stderr
        same = _run_bare([*args, "hash-diff", "alias/train_a", "alias/train_a"], setup, python_path)
        assert (same.returncode, same.stdout) == (0, "identical\n"), same.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runner = [str(setup / "recipe" / "i6_rc_jobs"), "hash-diff"]
    no_sisyphus = _one_line(_run_bare([*runner, str(setup / "alias/a"), str(setup / "alias/b")], elsewhere))
    assert (
        no_sisyphus.startswith("hash-diff: cannot import sisyphus") and "run it from the setup directory" in no_sisyphus
    )
    no_recipe = _run_bare(  # (run as recipe/i6_rc_jobs, it would find the recipes beside it in recipe/)
        ["-m", "i6_rc_jobs", "hash-diff", str(setup / "alias/train_a"), str(setup / "alias/train_b")],
        elsewhere,
        [REPO, setup / "tools" / "sisyphus", REPO / ".deps" / "recipe"],  # Sisyphus and i6_core, not the recipe/
    )
    assert _one_line(no_recipe).startswith(f"hash-diff: {setup / 'alias/train_a'}: it needs the module 'my_recipe'")


def test_a_reader_that_stops_early_ends_hash_diff_without_a_traceback(tmp_path):
    """``hash-diff A B | head -1``: the pipe closes after the first line, hash-diff ends quietly."""
    paths = []
    for name, size in (("a", 256), ("b", 2048)):
        serializer = encoder_decoder()
        serializer.network["enc"]["subnetwork"]["ff"]["out_dim"].size = size
        for i in range(300):  # more than a pipe's buffer holds, so that writing meets the closed pipe
            serializer.network[f"extra{i}"] = {"class": "copy", "from": "enc", "lr": size}
        paths.append(tmp_path / f"{name}.pkl")
        paths[-1].write_bytes(pickle.dumps(ReturnnConfig({"learning_rate": size}, python_prolog=[serializer])))
    command = f"{sys.executable} -m i6_rc_jobs hash-diff {paths[0]} {paths[1]} | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.startswith("dim#") and done.stdout.count("\n") == 1, done.stdout
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.booleans())
def test_a_dim_added_before_the_others_is_one_line_however_it_renumbers_them(uses, also_resized):
    """A layer with a new dim sorted before every other: all dims after it are renumbered, which is no change, so
    hash-diff says the new dim with its layer (and a resized dim, if one was), and every line it says reads
    differently on its two sides."""
    from returnn.tensor import Dim

    from i6_rc_jobs import ReturnnCommonSerializer
    from i6_rc_jobs._cli.explain import explain

    def net(sizes: list[int]) -> dict:
        dims = [Dim(size, description=f"d{i}", kind=Dim.Types.Feature) for i, size in enumerate(sizes)]
        return {f"layer{i}": {"class": "linear", "from": "data", "out_dim": dims[use]} for i, use in enumerate(uses)}

    sizes = [8, 9, 10, 11]
    a = ReturnnCommonSerializer(network=net(sizes))
    resized = [*sizes[:-1], 12] if also_resized else sizes
    added = {"class": "linear", "from": "data", "out_dim": Dim(7, description="new", kind=Dim.Types.Feature)}
    b = ReturnnCommonSerializer(network={"added": added, **net(resized)})
    lines = list(explain(a, b))
    assert lines[:2] == [
        "dim#0 'new' (first at network['added']['out_dim']): (none) -> feature 7, and 1 line that follows from it:",
        "  network['added']: (missing) -> {'class': 'linear', 'from': 'data', 'out_dim': <dim#0 'new' feature 7>}",
    ]
    assert all(line.split(": ", 1)[1].split(" -> ")[0] != line.rsplit(" -> ", 1)[1] for line in lines), lines
    if also_resized and 3 in uses:
        (resize,) = lines[2:3]
        assert resize.startswith(f"dim#{1 + list(dict.fromkeys(uses)).index(3)} 'd3' (first at network['layer"), lines
        assert ": feature 11 -> feature 12" in resize and len(lines) == 3, lines
    else:
        assert len(lines) == 2, lines


def _torch_jobs(*edits) -> list:
    """CreateConfigJobs of the example's RETURNN-frontend config (``task12ax_rf_model.config_values()``) in a
    ReturnnConfigSerializer, each with its values edited by one of ``edits``."""
    from i6_rc_jobs import CreateConfigJob, ReturnnConfigSerializer
    from recipe_examples.recipe.task12ax_rf_model import config_values

    return [
        CreateConfigJob(
            ReturnnConfig({"backend": "torch"}, python_prolog=[ReturnnConfigSerializer(edit(config_values()))])
        )
        for edit in edits
    ]


def _with_model(values: dict, *args, **keywords) -> dict:
    """``values`` with ``get_model`` a partial of the same model, its args and keywords replaced by those given."""
    import functools

    model = values["get_model"]
    return {
        **values,
        "get_model": functools.partial(model.func, *(args or model.args), **{**model.keywords, **keywords}),
    }


CONFIG = "CreateConfigJob.returnn_config.python_prolog_hash[0].config"


def test_a_config_serializers_changed_dim_is_named_by_its_value_path(tmp_path):
    """Pickled jobs, through the command: the input dim's size, first at the data's dims (the model's first arg
    is the same dim, so no other line)."""
    from returnn.tensor import Dim

    def resized(values: dict) -> dict:
        data = values["extern_data"]["data"]
        (in_dim,) = [dim for dim in data["dims"] if dim.dimension == 9]
        bigger = Dim(10, name="input")
        data["dims"] = [bigger if dim is in_dim else dim for dim in data["dims"]]
        return _with_model(values, bigger, values["get_model"].args[1])

    for name, job in zip("ab", _torch_jobs(lambda values: values, resized)):
        (tmp_path / f"{name}.pkl").write_bytes(pickle.dumps(job))
    diff = hash_diff(tmp_path / "a.pkl", tmp_path / "b.pkl")
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.splitlines() == [
        f"dim#2 'input' (first at {CONFIG}['extern_data']['data']['dims'][2]): unspecified 9 -> unspecified 10"
    ]


def test_a_partials_keywords_args_and_functions_are_named_by_their_parts():
    from returnn.tensor import Dim

    from i6_rc_jobs._cli.explain import explain
    from recipe_examples.recipe.task12ax_rf_model import train_step_without_loss

    def edited(values: dict) -> dict:
        values = _with_model(values, num_heads=2, model_dim=Dim(64, name="model"))
        return {**values, "train_step": train_step_without_loss}

    module = "recipe_examples.recipe.task12ax_rf_model"
    assert list(explain(*_torch_jobs(lambda values: values, edited))) == [
        f"dim#3 'model' (first at {CONFIG}['get_model'].keywords['model_dim']): unspecified 32 -> unspecified 64",
        f"{CONFIG}['get_model'].keywords['num_heads']: (missing) -> 2",
        f"{CONFIG}['train_step']: <import {module}:train_step> -> <import {module}:train_step_without_loss>",
    ]


def test_a_dim_that_is_no_longer_another_is_an_identity_change_with_what_stood_there():
    """Dims of one size and kind, once one dim and then two: the model's output dim no longer the classes' sparse
    dim, the model output's feature dim a copy of the model dim that lost its ``same_as``. The new dim is said
    where it first occurs, with the dim that stood there before."""
    from returnn.tensor import Dim, batch_dim

    from i6_rc_jobs._cli.explain import explain

    def other_classes(values: dict) -> dict:
        return _with_model(values, values["get_model"].args[0], Dim(2, name="classes"))

    assert list(explain(*_torch_jobs(lambda values: values, other_classes))) == [
        f"dim#3 'classes' (first at {CONFIG}['get_model'].args[1]): dim#1 'classes' unspecified 2 -> unspecified 2"
    ]

    def model_outputs(same_as: bool):
        def edit(values: dict) -> dict:
            model_dim = values["get_model"].keywords["model_dim"]
            out = model_dim.copy(same_as_self=True, description="out") if same_as else Dim(32, name="out")
            time_dim = values["extern_data"]["data"]["dims"][1]
            return {**values, "model_outputs": {"output": {"dims": [batch_dim, time_dim, out]}}}

        return edit

    assert list(explain(*_torch_jobs(model_outputs(True), model_outputs(False)))) == [
        f"dim#4 'out' (first at {CONFIG}['model_outputs']['output']['dims'][2]): dim#3 'model' unspecified 32 "
        "-> unspecified 32"
    ]


#: A manager start: a CreateConfigJob whose serializer holds by_content markers of the setup's model, pickled.
BY_CONTENT_JOB = """
import pickle
import sys

from i6_core.returnn.config import ReturnnConfig

from i6_rc_jobs import CreateConfigJob, ReturnnConfigSerializer, by_content

values = {"get_model": by_content("my_model:Model", dim=8), "train_step": by_content("my_model:train_step")}
job = CreateConfigJob(ReturnnConfig({"backend": "torch"}, python_prolog=[ReturnnConfigSerializer(values)]))
with open(sys.argv[1], "wb") as f:
    pickle.dump(job, f)
"""


@pytest.mark.slow  # each manager start starts a build server that imports torch
def test_a_by_content_marker_in_a_config_serializer_names_the_code_that_changed(tmp_path):
    from tests.test_code_hash import HELPER, MODEL

    (tmp_path / "my_model.py").write_text(MODEL)
    (tmp_path / "act_helper.py").write_text(HELPER)
    (tmp_path / "manager.py").write_text(BY_CONTENT_JOB)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]),
        I6_RC_BUILD_CACHE=str(tmp_path / "cache"),
        CUDA_VISIBLE_DEVICES="",
    )
    for name in ("a", "b"):
        if name == "b":
            model = tmp_path / "my_model.py"
            model.write_text(model.read_text().replace("activation(self.linear(x))", "activation(self.linear(x)) * 2"))
        done = subprocess.run(
            [sys.executable, "manager.py", f"{name}.pkl"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    diff = hash_diff(tmp_path / "a.pkl", tmp_path / "b.pkl")
    assert diff.returncode == 1, diff.stderr
    changed = f"module my_model ({tmp_path / 'my_model.py'}): Model.forward changed"
    lines = diff.stdout.splitlines()
    assert [line for line in lines if not line.startswith("    ")] == [
        f"{CONFIG}['get_model'].code: {changed}",
        f"{CONFIG}['get_model'].code: the code's diff:",  # of the snapshots of the code each hashed
    ]  # (train_step, in the same file, never reaches Model.forward: its code is the same)
    assert lines.count("    +        return activation(self.linear(x)) * 2") == 1

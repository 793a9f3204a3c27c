"""ReturnnConfigSerializer: any RETURNN config's values (a PyTorch / RETURNN-frontend config) written with the dim
prolog, read back with their dims' identities, and hashed by content."""

from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from i6_core.returnn.config import ReturnnConfigV2
from i6_core.serialization.base import Import, PartialImport
from returnn.tensor import Dim, batch_dim
from sisyphus import tk

from i6_rc_jobs import SerializationError
from i6_rc_jobs.serializers import ReturnnConfigSerializer
from tests.support.config_cases import rf_config_values, task12ax_rf_model
from tests.support.golden import CONFIG_HASHES, GOLDEN, current_config_hashes
from tests.support.sisyphus_setup import REPO, make_setup, run_manager

CONFIG_GOLDEN = GOLDEN / "rf_config.config"


def executed(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<config>", "exec"), namespace)
    return namespace


def test_written_code_and_hash_match_the_golden_files():
    serializer = ReturnnConfigSerializer(rf_config_values())
    assert serializer.get() == CONFIG_GOLDEN.read_text()
    assert current_config_hashes() == json.loads(CONFIG_HASHES.read_text())


def test_round_trip_gives_back_the_dims_with_their_identities_and_the_values():
    serializer = ReturnnConfigSerializer(rf_config_values())
    ns = executed(serializer.get())
    data, classes = ns["extern_data"]["data"]["dims"], ns["extern_data"]["classes"]
    assert data[0] is batch_dim and classes["dims"][1] is data[1]  # one time dim, the global batch dim
    model = ns["get_model"]
    assert isinstance(model, functools.partial) and model.func is task12ax_rf_model.Model
    assert model.args == (data[2], classes["sparse_dim"]) and model.keywords["model_dim"].dimension == 32
    copy = ns["model_outputs"]["output"]["dims"][2]
    assert copy is not classes["sparse_dim"] and copy.get_same_base() is classes["sparse_dim"]
    assert ns["aux"][0].derived_from_op.inputs[0] is data[1] and ns["train_step"] is task12ax_rf_model.train_step
    again = ReturnnConfigSerializer({key: ns[key] for key in serializer.values})
    assert again.get() == serializer.get() and again._sis_hash() == serializer._sis_hash()


def test_pickled_it_writes_and_hashes_alike():
    serializer = ReturnnConfigSerializer(rf_config_values())
    loaded = pickle.loads(pickle.dumps(serializer))
    assert loaded.get() == serializer.get() and loaded._sis_hash() == serializer._sis_hash()


def make_model(**kwargs: Any) -> dict:
    """A get_model of Python code (a builtin such as dict could read any description: it would hash them all)."""
    return kwargs


def _values(sizes: list[int], names: list[str], swap: bool = False) -> dict:
    dims = [Dim(size, name=name) for size, name in zip(sizes, names)]
    first, second = (dims[1], dims[0]) if swap else (dims[0], dims[1])
    model = functools.partial(make_model, a=first, b=second)
    return {"extern_data": {"x": {"dims": [batch_dim, *dims]}}, "get_model": model}


_sizes = st.lists(st.integers(1, 50), min_size=2, max_size=4)
_names = st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=4, max_size=4, unique=True)


@settings(max_examples=30, deadline=None)
@given(_sizes, _names, _names)
def test_names_are_cosmetic_in_the_hash(sizes, names, other_names):
    a = ReturnnConfigSerializer(_values(sizes, names))
    b = ReturnnConfigSerializer(_values(sizes, other_names))
    assert a._sis_hash() == b._sis_hash()


@settings(max_examples=30, deadline=None)
@given(_sizes, _names, st.integers(0, 3), st.integers(1, 5))
def test_a_size_change_moves_the_hash(sizes, names, which, delta):
    other = list(sizes)
    other[which % len(sizes)] += delta
    assert (
        ReturnnConfigSerializer(_values(sizes, names))._sis_hash()
        != ReturnnConfigSerializer(_values(other, names))._sis_hash()
    )


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 50), _names)
def test_two_dims_of_one_size_and_kind_keep_their_identities_in_the_hash(size, names):
    """Swapping which of two equal dims goes where is another model: serialization_v2 hashes both alike."""
    a = ReturnnConfigSerializer(_values([size, size], names))
    b = ReturnnConfigSerializer(_values([size, size], names, swap=True))
    assert a._sis_hash() != b._sis_hash()


def test_a_kind_change_and_a_same_as_change_move_the_hash():
    def values(kind, same):
        base = Dim(4, name="base", kind=kind)
        other = base.copy(same_as_self=True) if same else Dim(4, name="other", kind=kind)
        return {"model_outputs": {"out": {"dims": [base, other]}}}

    hashes = {ReturnnConfigSerializer(values(k, s))._sis_hash() for k in (None, Dim.Types.Feature) for s in (0, 1)}
    assert len(hashes) == 4


def test_a_value_with_its_own_sis_hash_is_hashed_by_it():
    def with_hash(digest):
        fn = task12ax_rf_model.train_step
        fn._sis_hash = lambda: digest  # type: ignore[attr-defined]
        try:
            return ReturnnConfigSerializer({"train_step": fn})._sis_hash()
        finally:
            del fn._sis_hash  # type: ignore[attr-defined]

    assert with_hash(b"code-a") != with_hash(b"code-b")
    assert with_hash(b"code-a") == with_hash(b"code-a")


def test_i6_core_imports_and_a_returnn_config_v2_convert():
    v2 = ReturnnConfigV2(
        {"backend": "torch", "extern_data": rf_config_values()["extern_data"]},
        python_prolog=[
            Import(task12ax_rf_model.train_step),
            PartialImport(
                code_object_path="task12ax_rf_model.Model",
                unhashed_package_root=None,
                hashed_arguments={"model_dim": Dim(32, name="model")},
                unhashed_arguments={},
                import_as="get_model",
            ),
        ],
    )
    config = ReturnnConfigSerializer.from_i6_core(v2)
    (serializer,) = config.python_prolog
    ns = executed(serializer.get())
    assert ns["train_step"] is task12ax_rf_model.train_step and ns["get_model"].func is task12ax_rf_model.Model
    assert ns["get_model"].keywords["model_dim"].dimension == 32 and config.config == {"backend": "torch"}


def test_bad_values_are_refused_naming_where_they_sit():
    with pytest.raises(SerializationError, match=r"get_model\.keywords\['f'\].*lambda"):
        ReturnnConfigSerializer({"get_model": functools.partial(dict, f=lambda: 1)})
    with pytest.raises(SerializationError, match="time_dim"):
        ReturnnConfigSerializer({"time_dim": 1})
    with pytest.raises(SerializationError, match="config key"):
        ReturnnConfigSerializer({"not an identifier": 1})


def _check_setup(tmp_path, train_step: str):
    return make_setup(
        tmp_path / train_step,
        f"""
        import os
        from sisyphus import tk
        from i6_rc_jobs import CheckedReturnnConfig, CreateConfigJob
        from i6_rc_jobs.serializers import ReturnnConfigSerializer
        import task12ax_rf_model

        def main():
            values = task12ax_rf_model.config_values()
            values["train_step"] = getattr(task12ax_rf_model, "{train_step}")
            config = CheckedReturnnConfig(
                {{"backend": "torch", "behavior_version": 21, "train": {{"class": "Task12AXDataset", "num_seqs": 10}},
                  "batch_size": 1000, "optimizer": {{"class": "adam"}}, "learning_rate": 0.01}},
                python_prolog=[ReturnnConfigSerializer(values, sys_path=[os.path.dirname(task12ax_rf_model.__file__)])],
            )
            job = CreateConfigJob(config, check=True)
            job.add_alias("check")
            tk.register_output("check", job.out_config)
        """,
    )


@pytest.mark.slow
def test_the_check_builds_the_torch_model_trains_a_step_and_reports_its_parameters(tmp_path):
    setup = _check_setup(tmp_path, "train_step")
    run_manager(setup, python_path=str(REPO / "recipe_examples" / "recipe"))
    report = json.loads((setup / "alias" / "check" / "output" / "check_report.json").read_text())
    assert report["num_parameters"] == 17730 and report["parameters"]["output.weight"] == [32, 2]
    assert set(report["losses"]) == {"train_loss_ce", "train_loss_fer"}
    assert "17730 parameters" in (setup / "alias" / "check" / "log.check_networks.1").read_text()


@pytest.mark.slow
def test_a_config_whose_training_would_fail_fails_the_check(tmp_path):
    setup = _check_setup(tmp_path, "train_step_without_loss")
    run_manager(setup, python_path=str(REPO / "recipe_examples" / "recipe"))
    job = setup / "alias" / "check"
    assert (job / "finished.run.1").exists() and (job / "error.check_networks.1").exists()
    (said,) = [
        line for line in (job / "log.check_networks.1").read_text().splitlines() if line.startswith("RuntimeError")
    ]
    assert "returnn.config: train step fails: AssertionError: call rf.get_run_ctx().mark_as_loss(...)" in said
    assert said.endswith(f"(the whole log: {job.resolve() / 'output' / 'check.log'})")
    assert "Traceback (most recent call last)" in (job / "output" / "check.log").read_text()


def test_identical_in_any_process_whatever_pythonhashseed():
    code = (
        "from tests.support.golden import config_cases; import sys\n"
        "s = config_cases()['rf_config'](); sys.stdout.write(s.get() + repr(s._sis_hash()))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    serializer = ReturnnConfigSerializer(rf_config_values())
    assert outputs == {serializer.get() + repr(serializer._sis_hash())}


def test_a_sisyphus_path_is_an_input_written_as_its_value():
    path = tk.Path("/data/vocab.txt")
    serializer = ReturnnConfigSerializer({"get_model": functools.partial(dict, vocab=path, n=Dim(3, name="n"))})
    assert serializer.__sis_state__()["sisyphus_values"] == [path]  # what Sisyphus takes as the job's input
    assert executed(serializer.get())["get_model"].keywords["vocab"] == "/data/vocab.txt"
    other = ReturnnConfigSerializer({"get_model": functools.partial(dict, vocab=tk.Path("/data/other.txt"))})
    assert other._sis_hash() != serializer._sis_hash()


def test_a_by_content_marker_is_written_as_its_reference_with_its_dims_without_importing_it():
    from i6_rc_jobs import by_content

    model_dim = Dim(32, name="model")
    marker = by_content("not_importable_here.models:Model", Dim(9, name="input"), model_dim=model_dim, live=True)
    serializer = ReturnnConfigSerializer({"get_model": marker, "dims": [model_dim]})
    code = serializer.get()
    assert "from not_importable_here.models import Model\n" in code and "not_importable_here" not in sys.modules
    assert "get_model = partial(Model, input_dim, model_dim=model_dim)\n" in code and "dims = [model_dim]\n" in code
    loaded = pickle.loads(pickle.dumps(serializer))
    assert loaded.get() == code and type(loaded.values["get_model"].owner).__name__ == "ByContent"

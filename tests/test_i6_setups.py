"""i6 setups that write their configs with i6_experiments' serialization (a ``Collection`` of ``Import``,
``PartialImport``, ``ExternalImport``, ``ExplicitHash``, ``NonhashedCode``, ...; the example setup
``ctc_rnnt_standalone_2024``'s ``serialize_training`` and ``serialize_forward``), moved onto a ReturnnConfigSerializer by
``ReturnnConfigSerializer.from_i6_core``: with the real classes of the pinned i6_experiments checkout, converted,
hashed, written and loaded by RETURNN; what cannot be converted is refused where it sits."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from i6_core.returnn.config import ReturnnConfig
from sisyphus import tk
from sisyphus.hash import short_hash

from i6_rc_jobs import ReturnnConfigSerializer
from i6_rc_jobs._serialization.callables import NamedRef, PartialRef
from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs.jobs.config_file import config_code
from tests.support.sisyphus_setup import REPO

DEPS = REPO / ".deps" / "src"
GOLDEN = REPO / "tests" / "golden" / "i6_setup_hashes.json"
#: The example setup's network module (a CTC Conformer of i6_models), relative to its pytorch_networks package.
NETWORK = "ctc.conformer_0924.i6models_relposV1_VGG4LayerActFrontendV1_v1"
NET_ARGS = {"model_config_dict": {"conformer_size": 384, "num_layers": 12}}


@pytest.fixture(scope="module")
def i6():
    """i6_experiments' serialization modules and the example setup's serializer, from the pinned checkout."""
    sys.path.insert(0, str(DEPS / "i6_experiments" / ".."))
    try:
        from i6_experiments.common.setups import serialization
        from i6_experiments.common.setups.returnn_pytorch import serialization as torch_serialization
        from i6_experiments.example_setups.librispeech.ctc_rnnt_standalone_2024 import PACKAGE, serializer

        yield serialization, torch_serialization, serializer, PACKAGE
    finally:
        sys.path.remove(str(DEPS / "i6_experiments" / ".."))


def training_config(i6, **net_args) -> ReturnnConfig:
    """A training config as the example setup's ``get_training_config`` makes it (its datasets left out): the cache
    manager's code in a torch Collection in the prolog, ``serialize_training``'s Collection in the epilog."""
    serialization, torch_serialization, serializer, _ = i6
    return ReturnnConfig(
        {"batch_size": 1000, "optimizer": {"class": "adam"}, "max_seqs": 60},
        post_config={"backend": "torch", "stop_on_nonfinite_train_score": True},
        python_prolog=[torch_serialization.Collection([serialization.PythonCacheManagerFunctionNonhashedCode])],
        python_epilog=[serializer.serialize_training(NETWORK, net_args or NET_ARGS, {"debug": True})],
    )


def forward_config(i6) -> ReturnnConfig:
    """A recognition config as the example setup's ``get_forward_config`` makes it."""
    serializer = i6[2]
    collection = serializer.serialize_forward(
        NETWORK, NET_ARGS, forward_module="ctc.decoder.greedy_bpe_ctc_v3", forward_init_args={"beam_size": 1}
    )
    return ReturnnConfig({"batch_size": 16000}, post_config={"backend": "torch"}, python_epilog=[collection])


def test_the_example_setups_training_config_moves_by_name(i6):
    package = i6[3] + ".pytorch_networks." + NETWORK
    moved = ReturnnConfigSerializer.from_i6_core(training_config(i6))
    serializer = moved.python_prolog[-1]
    assert serializer.values["get_model"] == PartialRef(
        NamedRef(package, "Model"), (), {"debug": True, **NET_ARGS}  # the unhashed arguments too: the model gets them
    )
    assert serializer.values["train_step"] == NamedRef(package, "train_step")
    i6_models = i6[2].I6_MODELS_REPO_PATH.get_path()  # the ExternalImport, and the recipes' root of the Collection
    assert serializer._data["sys_path"] == [i6[1].Collection([]).root_path, i6_models]
    assert moved.config == {"batch_size": 1000, "max_seqs": 60} and moved.post_config["backend"] == "torch"
    code = config_code(moved)
    assert "def cf(filename):" in code and code.index("import os\n") < code.index("def cf(")  # kept, unhashed
    assert f"from {package} import Model, train_step as train_step_\n" in code
    assert 'get_model = partial(Model, debug=True, model_config_dict={"conformer_size": 384, "num_layers": 12})' in code


def test_the_example_setups_forward_config_binds_the_names_it_imports_as(i6):
    moved = ReturnnConfigSerializer.from_i6_core(forward_config(i6))
    decoder = i6[3] + ".pytorch_networks.ctc.decoder.greedy_bpe_ctc_v3"
    values = moved.python_prolog[-1].values
    assert values["forward_step"] == NamedRef(decoder, "forward_step")
    assert values["forward_init_hook"] == PartialRef(NamedRef(decoder, "forward_init_hook"), (), {"beam_size": 1})
    assert values["forward_finish_hook"] == NamedRef(decoder, "forward_finish_hook")
    assert sorted(values) == ["forward_finish_hook", "forward_init_hook", "forward_step", "get_model"]


def test_the_written_config_loads_in_returnn_with_the_setups_code(i6, tmp_path):
    """MiniReturnn (which the example setup's model code imports from) loads the written training config: the
    references are the setup's model and train_step, i6_models found where the config puts it."""
    moved = ReturnnConfigSerializer.from_i6_core(training_config(i6), sys_path=[str(DEPS / "i6_models"), str(DEPS)])
    (tmp_path / "returnn.config").write_text(config_code(moved))
    load = textwrap.dedent("""
        import json, sys
        from returnn.config import Config
        config = Config()
        config.load_file(sys.argv[1])
        get_model, train_step = config.typed_value("get_model"), config.typed_value("train_step")
        print(json.dumps([get_model.func.__module__, get_model.func.__name__, sorted(get_model.keywords),
                          train_step.__name__, config.value("backend", None), "i6_rc_jobs" in sys.modules]))
        """)
    done = subprocess.run(
        [sys.executable, "-c", load, str(tmp_path / "returnn.config")],
        env={"PYTHONPATH": str(DEPS / "MiniReturnn"), "CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    module, name, keywords, step, backend, ours = json.loads(done.stdout.strip().splitlines()[-1])
    assert (module, name, keywords) == (f"{i6[3]}.pytorch_networks.{NETWORK}", "Model", ["debug", "model_config_dict"])
    assert (step, backend, ours) == ("train_step", "torch", False)


def test_what_counts_for_the_hash_of_a_moved_config(i6):
    """The hash keeps what i6 hashed (the ExternalImport's path, an ExplicitHash) and leaves out what it left out
    (NonhashedCode, what an Import with use_for_hash=False imports); unhashed_package_root no longer shortens the
    names."""
    serialization, torch_serialization, _, package = i6

    def moved(*extra, network=NETWORK, root=package, path=None):
        objects = [
            serialization.ExternalImport(path or tk.Path("/i6_models", hash_overwrite="I6_MODELS")),
            serialization.PartialImport(
                code_object_path=f"{package}.pytorch_networks.{network}.Model",
                unhashed_package_root=root,
                hashed_arguments=NET_ARGS,
                unhashed_arguments={},
                import_as="get_model",
            ),
            *extra,
        ]
        return short_hash(ReturnnConfigSerializer.from_i6_core(ReturnnConfig({}, python_epilog=[objects])))

    base = moved()
    assert moved(network="ctc.conformer_1023.i6models_relposV1_VGG4LayerActFrontendV1_v1") != base
    assert moved(root=package + ".pytorch_networks") == base
    assert moved(path=tk.Path("/other/i6_models", hash_overwrite="I6_MODELS")) == base  # (hash_overwrite'n)
    assert moved(path=tk.Path("/other/i6_models")) != base
    assert moved(serialization.ExplicitHash("v2")) != base != moved(serialization.ExplicitHash("v3"))
    assert moved(serialization.NonhashedCode("x = 1\n")) == base == moved(serialization.NonhashedCode("x = 2\n"))
    unhashed = [  # (the name it binds counts, as a key the serializer leaves out of its hash)
        serialization.Import(f"{package}.pytorch_networks.{network}.train_step", use_for_hash=False)
        for network in (NETWORK, "ctc.conformer_1023.i6models_relposV1_VGG4LayerActFrontendV1_v1")
    ]
    assert moved(unhashed[0]) == moved(unhashed[1])


def test_the_hashes_of_the_moved_example_configs_are_the_golden_ones(i6):
    found = {
        "training": short_hash(ReturnnConfigSerializer.from_i6_core(training_config(i6))),
        "forward": short_hash(ReturnnConfigSerializer.from_i6_core(forward_config(i6))),
    }
    assert found == json.loads(GOLDEN.read_text())


@pytest.mark.parametrize(
    "make, where, said",
    [
        (
            lambda s, package: s.Call("range", [("stop", "3")], return_assign_variables="r"),
            r"^returnn_config\.python_epilog\[0\]\.serializer_objects\[1\]: ",
            "writes code that is no import",
        ),
        (
            lambda s, package: s.CodeFromFunction("get_model", tk.Path, hash_full_python_code=True),
            r"^returnn_config\.python_epilog\[0\]\.serializer_objects\[1\]: ",
            "hashed by its source: convert with code=by_content",
        ),
        (
            lambda s, package: s.Import(f"{package}.serializer.serialize_training", import_as="train_step"),
            r"^returnn_config\.python_epilog\[0\]\.serializer_objects\[1\]: ",
            "binds 'train_step', as returnn_config.python_epilog\\[0\\]\\.serializer_objects\\[0\\] does",
        ),
    ],
)
def test_what_cannot_be_converted_is_refused_where_it_sits(i6, make, where, said):
    serialization, package = i6[0], i6[3]
    train_step = serialization.Import(f"{package}.pytorch_networks.{NETWORK}.train_step")
    config = ReturnnConfig({}, python_epilog=[serialization.Collection([train_step, make(serialization, package)])])
    with pytest.raises(SerializationError, match=where + ".*" + said) as refused:
        ReturnnConfigSerializer.from_i6_core(config)
    assert "\n" not in str(refused.value)


def test_a_config_key_bound_again_by_an_import_is_refused(i6):
    serialization = i6[0]
    config = ReturnnConfig({"train_step": 1}, python_prolog=[serialization.Import("numpy.sum", import_as="train_step")])
    with pytest.raises(SerializationError, match=r"python_prolog\[0\]: .*as returnn_config.config\['train_step'\]"):
        ReturnnConfigSerializer.from_i6_core(config)


def test_a_subclass_of_a_serialization_object_is_refused(i6):
    serialization = i6[0]

    class MyImport(serialization.Import):
        def get(self) -> str:
            return "from somewhere_else import x\n"

    config = ReturnnConfig({}, python_prolog=[[MyImport("numpy.sum")]])
    with pytest.raises(SerializationError, match=r"^returnn_config\.python_prolog\[0\]\[0\]: .*MyImport"):
        ReturnnConfigSerializer.from_i6_core(config)

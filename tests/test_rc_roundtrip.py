"""ReturnnCommonSerializer on real returnn_common models: the written config gives back the same dims and dicts,
RETURNN from the pinned checkout loads it and constructs the TF network, and the hash behaves."""

from __future__ import annotations

from typing import Any

import pytest
from i6_core.returnn.config import ReturnnConfig

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._verify.returnn_check import construct_networks
from i6_rc_jobs.jobs.config_file import write_config_file
from tests import rc_builders, rc_models
from tests.support.dims import DimMap, assert_equal_up_to_dims
from tests.support.walk import distinct, leaves


def _serializer(extern_data: dict, network: dict) -> ReturnnCommonSerializer:
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[dict, dict]]:
    """Every model built once for this module (the Transformer alone takes seconds)."""
    return {name: builder() for name, builder in rc_models.ALL_BUILDERS.items()}


@pytest.mark.parametrize("name", list(rc_models.ALL_BUILDERS))
def test_written_config_gives_back_the_model_and_returnn_constructs_it(built, name, tmp_path):
    from returnn_common import nn

    extern_data, network = built[name]
    serializer = _serializer(extern_data, network)
    namespace: dict = {}
    exec(compile(serializer.get(), "config.py", "exec"), namespace)
    dims = DimMap()
    assert_equal_up_to_dims(extern_data, namespace["extern_data"], dims, "extern_data")
    assert_equal_up_to_dims(network, namespace["network"], dims, "network")

    path = tmp_path / "returnn.config"
    config = {"behavior_version": nn.min_returnn_behavior_version, "use_tensorflow": True}
    write_config_file(ReturnnConfig(config, python_prolog=[serializer]), str(path))
    layers = construct_networks(str(path), quiet=True)[1]
    assert "output" in layers


def _rename_dims(value: Any) -> None:
    """Gives every dim a new description, in place (a cosmetic change)."""
    from returnn.tensor import Dim

    for i, dim in enumerate(distinct(leaves(value), Dim).values()):
        if not dim.is_batch_dim() and not dim.special:
            dim.name = f"renamed {i}"


def _reversed_dicts(value: Any) -> Any:
    """The same value with every dict's insertion order reversed."""
    if isinstance(value, dict):
        return {k: _reversed_dicts(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reversed_dicts(v) for v in value]
    return value


@pytest.mark.parametrize("name", ["transformer", "enc_dec_loop"])
def test_hash_ignores_descriptions_names_and_dict_order(name):
    build = rc_models.ALL_BUILDERS[name]
    reference = _serializer(*build())
    extern_data, network = build()
    assert _serializer(_reversed_dicts(extern_data), _reversed_dicts(network))._sis_hash() == reference._sis_hash()
    _rename_dims((extern_data, network))
    renamed = _serializer(extern_data, network)
    assert renamed.dim_names() != reference.dim_names()
    assert renamed._sis_hash() == reference._sis_hash()


def test_hash_sees_model_changes():
    hashes = {
        _serializer(*rc_models.transformer(2, 64))._sis_hash(),
        _serializer(*rc_models.transformer(2, 32))._sis_hash(),
        _serializer(*rc_models.transformer(1, 64))._sis_hash(),
        _serializer(*rc_models.lstm_stack(2))._sis_hash(),
        _serializer(*rc_models.lstm_stack(3))._sis_hash(),
    }
    assert len(hashes) == 5


def test_from_returnn_common_takes_the_current_name_context():
    from returnn_common import nn

    nn.reset_default_root_name_ctx()
    time_dim = nn.SpatialDim("time")
    in_dim = nn.FeatureDim("in", 9)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    model = nn.Linear(in_dim, nn.FeatureDim("out", 4))
    model(data).mark_as_default_output()
    serializer = ReturnnCommonSerializer.from_returnn_common(model)
    out_dim = serializer.network["bias"]["shape"][0]
    assert (out_dim.size, out_dim.kind) == (4, "feature")
    assert serializer.extern_data["data"]["dims"][2].size == 9
    assert out_dim in serializer.network["output"]["out_shape"]
    with pytest.raises(SerializationError, match=r"^from_returnn_common: 'not a model' .* is not a returnn_common"):
        ReturnnCommonSerializer.from_returnn_common("not a model")


def test_written_search_net_constructs_for_recognition():
    """A returnn_common loop with ``nn.choice(search=True)``, written by the serializer: RETURNN constructs it with the
    search flag (``network_in_new_graph(search=True)``), with the beam on its output."""
    from returnn_common import nn

    from i6_rc_jobs._verify.returnn_check import network_in_new_graph
    from i6_rc_jobs._verify.semantics import load_config

    nn.reset_default_root_name_ctx()
    time_dim, in_dim, classes_dim = nn.SpatialDim("time"), nn.FeatureDim("in", 4), nn.FeatureDim("classes", 5)
    data = nn.get_extern_data(nn.Data("data", dim_tags=[nn.batch_dim, time_dim, in_dim]))
    model = nn.Linear(in_dim, classes_dim)
    loop = nn.Loop(axis=time_dim)
    with loop:
        log_probs = nn.log_softmax(model(loop.unstack(data)), axis=classes_dim)
        choice = nn.choice(log_probs, input_type="log_prob", target=None, search=True, beam_size=3)
        out = loop.stack(choice)
    out.mark_as_default_output()
    config = load_config(_serializer(*rc_builders.raw_dicts(nn, model)).get())
    with network_in_new_graph(config, config.typed_value("network"), train_flag=False, search=True) as network:
        assert (network.search_flag, network.eval_flag) == (True, False)  # as RETURNN's engine for recognition
        assert network.get_default_output_layer().output.beam.beam_size == 3

"""The table of i6_rc_jobs/_hashing/layer_options.py against the pinned RETURNN's layer classes, introspected: a RETURNN
that adds a layer class, accepts an option the table lacks, or gives an option a default that names a layer fails
here, so that the graph hash never reads what it does not know as if it knew it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from i6_rc_jobs._hashing import graph_rules
from i6_rc_jobs._hashing.layer_options import KINDS, READINGS

#: Parameters RETURNN fills in itself, which no net dict gives.
_INTERNAL = {"name", "network", "output", "sources", "rec_previous_layer"}
#: What LayerBase.transform_config_dict consumes beside the parameters of __init__ (popped from the layer dict).
_CONSUMED = {"class", "from", "loss_scale", "loss_opts", "loss_only_on_non_search"}
_REFERENCES = ("layer", "layers")


def _layer_classes() -> dict[str, type]:
    from returnn.tf.layers.basic import _LayerClassDict, get_layer_class

    get_layer_class("copy")  # registers every layer class
    return dict(_LayerClassDict)


def _parameters(function: Callable) -> dict[str, Any]:
    """The keyword parameters of a function, by name with their defaults."""
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if name not in ("self", "cls", *_INTERNAL)
        and not name.startswith("_")
        and parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
    }


def _accepted(cls: type) -> dict[str, Any]:
    """Every option a layer dict of ``cls`` may give, with its default: the parameters of the __init__ and
    get_out_data_from_opts of the class and its bases (LayerBase's too), and what transform_config_dict consumes."""
    from returnn.tf.layers.base import LayerBase

    options: dict[str, Any] = dict.fromkeys(_CONSUMED)
    for base in reversed(cls.__mro__):
        if isinstance(base, type) and issubclass(base, LayerBase):
            for method in ("get_out_data_from_opts", "__init__"):
                if method in vars(base):
                    options.update(_parameters(getattr(base, method)))
    return options


def _transform_sources(cls: type) -> list[str]:
    return [
        inspect.getsource(base.transform_config_dict) for base in cls.__mro__ if "transform_config_dict" in vars(base)
    ]


def test_every_layer_class_of_returnn_is_in_the_table():
    assert sorted(set(_layer_classes()) - set(READINGS)) == []
    assert sorted(set(READINGS) - set(_layer_classes())) == []


@pytest.mark.parametrize("name", sorted(READINGS))
def test_the_table_has_every_option_returnn_accepts_and_no_other(name: str):
    accepted = _accepted(_layer_classes()[name])
    assert sorted(set(accepted) - set(READINGS[name])) == [], f"options of {name!r} missing in layer_options.py"
    assert sorted(set(READINGS[name]) - set(accepted)) == [], f"options of {name!r} RETURNN does not accept"


def test_what_layerbase_consumes_is_returnns():
    from returnn.tf.layers.base import LayerBase

    source = inspect.getsource(LayerBase.transform_config_dict)
    for option in _CONSUMED - {"class"}:
        assert re.search(rf"""d\.pop\(["']{option}["']""", source), option


def test_every_reading_is_of_a_kind_and_cites_returnns_code():
    import returnn

    root = Path(returnn.__file__).parent.parent
    for name, readings in READINGS.items():
        for option, reading in readings.items():
            assert reading.kind in KINDS, (name, option)
            path, function = reading.cites.split(" ")
            text = (root / path).read_text()
            *owner, method = function.split(".")
            assert not owner or re.search(rf"^class {owner[0]}\b", text, re.M), (name, option, reading.cites)
            assert re.search(rf"^\s*def {method}\(", text, re.M), (name, option, reading.cites)


def test_the_readings_are_the_graph_rules():
    """The reference options, literal options and inert options the graph hash reads are those of the table."""
    for name, readings in READINGS.items():
        for option, reading in readings.items():
            reference = option in graph_rules.COMMON_REFERENCE_OPTIONS or option in (
                graph_rules.CLASS_REFERENCE_OPTIONS.get(name, ())
            )
            assert (reading.kind in _REFERENCES) == reference, (name, option)
            assert (reading.kind == "inert") == (option in graph_rules.INERT_OPTIONS), (name, option)
            if option in graph_rules.LITERAL_OPTIONS and option != "activation":
                assert reading.kind == "literal", (name, option)


_STR_DEFAULT = re.compile(r"""d\.(?:setdefault|pop|get)\(\s*["'](\w+)["']\s*,\s*[\[(]?\s*["']([^"']+)["']""")
_NO_SOURCES = re.compile(r"""d\.setdefault\(\s*["']from["']\s*,\s*(?:\[\]|\(\))""")


def test_no_default_names_a_layer_but_those_the_graph_resolves():
    """A reference option's default in a signature names no layer; a transform_config_dict's default that does is one
    the graph resolves (rule "layer-names"): "from" reads "data" unless the class defaults it to none
    (SOURCELESS_CLASSES), DEFAULT_REFERENCES; a loss's default target is extern_data's default target."""
    from returnn.tf.layers.base import LayerBase
    from returnn.tf.network import ExternData

    from i6_rc_jobs._hashing.graph import _DEFAULT_TARGET

    classes = _layer_classes()
    for name, cls in classes.items():
        for option, default in _accepted(cls).items():
            if READINGS[name][option].kind in _REFERENCES:
                assert not (type(default) is str and default) and not (
                    type(default) in (list, tuple) and any(type(item) is str for item in default)
                ), (name, option, default)
        for source in _transform_sources(cls):
            for option, default in _STR_DEFAULT.findall(source):
                if option in READINGS[name] and READINGS[name][option].kind in _REFERENCES:
                    expected = "data" if option == "from" else graph_rules.DEFAULT_REFERENCES.get(name, {}).get(option)
                    assert default == expected, (name, option, default)
    sourceless = {name for name, cls in classes.items() if any(map(_NO_SOURCES.search, _transform_sources(cls)))}
    assert graph_rules.SOURCELESS_CLASSES == sourceless
    assert "get_default_target(network.extern_data)" in inspect.getsource(LayerBase.transform_config_dict)
    assert inspect.signature(ExternData.__init__).parameters["default_target"].default == _DEFAULT_TARGET

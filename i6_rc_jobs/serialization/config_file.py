"""Writing an i6_core ReturnnConfig to a config file: compiled before it lands, atomically, the config untouched."""

from __future__ import annotations

import copy
from typing import Any, Iterator, Optional

from i6_core.returnn.config import ReturnnConfig

from ..atomic_file import write_atomically
from .errors import SerializationError
from .serializer import ReturnnCommonSerializer


def serializers_in(returnn_config: ReturnnConfig) -> Iterator[ReturnnCommonSerializer]:
    """The serializers in the config's python_prolog and python_epilog, which may nest them in lists and dicts."""
    stack: list[Any] = [returnn_config.python_prolog, returnn_config.python_epilog]
    while stack:
        item = stack.pop()
        if isinstance(item, ReturnnCommonSerializer):
            yield item
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))


def config_code(returnn_config: ReturnnConfig) -> str:
    """The config file's text, as i6_core writes it, with each serializer rendered once and the names it defines
    checked against the config's keys (a config key would silently override them). Works on a copy: i6_core merges
    post_config into config while writing and resolves delayed values in place, which would change the config's
    hash in the manager."""
    if returnn_config.staged_network_dict:
        raise SerializationError(
            "i6_core's staged_network_dict writes extra files next to the config: "
            "use ReturnnCommonSerializer(staged_networks=...), which writes get_network into the config itself"
        ).at("returnn_config.staged_network_dict")
    keys = set(returnn_config.config) | set(returnn_config.post_config)
    bound: dict[str, Optional[str]] = {}  # by the serializers before: name -> None (defined) or what it imports
    rendered: dict[int, str] = {}
    for serializer in serializers_in(returnn_config):
        if id(serializer) in rendered:
            continue
        code, names = serializer.code_and_names()
        clash = keys.intersection(names)
        if clash:
            raise SerializationError(
                f"config keys {sorted(clash)} are also defined by {serializer!r} (as dims, imports or its dicts): "
                f"remove or rename them"
            ).at("returnn_config.config")
        twice = [name for name, source in names.items() if name in bound and (source is None or bound[name] != source)]
        if twice:
            raise SerializationError(
                f"{sorted(twice)} are defined by two serializers, the later one would replace the other's (dims: put "
                f"extern_data and the network(s) into one ReturnnCommonSerializer, so that they share them)"
            ).at("returnn_config.python_prolog/python_epilog")
        bound.update(names)
        rendered[id(serializer)] = code
    to_write = copy.copy(returnn_config)
    to_write.config = copy.deepcopy(returnn_config.config)
    to_write.post_config = copy.deepcopy(returnn_config.post_config)
    to_write.python_prolog = _with_code(returnn_config.python_prolog, rendered)
    to_write.python_epilog = _with_code(returnn_config.python_epilog, rendered)
    return to_write._serialize()


def _with_code(item: Any, rendered: dict[int, str]) -> Any:
    """The prolog or epilog structure with each serializer replaced by its rendered code (i6_core joins strings)."""
    if isinstance(item, ReturnnCommonSerializer):
        return rendered[id(item)]
    if isinstance(item, (list, tuple)):
        return type(item)(_with_code(x, rendered) for x in item)
    if isinstance(item, dict):
        return {k: _with_code(v, rendered) for k, v in item.items()}
    return item


def write_config_file(returnn_config: ReturnnConfig, path: str, *, compile_check: bool = True) -> None:
    """Puts the file in place atomically and durably (see :func:`write_atomically`), by default after compiling it,
    so that a syntax error (e.g. in a python_prolog string) names its line and nothing is written."""
    code = config_code(returnn_config)
    if compile_check:
        compile(code, path, "exec")
    write_atomically(path, code.encode("utf-8"))

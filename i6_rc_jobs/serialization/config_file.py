"""Writing an i6_core ReturnnConfig to a config file: compiled before it lands, atomically, the config untouched."""

from __future__ import annotations

import copy
import os
import tempfile
from typing import Any, Iterator

from i6_core.returnn.config import ReturnnConfig

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
    """The config file's text, as i6_core writes it, but from a copy: i6_core merges post_config into config while
    writing, which would change the config's hash in the manager."""
    if returnn_config.staged_network_dict:
        raise SerializationError(
            "i6_core's staged_network_dict writes extra files next to the config: "
            "use ReturnnCommonSerializer(staged_networks=...), which writes get_network into the config itself"
        ).at("returnn_config.staged_network_dict")
    keys = set(returnn_config.config) | set(returnn_config.post_config)
    for serializer in serializers_in(returnn_config):
        clash = keys & set(serializer.dim_names())
        if clash:
            raise SerializationError(
                f"config keys {sorted(clash)} are also dim names of {serializer!r}: rename the config keys"
            ).at("returnn_config.config")
    return copy.deepcopy(returnn_config)._serialize()


def write_config_file(returnn_config: ReturnnConfig, path: str) -> None:
    """Compiles the code, then puts the file in place atomically: a killed writer leaves no partial file."""
    code = config_code(returnn_config)
    compile(code, path, "exec")  # a SyntaxError names the line in the file that would have been written
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp.", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(code)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise

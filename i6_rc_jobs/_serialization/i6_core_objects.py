"""i6_core's serialization objects (``i6_core.serialization``: ``Import``, ``PartialImport``, ...) as the values they
stand for, so that setups written for i6_core's serializers can put them into a :class:`.config_values.SerializedConfig`
as they are: an ``Import`` is the function or class it imports, a ``PartialImport`` a ``functools.partial`` of it.
What they hash by changes: module and qualified name, as for any function (``unhashed_package_root`` no longer
shortens it), and the partial's arguments, all of them (``unhashed_arguments`` too, which the model is built with)."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from i6_rc_jobs._serialization.errors import SerializationError, describe


def i6_core_object_value(value: Any) -> Any:
    """The function, class or partial an i6_core ``Import`` or ``PartialImport`` stands for (a value of kind
    I6_CORE_OBJECT); an error for the other serialization objects (they write code, not a value)."""
    from i6_core.serialization.base import CallImport, Import, PartialImport

    if isinstance(value, Import) and not isinstance(value, CallImport):
        obj = imported_object(value)
        if isinstance(value, PartialImport):
            return functools.partial(obj, **value.unhashed_arguments, **value.hashed_arguments)
        return obj
    raise SerializationError(
        f"{describe(value)} writes code, not a value: put the object it makes into the config itself (a call as "
        f"the value it returns, code as a function of an importable module)"
    )


def imported_object(value: Any) -> Any:
    """What an i6_core ``Import`` imports, imported now (its module as Python finds it here)."""
    try:
        return getattr(importlib.import_module(value.module), value.object_name)
    except (ImportError, AttributeError) as e:
        raise SerializationError(f"{describe(value)} does not import here: {e}: make it importable") from None


def import_name(value: Any) -> str:
    """The name an i6_core ``Import`` binds in the config it writes."""
    return value.import_as or value.object_name


#: Config values that stay in the config dict: i6_core's jobs read some of them (``backend``), none needs code.
PLAIN_TYPES = (str, int, float, bool, type(None))


def config_values_of(returnn_config: Any) -> tuple[dict[str, Any], dict[str, Any], list[Any], list[Any]]:
    """(plain, values, prolog, epilog) of an i6_core ``ReturnnConfig`` or ``ReturnnConfigV2``: the config values of
    plain types (str, numbers, bool, None), the others with the values that the ``Import`` and ``PartialImport``
    objects of its python_prolog bind (by the name each binds), and the rest of its prolog and its epilog as they
    are. A staged network dict is refused (RETURNN-frontend configs have none)."""
    from i6_core.serialization.base import Import

    if returnn_config.staged_network_dict:
        raise SerializationError("a staged network dict has no config value form").at("returnn_config")
    plain = {key: value for key, value in returnn_config.config.items() if type(value) in PLAIN_TYPES}
    values = {key: value for key, value in returnn_config.config.items() if key not in plain}
    prolog = returnn_config.python_prolog
    items = list(prolog) if isinstance(prolog, (list, tuple)) else [] if prolog is None else [prolog]
    rest = []
    for i, item in enumerate(items):
        if isinstance(item, Import):
            name = import_name(item)
            if name in values or name in plain:
                raise SerializationError(f"{describe(item)} binds {name!r}, a config key too: rename one").at(
                    f"returnn_config.python_prolog[{i}]"
                )
            values[name] = item
        else:
            rest.append(item)
    epilog = returnn_config.python_epilog
    return (
        plain,
        values,
        rest,
        list(epilog) if isinstance(epilog, (list, tuple)) else [] if epilog is None else [epilog],
    )

"""i6_core's and i6_experiments' serialization objects (``Collection``, ``Import``, ``PartialImport``,
``ExternalImport``, ``ExplicitHash``, ``NonhashedCode``, ...) in our terms, so that setups written for them move onto a
:class:`.config_values.SerializedConfig`: an ``Import`` is a reference to the function or class it imports, a
``PartialImport`` a ``functools.partial`` of it, by name or by content as the user chooses; an ``ExternalImport`` a
``sys.path`` entry; ``ExplicitHash`` a hash input and ``NonhashedCode`` code, both as they are. What references hash
by changes: module and qualified name, as for any function (``unhashed_package_root`` no longer shortens it), and the
partial's arguments, all of them (``unhashed_arguments`` too, which the model is built with)."""

from __future__ import annotations

import functools
import importlib
import os
from typing import Any, Callable, NamedTuple, Optional

from i6_rc_jobs._serialization.callables import NamedRef, PartialRef
from i6_rc_jobs._serialization.errors import SerializationError, describe


def i6_core_object_value(value: Any) -> Any:
    """The function, class or partial an i6_core ``Import`` or ``PartialImport`` stands for (a value of kind
    I6_CORE_OBJECT); an error for the other serialization objects (they write code, not a value)."""
    from i6_core.serialization.base import CallImport, Import, PartialImport

    if isinstance(value, Import) and not isinstance(value, CallImport):
        obj = imported_object(value)
        if isinstance(value, PartialImport):
            return functools.partial(obj, **_arguments(value))
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


def _arguments(value: Any) -> dict[str, Any]:
    """The keywords a ``PartialImport`` binds: its unhashed and its hashed arguments (the model is built with both)."""
    return {**value.unhashed_arguments, **value.hashed_arguments}


#: The modules whose serialization objects are converted, by class name (the classes of one name behave alike).
KNOWN_MODULES = frozenset(
    {
        "i6_core.serialization.base",
        "i6_experiments.common.setups.serialization",
        "i6_experiments.common.setups.returnn_pytorch.serialization",
    }
)
#: Config values that stay in the config dict: i6_core's jobs read some of them (``backend``), none needs code.
PLAIN_TYPES = (str, int, float, bool, type(None))
#: How a reference to code becomes a config value: ``(target, **keywords)``, ``target`` as ``"module:qualname"``
#: (e.g. :func:`i6_rc_jobs.by_content`); None: by name (a NamedRef, or a PartialRef of one).
CodeReference = Optional[Callable[..., Any]]


class Converted(NamedTuple):
    """An i6_core ``ReturnnConfig`` in our terms: its config values of plain types (``plain``), the others with the
    references its serialization objects bind (``values``, of which ``unhashed`` are left out of the hash), the
    directories that its ``ExternalImport`` objects and torch ``Collection`` objects put on ``sys.path``, and its
    prolog and epilog as written and as hashed (``ExplicitHash`` only hashed, ``NonhashedCode`` only written)."""

    plain: dict[str, Any]
    values: dict[str, Any]
    unhashed: list[str]
    sys_path: list[str]
    prolog: list[Any]
    prolog_hash: list[Any]
    epilog: list[Any]
    epilog_hash: list[Any]


def config_values_of(returnn_config: Any, code: CodeReference = None) -> Converted:
    """An i6_core ``ReturnnConfig`` or ``ReturnnConfigV2`` in our terms (:class:`Converted`); ``code`` makes the
    references of ``Import``, ``PartialImport`` and ``CodeFromFunction``. What cannot be converted is refused,
    naming the object and where it sits (``returnn_config.python_epilog[0].serializer_objects[2]``). A staged network
    dict is refused (RETURNN-frontend configs have none)."""
    if returnn_config.staged_network_dict:
        raise SerializationError("a staged network dict has no config value form").at("returnn_config")
    plain = {key: value for key, value in returnn_config.config.items() if type(value) in PLAIN_TYPES}
    values = {key: value for key, value in returnn_config.config.items() if key not in plain}
    converter = _Converter(plain, values, code)
    prolog = converter.part(returnn_config.python_prolog, "python_prolog")
    epilog = converter.part(returnn_config.python_epilog, "python_epilog")
    return Converted(plain, values, converter.unhashed, converter.sys_path, *prolog, *epilog)


def _known(obj: Any) -> Optional[str]:
    """The class name of an i6_core or i6_experiments serialization object (exactly of their class), else None."""
    cls = type(obj)
    return cls.__name__ if cls.__module__ in KNOWN_MODULES else None


class _Converter:
    """Walks a config's prolog and epilog, binding references into ``values`` (by the path that bound each name)."""

    def __init__(self, plain: dict[str, Any], values: dict[str, Any], code: CodeReference):
        self.taken = {key: f"returnn_config.config[{key!r}]" for key in (*plain, *values)}
        self.values, self.code = values, code
        self.unhashed: list[str] = []
        self.sys_path: list[str] = []

    def part(self, code: Any, name: str) -> tuple[list[Any], list[Any]]:
        """(written, hashed) of the prolog or epilog ``code``, its nested lists, tuples and dicts flattened."""
        written: list[Any] = []
        hashed: list[Any] = []
        self.walk(code, f"returnn_config.{name}", written, hashed)
        return written, hashed

    def walk(self, code: Any, where: str, written: list[Any], hashed: list[Any]) -> None:
        if isinstance(code, (list, tuple, dict)):
            for key, item in code.items() if isinstance(code, dict) else enumerate(code):
                self.walk(item, f"{where}[{key!r}]", written, hashed)
        elif _known(code) == "Collection":
            kept: list[Any] = []
            for j, obj in enumerate(code.serializer_objects):
                self.item(obj, f"{where}.serializer_objects[{j}]", kept, hashed)
            if hasattr(code, "root_path"):  # the torch Collection: the recipes' root on sys.path, os and sys imported
                self.add_sys_path(code.root_path)
                kept[:0] = ["import os\nimport sys\n"] if kept else []
            written += kept
        elif code is not None and code != "":
            self.item(code, where, written, hashed)

    def item(self, obj: Any, where: str, written: list[Any], hashed: list[Any]) -> None:
        """Converts one object of the prolog or epilog: binds a reference, or keeps it as code, hash input or both."""
        kind = _known(obj)
        if kind in ("Import", "PartialImport"):
            keywords = _arguments(obj) if kind == "PartialImport" else {}
            self.bind(obj.import_as or obj.object_name, obj.module, obj.object_name, keywords, where)
            if not obj.use_for_hash:
                self.unhashed.append(obj.import_as or obj.object_name)
        elif kind == "CodeFromFunction":
            if obj.hash_full_python_code and self.code is None:
                raise SerializationError(
                    f"{describe(obj)} is hashed by its source: convert with code=by_content to hash it by its code"
                ).at(where)
            module, qualname = obj.func.__module__, obj.func.__qualname__
            if "<locals>" in qualname or module == "__main__":
                raise SerializationError(
                    f"{describe(obj)}: {module}.{qualname} is imported by the config instead of pasted: define it at "
                    "module level of a module under recipe/"
                ).at(where)
            self.bind(obj.name, module, qualname, {}, where)
        elif kind == "ExternalImport":
            path = obj.import_path
            self.add_sys_path(path if isinstance(path, str) else path.get_path())
            hashed.append(obj)
        elif kind == "ExplicitHash":
            hashed.append(obj)
        elif kind in ("NonhashedCode", "NonhashedCodeFromFile"):
            written.append(obj)
        elif kind is not None or _is_serializer_object(obj):
            raise SerializationError(
                f"{describe(obj)} writes code that is no import, sys.path entry, hash input or unhashed code: put the "
                "value it makes into the config, or its code into a function of a module under recipe/ and an Import"
            ).at(where)
        else:  # i6_core's plain prolog code (str, functions, classes): written and hashed as i6_core does
            written.append(obj)
            hashed.append(obj)

    def bind(self, name: str, module: str, qualname: str, keywords: dict[str, Any], where: str) -> None:
        if name in self.taken:
            raise SerializationError(f"binds {name!r}, as {self.taken[name]} does: rename one").at(where)
        self.taken[name] = where
        if self.code is not None:
            self.values[name] = self.code(f"{module}:{qualname}", **keywords)
        else:
            named = NamedRef(module, qualname)
            self.values[name] = PartialRef(named, (), keywords) if keywords else named

    def add_sys_path(self, path: str) -> None:
        if os.fspath(path) not in self.sys_path:
            self.sys_path.append(os.fspath(path))


def _is_serializer_object(obj: Any) -> bool:
    """Whether ``obj`` is of a class of i6_core's serialization or of i6_experiments (their serialization objects,
    their subclasses, returnn_common's ``Collection``), which write code of their own."""
    return any(cls.__module__.startswith(("i6_core.serialization.", "i6_experiments.")) for cls in type(obj).__mro__)

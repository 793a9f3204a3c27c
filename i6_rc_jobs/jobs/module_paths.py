"""Whether the modules of the functions and classes a ``ReturnnConfigSerializer`` holds can be imported where the
config runs and where Sisyphus loads its job: checked in the manager, when the config is made, so that a forgotten
``sys_path=`` or a module found only through a ``sys.path`` entry the setup's config added is named there, not in a
``ModuleNotFoundError`` of the worker that unpickles the job or of RETURNN loading the written config."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import Any, Iterable, Iterator, Optional

from i6_rc_jobs._hashing.containers import leaves
from i6_rc_jobs._serialization.callables import ContentRef, ModuleRef
from i6_rc_jobs._serialization.config_values import SerializedConfig
from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._serialization.kinds import kind_of
from i6_rc_jobs._serialization.serialized_code import SerializedCode

#: Run in a fresh process of this Python: where each top-level module is found, without and with the directories a
#: serializer's ``sys_path`` puts first (as the written config does).
_FIND = """
import importlib.util, json, sys
names, extra = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def where(name):
    sys.path_importer_cache.clear()
    spec = importlib.util.find_spec(name)
    return None if spec is None else (list(spec.submodule_search_locations or []) or [spec.origin])
alone = {name: where(name) for name in names}
sys.path[:0] = extra
print(json.dumps({name: [alone[name], where(name)] for name in names}))
"""


def check_importable(serializers: Iterable[SerializedCode]) -> None:
    """Refuses a config (given by its serializers) whose ``ReturnnConfigSerializer`` holds a function, class or module that a fresh process of
    this Python (started here, with this environment) finds elsewhere than this one did, or not at all: RETURNN,
    which imports it by name (after the serializer's ``sys_path``), and Sisyphus's worker, which unpickles the job
    (through the Python's own paths and Sisyphus's ``IMPORT_PATHS``)."""
    seen: set[int] = set()
    for serializer in serializers:
        if isinstance(serializer, SerializedConfig) and id(serializer) not in seen:
            seen.add(id(serializer))
            modules = {name: found for name in _top_modules(serializer) if (found := _location(name)) is not None}
            if modules:
                _check(modules, tuple(serializer._data["sys_path"]))


def _top_modules(serializer: SerializedConfig) -> Iterator[str]:
    """The top-level package of each function, class and module the values import (not the ``by_content`` ones,
    which the job imports from snapshots)."""
    for value in leaves([value for _, value in serializer.sections()], whole=(ContentRef,)):
        if type(value) is ModuleRef:
            yield value.name.split(".")[0]
        elif kind_of(value) == "imported" and isinstance(getattr(value, "__module__", None), str):
            yield value.__module__.split(".")[0]


def _location(name: str) -> Optional[list[str]]:
    """Where this process found the top-level module ``name`` (its directories, or its file), None where nothing can
    be compared (a builtin module, one not loaded)."""
    spec = getattr(sys.modules.get(name), "__spec__", None)
    if spec is None:
        return None
    found = list(spec.submodule_search_locations or []) or [spec.origin]
    return None if None in found or spec.origin in ("built-in", "frozen") else found


def _check(modules: dict[str, list[str]], sys_path: tuple[str, ...]) -> None:
    fresh = _fresh_locations(tuple(sorted(modules)), sys_path)
    for name, here in sorted(modules.items()):
        alone, with_sys_path = fresh[name]
        if not _same(here, with_sys_path):
            raise SerializationError(
                f"RETURNN imports the module {name!r} by name, but a fresh Python finds it "
                f"{_said(with_sys_path)}, not in {here[0]} as here: give the serializer "
                f"sys_path=[{os.path.dirname(os.path.abspath(here[0]))!r}] (a setup's recipe/ directory), where "
                f"RETURNN finds it"
            ).at("ReturnnConfigSerializer(sys_path=...)")
        if not (_same(here, alone) or _same(here, _sisyphus_location(name))):
            raise SerializationError(
                f"the module {name!r} is found in {here[0]} only through a sys.path entry that this process added: "
                f"Sisyphus's workers, which load the job without running the setup's config, cannot import it: put "
                f"it under the setup's recipe/ directory, or its directory on PYTHONPATH"
            ).at("ReturnnConfigSerializer(...)")


def _same(a: Optional[list[str]], b: Optional[list[str]]) -> bool:
    """Whether both found the module in the same place (a namespace package's directories in any order)."""
    return a is not None and b is not None and {os.path.realpath(p) for p in a} == {os.path.realpath(p) for p in b}


def _said(found: Optional[list[str]]) -> str:
    return "nowhere" if found is None else f"in {found[0]}"


@functools.cache
def _fresh_locations(names: tuple[str, ...], sys_path: tuple[str, ...]) -> dict[str, list[Any]]:
    """What :data:`_FIND` says, once per process for each set of modules and directories."""
    command = [sys.executable, "-c", _FIND, json.dumps(list(names)), json.dumps(list(sys_path))]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _sisyphus_location(name: str) -> Optional[list[str]]:
    """Where Sisyphus's finder of the setup's code (``IMPORT_PATHS``: ``recipe/``, ``config``) finds ``name``."""
    from sisyphus.loader import RecipeFinder

    spec = RecipeFinder.find_spec(name, None)
    return None if spec is None else (list(spec.submodule_search_locations or []) or [spec.origin])

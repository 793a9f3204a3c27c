"""The RETURNN config that a model's code reads while it is built: RETURNN-frontend setups call
``get_global_config()`` in ``get_model`` (and RETURNN reads options while it constructs). In the build, that returns
a config holding the job's options as given (none when no job's config is known), and every option looked up is
noted: what construction read counts, so the hash covers the path construction took in the job."""

from __future__ import annotations

import ast
import contextlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Iterator, Optional, Sequence

#: The module whose ``get_global_config`` is answered (RETURNN's and MiniReturnn's).
CONFIG_MODULE = "returnn.config"


class _Noting(dict):
    """A config's dict that notes each key looked up (``in``, ``[]``, ``get``): every accessor of RETURNN's Config
    goes through one of them. A key of ``unavailable`` raises where it is looked up."""

    def __init__(self, items: dict[str, Any], looked_up: dict[str, None], unavailable: frozenset[str]):
        super().__init__(items)
        self.looked_up, self.unavailable = looked_up, unavailable

    def _note(self, key: object) -> None:
        if key in self.unavailable:
            raise RuntimeError(
                f"the model's construction reads the config's option {key!r}, whose value is no plain value (a dim, "
                "a function): read it where the model runs, or pass what construction needs as an argument"
            )
        self.looked_up.setdefault(str(key))

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)

    def __getitem__(self, key: str) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)


class _Answering(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds :data:`CONFIG_MODULE` where the other finders do, and runs ``answer`` on the module right after it ran,
    before any code can take its ``get_global_config``."""

    def __init__(self, answer: Any):
        self.answer = answer
        self.wrapped: Optional[importlib.abc.Loader] = None

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None) -> Any:
        if fullname != CONFIG_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        self.wrapped, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        assert self.wrapped is not None
        return self.wrapped.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self.wrapped is not None
        self.wrapped.exec_module(module)
        self.answer(module)


@contextlib.contextmanager
def job_config(options: dict[str, Any], unavailable: frozenset[str]) -> Iterator[dict[str, None]]:
    """While active, RETURNN's ``get_global_config()`` (imported before or within) returns a config that holds
    ``options``; yields the keys looked up in it, in order. A key of ``unavailable`` (an option of the job's config
    whose value the build cannot have, such as a dim or a function) raises where it is looked up."""
    looked_up: dict[str, None] = {}

    def answer(module: Any) -> None:
        def get_global_config(*_args: Any, **_kwargs: Any) -> Any:
            config = module.Config()
            config.typed_dict = _Noting(options, looked_up, unavailable)
            config.dict = _Noting({}, looked_up, unavailable)
            return config

        module.get_global_config = get_global_config

    finder = _Answering(answer)
    before: Any = sys.modules.get(CONFIG_MODULE)
    original = getattr(before, "get_global_config", None)
    if before is not None:
        answer(before)
    else:
        sys.meta_path.insert(0, finder)
    try:
        yield looked_up
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        if before is not None:
            before.get_global_config = original


def given(text: Optional[str]) -> tuple[dict[str, Any], frozenset[str]]:
    """The options a build is given and the names of those it cannot have, from
    :func:`i6_rc_jobs._serialization.job_config.options_text`."""
    if not text:
        return {}, frozenset()
    options, unavailable = ast.literal_eval(text)
    return options, frozenset(unavailable)

"""The researchers' code, read from the pinned i6_experiments checkout that ./setup.sh makes (``.deps/src/
i6_experiments`` at the commit of rwth-i6.lock, the folders rwth-i6.sparse names), so that the tests build what the
researcher wrote, not a copy of it.

:func:`load` imports a file of the checkout as a module of the package ``tests.real_models.i6_experiments``, which
exists only in ``sys.modules``: its modules are the checkout's files, so the researcher's relative imports work as in
their setup, while a real ``i6_experiments`` elsewhere in the process is left alone. The :class:`Adaptation` s given
for a file are applied to its source text before it is compiled (with the checkout's path, so tracebacks point there).
Each names the text it replaces and how often that occurs: a file that changed under it fails to load, naming the
adaptation, instead of building another net.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import pathlib
import sys
import types
from dataclasses import dataclass
from typing import Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[2] / ".deps" / "src" / "i6_experiments"
PACKAGE = f"{__package__}.i6_experiments"


@dataclass(frozen=True)
class Adaptation:
    """``old`` in a file's source, found exactly ``count`` times, becomes ``new``; ``what`` says what it does."""

    what: str
    old: str
    new: str
    count: int = 1

    def apply(self, text: str, path: str) -> str:
        found = text.count(self.old)
        if found != self.count:
            raise ValueError(f"{path}: {self.what}: {self.old!r} found {found} times, not {self.count}")
        return text.replace(self.old, self.new)


def replace_dim(count: int) -> Adaptation:
    """``nn.replace_dim`` for the ``count`` calls of ``nn.reinterpret_new_dim`` in a file: returnn_common renamed it
    in 7988bff (2023-02-14, "rename replace_dim, set_sparse_dim")."""
    return Adaptation(
        "nn.replace_dim (nn.reinterpret_new_dim before returnn_common 7988bff)",
        "nn.reinterpret_new_dim(",
        "nn.replace_dim(",
        count,
    )


_ADAPTATIONS: dict[str, tuple[Adaptation, ...]] = {}


def load(path: str, *adaptations: Adaptation) -> types.ModuleType:
    """The module of the checkout's file ``path`` (relative to its root), with ``adaptations`` applied; a file loads
    once per process, so another call must give the same adaptations."""
    if not (ROOT / path).is_file():
        raise FileNotFoundError(f"{ROOT / path} is missing: run ./setup.sh (rwth-i6.sparse names what it checks out)")
    if _ADAPTATIONS.setdefault(path, adaptations) != adaptations:
        raise ValueError(f"{path} is loaded with other adaptations already")
    return importlib.import_module(f"{PACKAGE}.{path.removesuffix('.py').replace('/', '.')}")


class _Loader(importlib.abc.Loader):
    """Executes a file of the checkout (None: a folder without ``__init__.py``) with its adaptations."""

    def __init__(self, file: Optional[pathlib.Path]):
        self.file = file

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if self.file is None:
            return
        path = self.file.relative_to(ROOT).as_posix()
        text = self.file.read_text()
        for adaptation in _ADAPTATIONS.setdefault(path, ()):  # loaded by an import: as it is, from now on
            text = adaptation.apply(text, path)
        # dont_inherit: the researcher's file has its own __future__ imports, not this module's
        exec(compile(text, str(self.file), "exec", dont_inherit=True), module.__dict__)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the modules of :data:`PACKAGE` in the checkout."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != PACKAGE and not fullname.startswith(f"{PACKAGE}."):
            return None
        base = ROOT.joinpath(*fullname[len(PACKAGE) + 1 :].split(".")) if fullname != PACKAGE else ROOT
        if base.is_dir():
            init = base / "__init__.py"
            file = init if init.is_file() else None
            spec = importlib.machinery.ModuleSpec(fullname, _Loader(file), origin=file and str(file), is_package=True)
            spec.submodule_search_locations = [str(base)]
            spec.has_location = file is not None
            return spec
        module_file = base.with_suffix(".py")
        if not module_file.is_file():
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _Loader(module_file), origin=str(module_file))
        spec.has_location = True
        return spec


if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Finder())

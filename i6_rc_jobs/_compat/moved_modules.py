"""The module paths of 0.6 that moved in 0.7, still importable: Sisyphus pickles every job with the values it holds
(serializers, dim references, ``by_content`` markers, checked configs) and the builds cache keeps pickled results,
both naming the module of each class; and setups import the public names from the modules that 0.6 documented
(``from i6_rc_jobs.imports import import_``). A finder on ``sys.meta_path`` answers exactly these names, each with a
module of its own that hands out the attributes of the module it moved to; it answers no other name."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Optional, Sequence

#: Each old module path and the module that now defines what it held. The public modules of 0.6 hand out the
#: package's public names (``i6_rc_jobs``), the others what pickles name.
MOVED = {
    "i6_rc_jobs.serializer": "i6_rc_jobs.serializers",
    "i6_rc_jobs.config_serializer": "i6_rc_jobs.serializers",
    "i6_rc_jobs.serialization.refs": "i6_rc_jobs._serialization.refs",
    "i6_rc_jobs.serialization.callables": "i6_rc_jobs._serialization.callables",
    "i6_rc_jobs.serialization.config_file": "i6_rc_jobs.jobs.config_file",
    "i6_rc_jobs.code_hash.marker": "i6_rc_jobs._code_hash.marker",
    "i6_rc_jobs.code_hash.fingerprint": "i6_rc_jobs._code_hash.fingerprint",
    "i6_rc_jobs.code_hash": "i6_rc_jobs",
    "i6_rc_jobs.imports": "i6_rc_jobs",
    "i6_rc_jobs.builds": "i6_rc_jobs",
    "i6_rc_jobs.rc_compat": "i6_rc_jobs._compat.rc_compat",
    "i6_rc_jobs.returnn_check": "i6_rc_jobs._verify.returnn_check",
}
#: The old packages among them, or that hold them (their modules are answered only where listed above).
_PACKAGES = {name.rpartition(".")[0] for name in MOVED} - {"i6_rc_jobs"}


class _MovedLoader(importlib.abc.Loader):
    """An old module is a module of its own that hands out the attributes of the one it moved to (the same objects:
    a class unpickled through it is the class)."""

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ in _PACKAGES:
            module.__path__ = []
        if module.__name__ in MOVED:
            target = importlib.import_module(MOVED[module.__name__])
            vars(module).update(__doc__=target.__doc__, __getattr__=lambda name: getattr(target, name))  # (PEP 562)


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in MOVED and fullname not in _PACKAGES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _LOADER, is_package=fullname in _PACKAGES)


_LOADER = _MovedLoader()


def install() -> None:
    """Puts the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())

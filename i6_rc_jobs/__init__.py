"""Sisyphus jobs and helpers for i6_core recipes that build RETURNN models: returnn_common net dicts, RETURNN-frontend
and PyTorch configs.

This module is the public API, and the only one: every name a recipe may use is in ``__all__`` and importable from
here (``from i6_rc_jobs import ReturnnCommonSerializer, CreateConfigJob``); the packages whose names start with ``_``
are the implementation and change without notice. ``i6_rc_jobs.jobs`` and ``i6_rc_jobs.versioned`` are public by
their module paths, which Sisyphus writes into job directories and pickles. The names load lazily, so that
``import i6_rc_jobs`` (e.g. for the command line) stays cheap, and importing changes nothing outside the package
(the failure hints are opt-in: :func:`install_failure_hints`)."""

from __future__ import annotations

import importlib
from typing import Any

from i6_rc_jobs._compat import moved_modules

#: The release, as CHANGELOG.md names it (setup.py reads it from here).
__version__ = "0.6.0"

#: Each public name and the module that defines it (``None``: the name is that module itself).
_EXPORTS: dict[str, tuple[str, str | None]] = {
    # What a config holds.
    "ReturnnCommonSerializer": ("i6_rc_jobs.serializers", "ReturnnCommonSerializer"),
    "ReturnnConfigSerializer": ("i6_rc_jobs.serializers", "ReturnnConfigSerializer"),
    "DimRef": ("i6_rc_jobs._serialization.refs", "DimRef"),
    "SerializationError": ("i6_rc_jobs._serialization.errors", "SerializationError"),
    # Configs and jobs.
    "CheckedReturnnConfig": ("i6_rc_jobs.jobs.config_file", "CheckedReturnnConfig"),
    "CreateConfigJob": ("i6_rc_jobs.jobs.create_config", "CreateConfigJob"),
    "write_config_file": ("i6_rc_jobs.jobs.config_file", "write_config_file"),
    "config_code": ("i6_rc_jobs.jobs.config_file", "config_code"),
    # returnn_common compatibility.
    "rc_compat": ("i6_rc_jobs._compat.rc_compat", None),
    "install_failure_hints": ("i6_rc_jobs._compat.failure_hints", "install_failure_hints"),
    # Builds out of the manager.
    "build": ("i6_rc_jobs._builds", "build"),
    "build_many": ("i6_rc_jobs._builds", "build_many"),
    "Builds": ("i6_rc_jobs._builds.client", "Builds"),
    "BuildError": ("i6_rc_jobs._builds.client", "BuildError"),
    "depend_on": ("i6_rc_jobs._builds.record", "depend_on"),
    "stop_servers": ("i6_rc_jobs._builds.client", "stop_servers"),
    # Content hashes of model code.
    "by_content": ("i6_rc_jobs._code_hash.marker", "by_content"),
    "ByContent": ("i6_rc_jobs._code_hash.marker", "ByContent"),
    "watch_code": ("i6_rc_jobs._code_hash.watch", "watch_code"),
    "CodeFingerprint": ("i6_rc_jobs._code_hash.fingerprint", "CodeFingerprint"),
    "DEFAULT_LIBRARIES": ("i6_rc_jobs._code_hash.fingerprint", "DEFAULT_LIBRARIES"),
    # Versioned imports.
    "import_": ("i6_rc_jobs._imports.loader", "import_"),
    "VersionedImportError": ("i6_rc_jobs._imports.errors", "VersionedImportError"),
    # Checks with RETURNN and explaining hashes.
    "construct_networks": ("i6_rc_jobs._verify.returnn_check", "construct_networks"),
    "NetworkCheckError": ("i6_rc_jobs._verify.returnn_check", "NetworkCheckError"),
    "same_model": ("i6_rc_jobs._verify.semantics", "same_model"),
    "explain": ("i6_rc_jobs._cli.explain", "explain"),
}
__all__ = sorted(_EXPORTS)

moved_modules.install()


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'i6_rc_jobs' has no attribute {name!r}")
    module_name, attribute = _EXPORTS[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

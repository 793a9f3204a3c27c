"""Sisyphus jobs and helpers for i6_core recipes that build RETURNN models with returnn_common.

The public names load lazily, so that ``import i6_rc_jobs`` (e.g. for the command line) stays cheap. The import
changes nothing returnn_common builds; it adds the line naming the fix to the report of a failure that escapes the
config (:mod:`i6_rc_jobs.failure_hints`)."""

from __future__ import annotations

import importlib
from typing import Any

from . import failure_hints

#: The release, as CHANGELOG.md names it (setup.py reads it from here).
__version__ = "0.6.0"

_EXPORTS = {
    "ReturnnCommonSerializer": "i6_rc_jobs.serializer",
    "ReturnnConfigSerializer": "i6_rc_jobs.config_serializer",
    "SerializationError": "i6_rc_jobs.serialization.errors",
    "DimRef": "i6_rc_jobs.serialization.refs",
    "CreateConfigJob": "i6_rc_jobs.jobs.create_config",
    "CheckedReturnnConfig": "i6_rc_jobs.serialization.config_file",
    "build": "i6_rc_jobs.builds",
    "build_many": "i6_rc_jobs.builds",
    "by_content": "i6_rc_jobs.code_hash",
    "watch_code": "i6_rc_jobs.code_hash",
}
__all__ = sorted(_EXPORTS)

failure_hints.install()


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'i6_rc_jobs' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

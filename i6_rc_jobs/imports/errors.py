"""The one error type of versioned imports."""

from __future__ import annotations


class VersionedImportError(ImportError):
    """A repository, version or path that is malformed, unknown or inconsistent, or a git failure; the message names
    the repository and version."""

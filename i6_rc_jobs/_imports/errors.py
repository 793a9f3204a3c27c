"""The error types of versioned imports."""

from __future__ import annotations


class VersionedImportError(ImportError):
    """A repository, version or path that is malformed, unknown or inconsistent, or a git failure; the message names
    the repository and version."""


class CacheNotWritableError(VersionedImportError):
    """A version that is not in the import cache, which this user may not write to: it must be fetched by another."""

"""Modules of versions and development copies run from their source, never from a ``.pyc`` in the cache or the copy
(which anyone who may write there could plant, with the source's mtime and size, to run instead): each source file
is compiled, and its bytecode kept in a directory of this user's alone, under the digest of the source."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
from types import CodeType
from typing import Optional

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._imports import proof
from i6_rc_jobs._imports.errors import VersionedImportError
from i6_rc_jobs._imports.user_cache import user_directory

#: Where this user's bytecode is: ``$XDG_CACHE_HOME/i6_rc_jobs/bytecode`` (default ``~/.cache/...``).
_DIRECTORY = "bytecode"


class SourceLoader(importlib.machinery.SourceFileLoader):
    """Loads a source file of a version (whose blob id in its verified listing is ``expected``, checked again as it
    is read) or of a development copy (``expected`` None)."""

    def __init__(self, fullname: str, path: str, expected: Optional[str] = None):
        super().__init__(fullname, path)
        self.expected = expected

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        source = self.get_data(path)
        if self.expected is not None and proof.object_id("blob", source) != self.expected:
            raise VersionedImportError(f"{fullname}: {path} changed after it was checked: remove its version's tree")
        return compiled(source, path)


def compiled(source: bytes, path: str) -> CodeType:
    """The code of ``source`` (the file ``path``), from this user's bytecode if it has it."""
    directory = user_directory(_DIRECTORY)
    key = hashlib.sha256(importlib.util.MAGIC_NUMBER + os.fsencode(path) + b"\0" + source).hexdigest()
    if directory is not None:
        try:
            code = marshal.loads((directory / key).read_bytes())
            if isinstance(code, CodeType):
                return code
        except (OSError, ValueError, EOFError, TypeError):
            pass
    code = compile(source, path, "exec", dont_inherit=True)
    if directory is not None:
        write_atomically(directory / key, marshal.dumps(code), 0o600)
    return code

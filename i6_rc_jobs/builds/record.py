"""What a build process depends on, recorded by the process itself: the files of the modules it loaded, the files it
opened for reading (audit hook on "open", which also sees ``io.open_code`` and C code that opens through Python),
the environment variables it read by name with digests of their values (``os.environ`` is replaced by a recording copy),
its Python, ``sys.path``
and working directory. Installed once, first thing in the build server, so that what the libraries read while the
server imports them counts as well.

Not seen: files read by C code directly (``fopen`` in an extension), environment variables read by C code
(``getenv``), directories listed, the clock, randomness, the network. A builder must not depend on those."""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any, Optional

#: Files whose content is no dependency (the kernel's views change at every read).
VOLATILE = ("/proc/", "/sys/", "/dev/")

_opened: dict[str, None] = {}
_written: set[str] = set()
_env_read: dict[str, Optional[str]] = {}


#: Events that change a file (args[index] is its path): the process's own output, no input.
_CHANGING = {"os.utime": 0, "os.chmod": 0, "os.truncate": 0, "os.rename": 1, "os.replace": 1}


def _on_audit(event: str, args: tuple) -> None:
    if event in _CHANGING:
        path = args[_CHANGING[event]]
        if isinstance(path, (str, bytes)):
            _written.add(os.path.abspath(os.fsdecode(path)))
        return
    if event != "open":
        return
    path, _, flags = args
    if not isinstance(path, (str, bytes)):  # a file descriptor
        return
    access = flags & os.O_ACCMODE  # set for every open: io.open's, io.open_code's and os.open's
    path = os.path.abspath(os.fsdecode(path))
    if access != os.O_WRONLY:
        _opened.setdefault(path)
    if access != os.O_RDONLY:
        _written.add(path)


class _RecordingEnviron(type(os.environ)):  # type: ignore[misc]
    """``os.environ`` that notes the variables read by name (``os.getenv``, ``os.environ.get``, ``in``). Listing it
    (iterating, ``items()``, ``copy()``: e.g. to start a subprocess, or Sisyphus reading its ``SIS_*`` settings) is
    no read of every variable."""

    def __getitem__(self, key: str) -> str:
        try:
            value = super().__getitem__(key)
        except KeyError:
            _env_read.setdefault(key, None)
            raise
        _env_read.setdefault(key, value)
        return value

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def _unrecorded(self) -> dict[str, str]:
        return {self.decodekey(key): self.decodevalue(value) for key, value in self._data.items()}

    def copy(self) -> dict[str, str]:
        return self._unrecorded()

    def items(self) -> Any:
        return self._unrecorded().items()

    def values(self) -> Any:
        return self._unrecorded().values()


def install() -> None:
    """Starts recording in this process (and in the processes forked from it)."""
    sys.addaudithook(_on_audit)
    os.environ.__class__ = _RecordingEnviron


def module_files() -> list[str]:
    """The file of every loaded module: its source, its extension, or its bytecode if it has no source. (Bytecode
    beside a source is not listed: Python takes it only while it matches the source's mtime and size, and a build
    process imports the recipe code from source, see :mod:`.server`.)"""
    files: dict[str, None] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.isfile(path):
            files.setdefault(os.path.abspath(path))
    return list(files)


def opened_files(exclude: Optional[str] = None) -> list[str]:
    """The regular files opened for reading so far, except: the bytecode of loaded modules (see
    :func:`module_files`), the volatile files, those under ``exclude``, and those the process also wrote or touched
    (its own outputs and caches, e.g. RETURNN's compiled native code, are no inputs)."""
    skip = VOLATILE if exclude is None else (*VOLATILE, exclude.rstrip("/") + "/")
    bytecode = {getattr(module, "__cached__", None) for module in list(sys.modules.values())}
    return [
        path
        for path in _opened
        if path not in _written and path not in bytecode and not path.startswith(skip) and os.path.isfile(path)
    ]


def set_environment(environ: dict[str, str]) -> None:
    """Makes ``os.environ`` hold ``environ`` (the manager's, as of the build's start) without noting reads."""
    before = dict(_env_read)
    os.environ.clear()
    os.environ.update(environ)
    _env_read.clear()
    _env_read.update(before)


def value_digest(value: Optional[str]) -> Optional[str]:
    """What is recorded of a variable's value: its SHA-256 (None: it was not set). A value may be a secret (a token),
    and the cache keeps no value."""
    return None if value is None else hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def environment() -> dict[str, Optional[str]]:
    """The variables read so far by name and the digests of the values read (see :func:`value_digest`)."""
    return {name: value_digest(value) for name, value in _env_read.items()}

"""What a build process depends on, recorded by the process itself: the files of the modules it loaded, the files it
opened for reading (audit hook on "open", which also sees ``io.open_code`` and C code that opens through Python) or
looked at (``os.stat``, ``os.lstat``, and so ``os.path.exists``, ``pathlib``), what it found where it found no regular
file (missing, a directory), the names in the directories it listed (audit hooks on "os.listdir" and "os.scandir",
which ``glob`` and ``os.walk`` use), where every module name it looked for resolved on which path, or that it did not
(``PathFinder.find_spec``, which every import from ``sys.path`` or a package's ``__path__`` goes through), the
environment variables it read by name with digests of their values (``os.environ`` and ``os.environb`` record their
reads), its Python, ``sys.path`` and working directory. Installed once, first thing in the build server, so that what
the libraries read while the server imports them counts as well.

Not seen: files read by C code directly (``fopen`` in an extension), environment variables read by C code
(``getenv``), the clock, randomness, the network: a builder declares such dependencies with :func:`depend_on`."""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Iterable, Optional

from i6_rc_jobs._util.loaded_modules import module_files_since, module_value
from i6_rc_jobs._builds import probes
from i6_rc_jobs._builds.fingerprint import digest

#: Every kind of dependency a build records, by its name in the build's entry: each is taken again and compared
#: before the entry is served (:mod:`.lookup`), and the builds guide names each (tests/test_docs.py checks).
ENTRY_KINDS = ("files", "probes", "listings", "modules", "env")
#: What a build server's base records beyond those kinds (the same for every build from that server).
BASE_KINDS = ("python", "sys_path", "cwd", *ENTRY_KINDS)

#: Files whose content is no dependency (the kernel's views change at every read).
VOLATILE = ("/proc/", "/sys/", "/dev/")

_opened: dict[str, None] = {}
_written: set[str] = set()
_env_read: dict[str, Optional[str]] = {}
_env_readers: dict[str, dict[tuple[str, int], None]] = {}  # name -> where code outside the stdlib read it
_looked_at: dict[str, None] = {}  # stat'd paths
_listed: dict[str, None] = {}
_read_write: dict[str, Optional[str]] = {}  # opened for reading and writing: the content's digest before
_modules: dict[tuple[str, tuple[str, ...]], Optional[list]] = {}  # (name, path searched) -> where it resolved


#: Where the import system lists the directories on sys.path: what it found there is recorded by module name (see
#: :func:`_recording_find_spec`), and the distributions' metadata (``importlib.metadata``) by the files it reads.
#: Recorded as listings, every file added to a directory on sys.path would invalidate every entry.
_IMPORT_SYSTEM = re.compile(r"^<frozen importlib|[/\\]importlib[/\\]metadata[/\\]|[/\\]importlib_metadata[/\\]")

#: Events that change a file (args[index] is its path): the process's own output, no input.
_CHANGING = {"os.utime": 0, "os.chmod": 0, "os.truncate": 0, "os.rename": 1, "os.replace": 1}


def _on_audit(event: str, args: tuple) -> None:
    if event in _CHANGING:
        path = args[_CHANGING[event]]
        if isinstance(path, (str, bytes)):
            _written.add(os.path.abspath(os.fsdecode(path)))
        return
    if event in ("os.listdir", "os.scandir"):
        path = args[0]
        if not _IMPORT_SYSTEM.search(sys._getframe(1).f_code.co_filename) and (
            path is None or isinstance(path, (str, bytes, os.PathLike))
        ):
            _listed.setdefault(os.path.abspath(os.fsdecode(path if path is not None else ".")))
        return
    if event != "open":
        return
    path, _, flags = args
    if not isinstance(path, (str, bytes)):  # a file descriptor
        return
    access = flags & os.O_ACCMODE  # set for every open: io.open's, io.open_code's and os.open's
    path = os.path.abspath(os.fsdecode(path))
    made = access == os.O_WRONLY or flags & (os.O_CREAT | os.O_TRUNC)  # "w", "a", "w+", "x", a temporary file
    if made:
        _written.add(path)
    elif access == os.O_RDWR and path not in _read_write and path not in _written:
        _read_write[path] = digest(path)  # an input if it is the same after the build (numpy's memmap "r+")
    if not made:
        _opened.setdefault(path)


def _recording_stat(stat: Any) -> Any:
    def recorded(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if isinstance(path, (str, bytes, os.PathLike)) and kwargs.get("dir_fd") is None:
            _looked_at.setdefault(os.path.abspath(os.fsdecode(path)))
        return stat(path, *args, **kwargs)

    return recorded


def _recording_find_spec(find_spec: Any) -> Any:
    def recorded(cls: type, fullname: str, path: Any = None, target: Any = None) -> Any:
        spec = find_spec(fullname, path, target)
        searched = tuple(os.fsdecode(entry) for entry in (sys.path if path is None else path))
        _modules.setdefault((fullname, searched), probes.outcome(spec))
        return spec

    return classmethod(recorded)


#: The standard library's files that read the environment for their callers (``os.getenv``, ``Mapping.get``).
_ENV_ACCESS = {os.getenv.__code__.co_filename, Mapping.get.__code__.co_filename, __file__}  # ("<frozen os>")


def _reader() -> tuple[str, int]:
    """Where the code that read a variable is: the first frame outside ``os`` and ``collections.abc``."""
    frame = sys._getframe(2)
    while frame.f_back is not None and frame.f_code.co_filename in _ENV_ACCESS:
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


class _RecordingEnviron(type(os.environ)):  # type: ignore[misc]
    """``os.environ`` that notes the variables read by name (``os.getenv``, ``os.environ.get``, ``in``), and where
    the code that read each is. Listing it (iterating, ``items()``, ``copy()``: e.g. to start a subprocess, or
    Sisyphus reading its ``SIS_*`` settings) is no read of every variable."""

    def __getitem__(self, key: str) -> str:
        name = os.fsdecode(key)
        _env_readers.setdefault(name, {}).setdefault(_reader())
        try:
            value = super().__getitem__(key)
        except KeyError:
            _env_read.setdefault(name, None)
            raise
        _env_read.setdefault(name, os.fsdecode(value))  # os.environb's are bytes
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
    os.environb.__class__ = _RecordingEnviron
    os.stat = _recording_stat(os.stat)
    os.lstat = _recording_stat(os.lstat)
    finder = importlib.machinery.PathFinder
    finder.find_spec = _recording_find_spec(finder.find_spec)  # type: ignore[method-assign]


def forget() -> None:
    """Forgets the paths, listings and module names recorded so far, once the build server has stored them in its
    base: a build process then goes through only what it adds (thousands of paths fewer per build), and what the
    server itself does after its base (keeping fingerprints, writing the base) is no dependency of builds. What the
    process wrote stays its output."""
    for recorded in (_opened, _looked_at, _listed, _modules):
        recorded.clear()


def module_files(since: Optional[dict[str, Any]] = None) -> list[str]:
    """The file of every loaded module (except those that are in ``since``, a copy of ``sys.modules`` taken with
    the files of its modules): its source, its extension, or its bytecode if it has no source. (Bytecode beside a
    source is not listed: Python takes it only while it matches the source's mtime and size, and a build process
    imports the recipe code from source, see :mod:`.server`.)"""
    files: dict[str, None] = {}
    for _, path in module_files_since(since):
        if probes.kind(path) == "file":
            files.setdefault(os.path.abspath(path))
    return list(files)


def _skipped(path: str, exclude: Optional[str]) -> bool:
    """Whether ``path`` is volatile, or ``exclude`` or under it."""
    if path.startswith(VOLATILE):
        return True
    return exclude is not None and (path + "/").startswith(exclude.rstrip("/") + "/")


def looked_at(
    exclude: Optional[str] = None, since: Optional[dict[str, Any]] = None
) -> tuple[list[str], dict[str, Optional[str]]]:
    """The regular files opened for reading or stat'd so far, and what was found at the other paths opened or stat'd
    (:func:`.probes.kind`: missing, a directory), except: the bytecode of loaded modules (see :func:`module_files`),
    the volatile files, those under ``exclude``, and those the process also wrote or touched (its own outputs and
    caches, e.g. RETURNN's compiled native code, are no inputs). A file opened for reading and writing is an input
    if its content is the same as before it was opened, else an output. With ``since`` (as for
    :func:`module_files`), only the bytecode of modules loaded since is left out: the rest is a dependency too."""
    for path, before in _read_write.items():
        (_opened.setdefault(path) if path not in _written and digest(path) == before else _written.add(path))
    _read_write.clear()
    bytecode = {
        module_value(module, "__cached__")
        for name, module in list(sys.modules.items())
        if since is None or since.get(name) is not module
    }
    files, found = [], {}
    for path in [*_opened, *_looked_at]:
        if path in _written or path in bytecode or _skipped(path, exclude):
            continue
        what = probes.kind(path)
        if what == "file":
            files.append(path)
        else:
            found[path] = what
    return list(dict.fromkeys(files)), found


def opened() -> list[str]:
    """The paths opened for reading so far (outputs and caches among them: :func:`looked_at` tells the inputs)."""
    return list(_opened)


def listings(exclude: Optional[str] = None) -> dict[str, Optional[str]]:
    """The directories listed so far (except those under ``exclude`` and the volatile ones), with
    :func:`.probes.listing` of each."""
    return {path: probes.listing(path) for path in _listed if not _skipped(path, exclude)}


def module_probes() -> list[list]:
    """Every module name looked for on a path so far, with the path and where it resolved (None: nowhere)."""
    return [[name, list(path), found] for (name, path), found in sorted(_modules.items(), key=lambda item: item[0])]


def depend_on(*paths: str, env: Iterable[str] = ()) -> None:
    """Declares what the build depends on beyond what it reads through Python (C code that reads files itself, such
    as ``sqlite3`` or ``tf.io.gfile``, or reads the environment with ``getenv``): each path (a file: its content; a
    directory: its names, and those of its subdirectories, and the content of every file in them; or that it is
    missing) and each environment variable's value."""
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                for name in names:
                    digest(os.path.join(root, name))
        else:
            digest(path)
    for name in env:
        os.environ.get(name)


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


def environment_readers() -> dict[str, list[tuple[str, int]]]:
    """Each variable read so far by name, with the files and lines of the code that read it (outside the standard
    library's accessors): which of the reads are a model's own."""
    return {name: list(readers) for name, readers in _env_readers.items()}

"""Job outputs across a build's pickles. Sisyphus pickles a ``tk.Path`` without its creator (unless
``INCLUDE_CREATOR_STATE`` is set), and a path's hash holds its creator: a job's output passed into a build and held
by its result would come back hashing otherwise than in the manager. So the build process pickles each path of its
arguments by reference (its path string, and the path itself as a fallback), and the manager puts the arguments'
own paths, creators included, in their places."""

from __future__ import annotations

import io
import pickle
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sisyphus.job_path import AbstractPath

_TAG = "i6_rc_jobs argument path"


def argument_paths(arguments: Any) -> dict[str, AbstractPath]:
    """The paths among ``arguments``, by their path string. (Sisyphus is imported here, not with the module: the
    build server imports this module before its ``sys.path`` is set.)"""
    from sisyphus.job_path import AbstractPath
    from sisyphus.tools import extract_paths

    return {path.get_path(): path for path in extract_paths(arguments) if isinstance(path, AbstractPath)}


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, paths: dict[str, AbstractPath]):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._paths = {id(path): name for name, path in paths.items()}

    def persistent_id(self, obj: Any) -> Any:
        name = self._paths.get(id(obj))
        return None if name is None else (_TAG, name, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def dumps(result: Any, paths: dict[str, AbstractPath]) -> bytes:
    """``result`` pickled, with the argument ``paths`` (see :func:`argument_paths`) it holds by reference."""
    file = io.BytesIO()
    _Pickler(file, paths).dump(result)
    return file.getvalue()


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, paths: dict[str, AbstractPath]):
        super().__init__(file)
        self._paths = paths

    def persistent_load(self, pid: Any) -> Any:
        tag, name, data = pid
        if tag != _TAG:
            raise pickle.UnpicklingError(f"unknown persistent id {tag!r}")
        return self._paths.get(name) or pickle.loads(data)


def loads(data: bytes, paths: dict[str, AbstractPath]) -> Any:
    """The result pickled by :func:`dumps`, with the manager's ``paths`` (its arguments', creators included) in
    the places of the build process's."""
    return _Unpickler(io.BytesIO(data), paths).load()

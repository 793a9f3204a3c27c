"""The public API of builds: :class:`Builds`, how builds run, with ``build`` and ``build_many``. Its defaults build
returnn_common models: a build server that has imported TensorFlow, RETURNN and returnn_common, and builders that
return a ReturnnCommonSerializer; a caller that builds something else gives its own ``preload`` and ``results``."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from i6_rc_jobs._builds import in_build
from i6_rc_jobs._builds.batch import Batch
from i6_rc_jobs._builds.call import as_call
from i6_rc_jobs._builds.lookup import Setting
from i6_rc_jobs._builds.server_link import ServerSpec
from i6_rc_jobs._builds.store import Store, cache_root

#: What the build server imports before it forks builds (those found; with their dependencies): the libraries and
#: what returnn_common imports of them lazily while it builds a model, so that a build imports only recipe code. Not
#: RETURNN's training engine: a model build never uses it, and its updater loads Keras (1.3 s here, with the
#: scikit-learn that Keras' wrappers load where it is installed); a builder that uses it imports it itself.
DEFAULT_PRELOAD = (
    "tensorflow",
    "returnn.__main__",
    "returnn.tf.layers.rec",
    "returnn.tf.layers.signal_processing",
    "returnn.tf.layers.segmental_model",
    "returnn.tf.layers.variable",
    "returnn.datasets.hdf",
    "returnn.util.better_exchook",
    "returnn.util.debug",
    "returnn_common.nn",
    "i6_rc_jobs._compat.rc_compat",
    "i6_rc_jobs._serialization.capture",
    "i6_rc_jobs._serialization.convert",
    "i6_rc_jobs._code_hash",
)
#: What a builder returns by default, by name (the build server imports it; the package above builds names it).
DEFAULT_RESULTS = ("i6_rc_jobs.serializers:ReturnnCommonSerializer",)


@dataclass
class Builds:
    """How builds run: the Python (default: the manager's) and RETURNN (default: the one the manager imports) of the
    build processes, how many run at once (default: the machine's cores), and what the build server imports."""

    python: Optional[str] = None
    returnn_root: Optional[str] = None
    workers: Optional[int] = None
    preload: tuple[str, ...] = DEFAULT_PRELOAD
    cache: Optional[Path] = None
    #: The build processes' exact sys.path and working directory (default: the manager's; set to rebuild an entry
    #: as it was built).
    paths: Optional[list[str]] = None
    cwd: Optional[str] = None
    #: How long to wait for an entry's lock held by another manager (a stopped one holds it for ever) before building
    #: it without the lock.
    lock_timeout: float = 300.0
    #: The classes a builder may return, as ``module:qualname``; the first names what it is to return.
    results: tuple[str, ...] = DEFAULT_RESULTS

    def build(self, builder: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """The serializer ``builder(*args, **kwargs)`` returns: from the cache if nothing it depended on changed, else
        built in a process of its own."""
        return self.build_many([(builder, args, kwargs)])[0]

    def build_many(self, calls: Iterable[Any], failures: bool = False) -> list[Any]:
        """The serializers of many calls (each a ``functools.partial`` or a ``(builder, args, kwargs)`` tuple), in
        their order; those not cached are built in parallel. A failed build raises its :class:`BuildError` once the
        others ended, or with ``failures``, stands in the list in place of its result (the others are used)."""
        calls = [as_call(call) for call in calls]
        if in_build.IN_BUILD:
            return [call.builder(*call.args, **call.kwargs) for call in calls]
        for call in calls:
            call.check()
        return self._batch().run(calls, failures)

    # -- what a build process would be ---------------------------------------------------------------------------

    def executable(self) -> str:
        """The build Python as given (a virtual environment's python is not resolved to the one it links to)."""
        return os.path.abspath(os.fspath(self.python) if self.python else sys.executable)

    def sys_path(self) -> list[str]:
        """The build processes' sys.path: the manager's (absolute), after the given RETURNN."""
        if self.paths is not None:
            return self.paths
        own = str(Path(__file__).resolve().parents[2])  # where this i6_rc_jobs is, for another Python
        paths = [os.fspath(self.returnn_root)] if self.returnn_root else []
        paths += [path for path in sys.path] + [own]
        return list(dict.fromkeys(os.path.abspath(path) if path else self.workdir() for path in paths))

    def workdir(self) -> str:
        return self.cwd or os.getcwd()

    def rebuild_many(self, calls: list[Any]) -> list[Any]:
        """Builds the calls (objects with ``key``, ``digest``, ``name``, ``description``, the pickled call as
        ``data`` and ``paths``, see :mod:`.job_paths`) anew, neither looking them up nor storing them."""
        return self._batch(fresh=True).run(calls)

    def _batch(self, fresh: bool = False) -> Batch:
        setting = Setting(self.executable(), tuple(self.sys_path()), self.workdir())
        spec = ServerSpec(setting, tuple(self.preload), tuple(self.results))
        workers = self.workers or os.cpu_count() or 1
        return Batch(spec, workers, self.lock_timeout, Store(Path(self.cache or cache_root())), fresh)

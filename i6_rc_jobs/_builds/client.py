"""The manager's side of builds: the cache key of a call, the lookup that verifies an entry, and the build server it
starts (once per process, on the first call that is not cached) to build the others.

A call is cached under the Sisyphus hash of the builder's name and its arguments, and told apart from other calls
of that hash by the digest of its exact pickle (builder and arguments), to which an entry's signature is bound; an
entry of it is used only if every dependency its build recorded (:mod:`.record`) still holds: the same Python,
``sys.path`` and working directory, the same values of the environment variables it read (compared by digest), the
same content of every file it loaded or read (:mod:`.fingerprint`), and the same findings where it looked: paths
missing or directories, names in the directories it listed, the file each module name resolved to (:mod:`.probes`).
A build server is replaced once its base no longer holds."""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import logging
import os
import pickle
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from i6_rc_jobs._imports.cache import holder, locked
from i6_rc_jobs._builds import job_paths
from i6_rc_jobs._builds.fingerprint import Verifier
from i6_rc_jobs._builds.recheck import Recheck
from i6_rc_jobs._builds.record import ENTRY_KINDS, value_digest
from i6_rc_jobs._builds.store import PRIVATE, Store, cache_root, sha256_hex, touch_used, write_private

#: Set in a build process: a build there runs the builder in that process (it is part of the outer build).
IN_BUILD = False
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
#: How long a manager waits between looks at a lock another manager holds.
_POLL_S = 0.05
#: After this long waiting for another manager's lock, the wait is reported (once per entry), naming the holder.
_SAY_AFTER_S = 2.0
_LOG_LINES = 60
_DESCRIPTION_CHARS = 200


class BuildError(Exception):
    """A build failed: the message has the builder's traceback and the end of its output."""


@dataclass(frozen=True)
class Call:
    """One call of a builder, and where it is cached."""

    builder: Callable[..., Any]
    args: tuple
    kwargs: dict[str, Any]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        from sisyphus.hash import sis_hash_helper

        object.__setattr__(
            self, "key", hashlib.sha256(sis_hash_helper((self.name, self.args, self.kwargs))).hexdigest()
        )

    @property
    def name(self) -> str:
        return f"{self.builder.__module__}.{self.builder.__qualname__}"

    @property
    def description(self) -> str:
        """The arguments, as a call shows them (cut at ``_DESCRIPTION_CHARS``)."""
        parts = [repr(arg) for arg in self.args] + [f"{name}={value!r}" for name, value in sorted(self.kwargs.items())]
        text = ", ".join(parts)
        return text if len(text) <= _DESCRIPTION_CHARS else text[: _DESCRIPTION_CHARS - 3] + "..."

    @functools.cached_property
    def data(self) -> bytes:
        """The pickled call, as the build process loads it."""
        try:
            return pickle.dumps((self.builder, self.args, self.kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise BuildError(f"the arguments of {self.name}({self.description}) cannot be pickled: {e}") from None

    @functools.cached_property
    def digest(self) -> str:
        """The SHA-256 of the pickled call: what tells apart calls that the Sisyphus hash does not."""
        return sha256_hex(self.data)

    @functools.cached_property
    def paths(self) -> dict[str, Any]:
        """The job outputs among the arguments, put back in the result (see :mod:`.job_paths`)."""
        return job_paths.argument_paths((self.args, self.kwargs))

    def check(self) -> None:
        """The builder must be found by its name in a process that imports its module (the build process does)."""
        module, qualname = self.builder.__module__, self.builder.__qualname__
        found = sys.modules.get(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        where = "the manager's config" if module == "config" or module.startswith("config.") else None
        if found is not self.builder or "<locals>" in qualname or module == "__main__" or where:
            raise BuildError(
                f"builder {module}.{qualname}: a builder must be a module-level function of a module a build process "
                f"can import (the setup's recipe/ or a versioned module), not of {where or 'a function or __main__'}; "
                "move it there"
            )


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

    def build(self, builder: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """The serializer ``builder(*args, **kwargs)`` returns: from the cache if nothing it depended on changed, else
        built in a process of its own."""
        return self.build_many([(builder, args, kwargs)])[0]

    def build_many(self, calls: Iterable[Any]) -> list[Any]:
        """The serializers of many calls (each a ``functools.partial`` or a ``(builder, args, kwargs)`` tuple), in
        their order; those not cached are built in parallel."""
        calls = [_as_call(call) for call in calls]
        if IN_BUILD:
            return [call.builder(*call.args, **call.kwargs) for call in calls]
        for call in calls:
            call.check()
        return _Batch(self, Store(Path(self.cache or cache_root()))).run(calls)

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
        return _Batch(self, Store(Path(self.cache or cache_root())), fresh=True).run(calls)


def _as_call(call: Any) -> Call:
    if isinstance(call, functools.partial):
        return Call(call.func, tuple(call.args), dict(call.keywords))
    builder, args, kwargs = call
    return Call(builder, tuple(args), dict(kwargs))


class _Batch:
    """One ``build_many``: its lookups share one verifier and one recheck (each file, path and module name is checked
    once)."""

    def __init__(self, builds: Builds, store: Store, fresh: bool = False):
        self.builds = builds
        self.store = store
        self.fresh = fresh
        self.verifier = Verifier()
        self.recheck = Recheck()
        self.bases: dict[str, Optional[bool]] = {}
        self.stale: dict[str, list[Path]] = {}
        self.waiting: dict[str, float] = {}  # call digest -> when the wait for its lock began
        self.said: set[str] = set()  # the calls whose wait was reported

    def run(self, calls: list[Call]) -> list[Any]:
        results: dict[str, Any] = {}  # by the digest of the call
        for call in [] if self.fresh else calls:
            if call.digest not in results:
                found = self.lookup(call)
                if found is not None:
                    results[call.digest] = found
        missing = {call.digest: call for call in calls if call.digest not in results}
        if missing:
            results.update(self.build_missing(list(missing.values())))
        return [results[call.digest] for call in calls]

    # -- lookup ------------------------------------------------------------------------------------------------

    def lookup(self, call: Call) -> Optional[Any]:
        """The result of a verified entry of the call, None if there is none. A variant found stale stays so for the
        batch: the second lookup (under the lock) skips it, so that its reason is logged once."""
        stale = self.stale.setdefault(call.digest, [])
        if self.fresh:
            return None
        for variant in self.store.variants(call.key):
            if variant in stale:
                continue
            entry = self.store.entry(variant, call.digest)
            if entry is None:
                continue  # another call of the same Sisyphus hash, not made with this cache's key, or corrupt
            holds = self.base_holds(entry["base"])
            if holds is None:
                continue  # another setup's (another working directory): kept for it
            if not (holds and self.deps_hold(entry)):
                stale.append(variant)
                continue
            data = self.store.result_bytes(variant, entry)
            if data is None:
                continue
            touch_used(variant)
            return job_paths.loads(data, call.paths)
        return None

    def base_holds(self, digest: str) -> Optional[bool]:
        """Whether the base holds; None if it is another setup's (its working directory is another: its entries are
        that setup's, neither used nor replaced here)."""
        if digest not in self.bases:
            if digest not in _bases:  # a base is immutable (named by its digest): read once per process
                _bases[digest] = self.store.base(digest)
            base = _bases[digest]
            if base is not None and base["cwd"] != self.builds.workdir():
                self.bases[digest] = None
                return None
            reason = "its base is missing or not signed" if base is None else self._base_changed(base)
            if reason:
                logging.info("build cache: the entries of base %s do not hold: %s", digest[:12], reason)
            self.bases[digest] = reason is None
        return self.bases[digest]

    def _base_changed(self, base: dict[str, Any]) -> Optional[str]:
        """What of the base no longer holds, None if all of it does."""
        if base["python"]["executable"] != self.builds.executable():
            return f"another Python: {self.builds.executable()}, not {base['python']['executable']}"
        if base["sys_path"] != self.builds.sys_path():
            return "another sys.path"
        return _env_changed(base["env"]) or self._file_changed(base) or self.recheck.changed(base)

    def deps_hold(self, entry: dict[str, Any]) -> bool:
        reason = _env_changed(entry["env"]) or self._file_changed(entry) or self.recheck.changed(entry)
        if reason:
            logging.info("build cache: %s(%s) is built again: %s", entry["builder"], entry["arguments"], reason)
        return reason is None

    def _file_changed(self, record: dict[str, Any]) -> Optional[str]:
        for path, fp in record["files"].items():
            if not self.verifier.unchanged(path, fp, record["recorded_ns"]):
                return f"{path} changed"
        return None

    # -- building ----------------------------------------------------------------------------------------------

    def build_missing(self, calls: list[Call]) -> dict[str, Any]:
        """Builds the calls, each under its lock (another manager may be building it: then its result is taken),
        at most ``workers`` at once. Locks are taken without waiting, so that two managers never wait for each other.
        One batch of the process builds at a time (its threads share the build servers); a batch that ends before
        its builds (an interrupt) ends their server."""
        with _building:
            if not (self.fresh or self.cache_writable()):
                self.fresh, self.store = True, Store(_scratch())
            return self._build_missing(calls)

    def _build_missing(self, calls: list[Call]) -> dict[str, Any]:
        workers = self.builds.workers or os.cpu_count() or 1
        results: dict[str, Any] = {}
        errors: list[BuildError] = []
        pending = list(calls)
        running: dict[int, tuple[Call, contextlib.ExitStack, Path]] = {}
        server: Optional[_Server] = None
        try:
            while pending or running:
                for call in list(pending):
                    if len(running) >= 2 * workers:  # one waits at the server for each running
                        break
                    stack = contextlib.ExitStack()
                    if not self.claim(call, stack):
                        stack.close()
                        continue
                    pending.remove(call)
                    found = self.lookup(call)  # built by another manager while this one waited
                    if found is not None:
                        results[call.digest] = found
                        stack.close()
                        continue
                    server = server or _server(self.builds, self.store, self.base_holds)
                    partial = self.store.partial("build")
                    stack.callback(shutil.rmtree, partial, ignore_errors=True)
                    started_ns = time.time_ns()
                    write_private(partial / "call.pickle", call.data)
                    running[server.submit(partial, started_ns, workers)] = (call, stack, partial)
                if not running:
                    time.sleep(_POLL_S)
                    continue
                assert server is not None  # started with the first build running
                done = server.wait(timeout=_POLL_S if pending else None)
                for request_id, status, digests in done:
                    call, stack, partial = running.pop(request_id)
                    with stack:
                        try:
                            results[call.digest] = self.finish(call, partial, status, digests, server)
                        except BuildError as e:
                            errors.append(e)
        finally:
            for _, stack, _ in running.values():
                stack.close()
            if running and server is not None:
                _discard(server)  # its builds would answer the next batch
        if errors:
            more = f" ({len(errors) - 1} more builds failed)" if len(errors) > 1 else ""
            raise BuildError(f"{errors[0]}{more}")
        return results

    def claim(self, call: Call, stack: contextlib.ExitStack) -> bool:
        """Whether the call is to be built now: its lock taken (into ``stack``), or held by a dead process or for
        longer than ``lock_timeout`` (then it is built without the lock). A wait is reported once, naming the holder."""
        lock = self.store.lock(call.key)
        if self.fresh or stack.enter_context(locked(lock, wait=False)):
            return True
        what = f"{call.name}({call.description})"
        who = holder(lock)
        if who is not None and who.dead():
            logging.warning(
                "build cache: the lock %s of %s is held by %s, which has ended: taken over", lock, what, who
            )
            return True
        waited = time.monotonic() - self.waiting.setdefault(call.digest, time.monotonic())
        if waited > self.builds.lock_timeout:
            logging.warning(
                "build cache: waited %.0f s for the lock %s of %s, held by %s: built without it",
                waited,
                lock,
                what,
                who or "another process",
            )
            return True
        if waited > _SAY_AFTER_S and call.digest not in self.said:
            self.said.add(call.digest)
            logging.warning(
                "build cache: waiting (at most %.0f s) for the lock %s of %s, held by %s",
                self.builds.lock_timeout,
                lock,
                what,
                who or "another process",
            )
        return False

    def cache_writable(self) -> bool:
        """Whether the cache can take an entry; if not (a full disk, a directory this user may not write), builds
        run without it, said once per cache and process, naming the path and the error."""
        try:
            probe = self.store.partial("probe")
            try:
                (probe / "probe").write_bytes(bytes(4096))
                self.store.lock("probe").parent.mkdir(parents=True, exist_ok=True)
            finally:
                shutil.rmtree(probe, ignore_errors=True)
        except OSError as e:
            _say_unwritable(self.store.root, e)
            return False
        return True

    def keep_log(self, call: Call, partial: Path) -> Path:
        """The log of a failed build, kept as the call's ``failed/`` log."""
        failed = self.store.failed_log(call.key)
        failed.parent.mkdir(parents=True, exist_ok=True)
        if (partial / "log").exists():
            shutil.move(partial / "log", failed)
        return failed

    def finish(self, call: Call, partial: Path, status: int, digests: dict[str, str], server: "_Server") -> Any:
        """The result of a build that ended with ``status``, stored as an entry if the build succeeded and no
        dependency changed while it ran; its files are used only if they are the bytes whose ``digests`` the build
        process sent."""
        if status != 0:
            failed = self.keep_log(call, partial)
            how = f"was killed by signal {-status}" if status < 0 else f"failed (exit status {status})"
            raise BuildError(
                f"the build of {call.name}({call.description}) {how}; the end of its output ({failed}):\n"
                + _tail(failed)
            )
        if not (partial / "deps.json").exists():
            raise BuildError(
                f"the build of {call.name}({call.description}) ended with exit status 0 but wrote no result (the "
                f"builder or code it called ended the process, e.g. with os._exit(0)); its output: "
                f"{self.keep_log(call, partial)}"
            )
        result, deps_data = (partial / "result.pickle").read_bytes(), (partial / "deps.json").read_bytes()
        for name, data in [("result.pickle", result), ("deps.json", deps_data)]:
            if sha256_hex(data) != digests.get(name):
                raise BuildError(
                    f"the build of {call.name}({call.description}) left a {partial / name} that is not the one its "
                    "build process wrote (changed by another process): not used; make sure no one else can write "
                    f"{self.store.root}"
                )
        deps = json.loads(deps_data)
        (partial / "deps.json").unlink()
        if not (self.fresh or deps["changed_while_building"] or server.changed_while_loading):
            entry = {
                "builder": call.name,
                "arguments": call.description,
                "key": call.key,
                "base": server.base_digest,
                **{kind: deps[kind] for kind in ENTRY_KINDS},
                "recorded_ns": deps["recorded_ns"],
                "sis_hash": deps["sis_hash"],
            }
            try:
                self.store.put(call.key, partial, entry, result, (partial / "call.pickle").read_bytes())
            except OSError as e:  # a disk that filled up while the build ran: the result is still good
                _say_unwritable(self.store.root, e)
            else:
                for variant in self.stale.get(call.digest, []):
                    self.store.remove(variant)
        return job_paths.loads(result, call.paths)


def _env_changed(env: dict[str, Optional[str]]) -> Optional[str]:
    """What of the recorded environment (digests of values) no longer holds: named, its values not shown."""
    for name, digest in env.items():
        now = os.environ.get(name)
        if value_digest(now) != digest:
            how = "unset" if now is None else "set" if digest is None else "another value"
            return f"${name} changed ({how})"
    return None


def _import_result_classes() -> None:
    """Imports what unpickling a build's result imports (the result classes and i6_core's ReturnnConfig, about
    0.4 s in a manager that has not imported them), so that the first result does not wait for it."""
    from i6_rc_jobs import serializers  # noqa: F401
    from i6_rc_jobs._code_hash import fingerprint  # noqa: F401


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no output)"
    return "\n".join(lines[-_LOG_LINES:])


class _Server:
    """A running build server (:mod:`.server`), with the base it recorded."""

    def __init__(self, builds: Builds, store: Store):
        partial = store.partial("server")
        self.directory = partial
        self.log = partial / "log"
        bootstrap = (
            f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
            "from i6_rc_jobs._builds.server import main; main()"
        )
        with open(os.open(self.log, os.O_WRONLY | os.O_CREAT, PRIVATE), "wb") as log:
            self.process = subprocess.Popen(
                [builds.executable(), "-c", bootstrap],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=builds.workdir(),
            )
        self._buffer = b""
        self._next_id = 0
        known = next((base for base in reversed(_bases.values()) if base is not None), None) or store.newest_base()
        setup = {
            "sys_path": builds.sys_path(),
            "preload": list(builds.preload),
            "base": str(partial / "base.json"),
            "known": known,  # the fingerprints of a base read (and so verified as signed) in this process
        }
        self._send(setup)
        _import_result_classes()  # on another core while the server imports its libraries
        reply = self._read(timeout=None)
        if reply is None or not reply.get("ready"):
            output = _tail(self.log)
            self.close()
            raise BuildError(f"the build server ({builds.executable()}) did not start; its output:\n{output}")
        ready = time.perf_counter()
        self.base_data = (partial / "base.json").read_bytes()
        self.base = json.loads(self.base_data)
        self.changed_while_loading = bool(self.base["changed_while_loading"])
        self.base_digest = hashlib.sha256(self.base_data).hexdigest()
        _bases[self.base_digest] = self.base  # what this process made: checked as a stored base is
        #: What the start cost beyond importing the libraries: the server's base (its files' fingerprints, kept
        #: between starts) and reading it here (storing it is added by :func:`_server`).
        self.own_s = reply.get("base_s", 0.0) + time.perf_counter() - ready

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            raise BuildError(f"the build server ended (status {self.process.wait()}):\n{_tail(self.log)}") from None

    def _read(self, timeout: Optional[float]) -> Optional[dict[str, Any]]:
        """The next message, None at the end of the output or after ``timeout`` seconds without one."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                if not selector.select(timeout):
                    return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def submit(self, partial: Path, started_ns: int, workers: int) -> int:
        """Starts a build in ``partial``, with the manager's environment as it is now, once fewer than ``workers``
        builds run."""
        self._next_id += 1
        request = {
            "id": self._next_id,
            "dir": str(partial),
            "started_ns": started_ns,
            "environ": dict(os.environ),
            "workers": workers,
        }
        self._send(request)
        return self._next_id

    def current(self) -> bool:
        """Whether the environment variables the server read while loading still have the values it read."""
        return self.process.poll() is None and _env_changed(self.base["env"]) is None

    def wait(self, timeout: Optional[float]) -> list[tuple[int, int, dict[str, str]]]:
        """(request, status, digests of the files it wrote) of the builds that ended; the server's end ends them
        all."""
        message = self._read(timeout)
        if message is None:
            if self.process.poll() is None:
                return []
            raise BuildError(f"the build server ended (status {self.process.returncode}):\n{_tail(self.log)}")
        done = [(message["id"], message["status"], message["digests"])]
        while b"\n" in self._buffer:
            message = self._read(0)
            assert message is not None  # a whole line is buffered
            done.append((message["id"], message["status"], message["digests"]))
        return done

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


_servers: dict[tuple, _Server] = {}
#: Held by the batch that uses the build servers.
_building = threading.Lock()
#: The caches found not writable (said once).
_unwritable: set[Path] = set()
#: The bases read so far, by digest (None: not signed with the cache's key).
_bases: dict[str, Optional[dict[str, Any]]] = {}


def stop_servers() -> None:
    """Ends this process's build servers now rather than at its exit (a later build starts one anew): for a process
    that lives on after its builds, such as a notebook or a test, and wants their memory back."""
    while _servers:
        _servers.popitem()[1].close()


atexit.register(stop_servers)


def _discard(server: _Server) -> None:
    """Ends a server and its builds; the next build starts another."""
    for key, known in list(_servers.items()):
        if known is server:
            del _servers[key]
    server.close()


def _say_unwritable(root: Path, error: OSError) -> None:
    if root not in _unwritable:
        _unwritable.add(root)
        where = error.filename or root
        logging.warning(
            "build cache: %s cannot be written (%s: %s): building without caching", root, error.strerror or error, where
        )


def _scratch() -> Path:
    """Where builds run when the cache cannot be written: this user's directory in the temporary directory."""
    return Path(tempfile.gettempdir()) / f"i6_rc_jobs-builds-{os.getuid()}"


def _server(builds: Builds, store: Store, base_holds: Callable[[str], Optional[bool]]) -> _Server:
    """The process's build server for this Python, path, working directory and preload (started on first use, and
    anew when its base no longer holds: it would build with the code it loaded, not the code there is now), with its
    base in ``store``."""
    key = (builds.executable(), tuple(builds.sys_path()), builds.workdir(), builds.preload)
    server = _servers.get(key)
    started = server is None or not server.current() or not base_holds(server.base_digest)
    if started:
        if server is not None:
            server.close()
        server = _servers[key] = _Server(builds, store)
    assert server is not None
    stored = time.perf_counter()
    if not server.changed_while_loading:
        try:
            store.put_base(server.base_data)
        except OSError as e:
            _say_unwritable(store.root, e)
    if started:
        server.own_s += time.perf_counter() - stored
        logging.info("build cache: a build server started, %.2f s of it beyond its imports", server.own_s)
    return server

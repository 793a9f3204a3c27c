"""The manager's link to its build servers (:mod:`.server`): one per build Python, path, working directory, preload and
result classes, started on the first build that is not cached and replaced once its base no longer holds (it would
build with the code it loaded, not the code there is now); each ends with the manager."""

from __future__ import annotations

import atexit
import hashlib
import importlib
import json
import logging
import os
import selectors
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from i6_rc_jobs._builds.errors import BuildError, tail
from i6_rc_jobs._builds.json_records import Base, Request, Setup
from i6_rc_jobs._builds.lookup import Setting, env_changed, newest_known_base, remember_base
from i6_rc_jobs._builds.store import PRIVATE, Store, say_unwritable


@dataclass(frozen=True)
class ServerSpec:
    """What a build server is: where it runs (``setting``), what it imports before it forks builds (``preload``), and
    the classes a builder may return (``results``, as ``module:qualname``), which it imports too."""

    setting: Setting
    preload: tuple[str, ...]
    results: tuple[str, ...]


@dataclass(frozen=True)
class Ended:
    """A build that ended: its request, its exit status (minus the signal that killed it), and the digests of the
    files it wrote, as its process sent them."""

    request: int
    status: int
    digests: dict[str, str]


class ServerLink:
    """A running build server, with the base it recorded."""

    def __init__(self, spec: ServerSpec, store: Store):
        partial = store.partial("server")
        self.directory = partial
        self.log = partial / "log"
        bootstrap = (
            f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
            "from i6_rc_jobs._builds.server import main; main()"
        )
        with open(os.open(self.log, os.O_WRONLY | os.O_CREAT, PRIVATE), "wb") as log:
            self.process = subprocess.Popen(
                [spec.setting.executable, "-c", bootstrap],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=spec.setting.workdir,
            )
        self._buffer = b""
        self._next_id = 0
        setup = Setup(
            sys_path=list(spec.setting.sys_path),
            preload=list(spec.preload),
            results=list(spec.results),
            base=str(partial / "base.json"),
            known=newest_known_base() or store.newest_base(),  # the fingerprints of a base verified as signed
        )
        self._send(setup)
        _import_results(spec.results)  # on another core while the server imports its libraries
        reply = self._read(timeout=None)
        if reply is None or not reply.get("ready"):
            output = tail(self.log)
            self.close()
            raise BuildError(f"the build server ({spec.setting.executable}) did not start; its output:\n{output}")
        ready = time.perf_counter()
        self.base_data = (partial / "base.json").read_bytes()
        self.base: Base = json.loads(self.base_data)
        self.changed_while_loading = bool(self.base["changed_while_loading"])
        self.base_digest = hashlib.sha256(self.base_data).hexdigest()
        remember_base(self.base_digest, self.base)
        #: What the start cost beyond importing the libraries: the server's base (its files' fingerprints, kept
        #: between starts) and reading it here (storing it is added by :func:`server_for`).
        self.own_s = reply.get("base_s", 0.0) + time.perf_counter() - ready

    def _send(self, message: Any) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            raise BuildError(f"the build server ended (status {self.process.wait()}):\n{tail(self.log)}") from None

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
        request = Request(
            id=self._next_id, dir=str(partial), started_ns=started_ns, environ=dict(os.environ), workers=workers
        )
        self._send(request)
        return self._next_id

    def current(self) -> bool:
        """Whether the environment variables the server read while loading still have the values it read."""
        return self.process.poll() is None and env_changed(self.base["env"]) is None

    def wait(self, timeout: Optional[float]) -> list[Ended]:
        """The builds that ended; the server's end ends them all."""
        message = self._read(timeout)
        if message is None:
            if self.process.poll() is None:
                return []
            raise BuildError(f"the build server ended (status {self.process.returncode}):\n{tail(self.log)}")
        done = [Ended(message["id"], message["status"], message["digests"])]
        while b"\n" in self._buffer:
            message = self._read(0)
            assert message is not None  # a whole line is buffered
            done.append(Ended(message["id"], message["status"], message["digests"]))
        return done

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def _import_results(results: tuple[str, ...]) -> None:
    """Imports the modules of the result classes, which unpickling a build's result imports (a serializer's module
    with i6_core's ReturnnConfig takes about 0.4 s in a manager that has not imported them), so that the first result
    does not wait for them."""
    for name in results:
        importlib.import_module(name.partition(":")[0])


_servers: dict[ServerSpec, ServerLink] = {}


def stop_servers() -> None:
    """Ends this process's build servers now rather than at its exit (a later build starts one anew): for a process
    that lives on after its builds, such as a notebook or a test, and wants their memory back."""
    while _servers:
        _servers.popitem()[1].close()


atexit.register(stop_servers)


def discard(server: ServerLink) -> None:
    """Ends a server and its builds; the next build starts another."""
    for key, known in list(_servers.items()):
        if known is server:
            del _servers[key]
    server.close()


def server_for(spec: ServerSpec, store: Store, base_holds: Callable[[str], Optional[bool]]) -> ServerLink:
    """The process's build server for ``spec`` (started on first use, and anew when its base no longer holds), with
    its base in ``store``."""
    server = _servers.get(spec)
    started = server is None or not server.current() or not base_holds(server.base_digest)
    if started:
        if server is not None:
            server.close()
        server = _servers[spec] = ServerLink(spec, store)
    assert server is not None
    stored = time.perf_counter()
    if not server.changed_while_loading:
        try:
            store.put_base(server.base_data)
        except OSError as e:
            say_unwritable(store.root, e)
    if started:
        server.own_s += time.perf_counter() - stored
        logging.info("build cache: a build server started, %.2f s of it beyond its imports", server.own_s)
    return server

"""The build server: a process that has imported the libraries builds need (TensorFlow, RETURNN, returnn_common;
no recipe code) and forks one child per build. A child starts as a copy of that state, so that it pays no import of
the libraries and sees nothing another build or the manager left behind (returnn_common's name context, RETURNN's
caches, random state): it imports the recipe code itself, builds, writes its result into the entry directory it was
given, and exits. Runs with the setup's Python (``python -m i6_rc_jobs._builds.server`` is not how it is started:
the manager puts i6_rc_jobs on the path first, see :mod:`.server_link`). Each child leads a process group of its
own: what a builder starts ends with its build.

Protocol, JSON lines (:mod:`.json_records`): the manager sends ``{"sys_path", "preload", "results", "base",
"known"}`` once (``results``: the classes a builder may return, as ``module:qualname``, which the server imports),
then ``{"id", "dir", "started_ns", "environ", "workers"}`` per build (``workers``: how many builds of its batch may
run at once; the server queues the others); the server answers ``{"ready": true, "preloaded": [...], "base_s"}``
once (``base_s``: the seconds its base took, what a start costs beyond the imports) and ``{"id", "status",
"digests"}`` per build: the child's exit status (or minus the signal that killed it) and the SHA-256 of the
``result.pickle`` and ``deps.json`` it wrote, which the child sends the server through a pipe of its own (the
manager signs and unpickles only those bytes). End of input ends the server and its children."""

from __future__ import annotations

import collections
import ctypes
import gc
import hashlib
import importlib
import json
import os
import selectors
import signal
import sys
import time
import traceback
import types
from typing import Any, Mapping, Optional

from i6_rc_jobs._util.loaded_modules import module_files_since, module_value
from i6_rc_jobs._builds import in_build, job_paths, probes, record
from i6_rc_jobs._builds.fingerprint import Fingerprint, Kept, fingerprint, kept_path
from i6_rc_jobs._builds.json_records import Base, Deps, Python, Request, Setup
from i6_rc_jobs._builds.store import FORMAT, PRIVATE

#: A dependency changed later than this before the build began may have changed while it read it.
CLOCK_SLACK_NS = 20_000_000
#: The modules the server had loaded when it took its base (whose files the base holds): a build goes through
#: only the modules it loads itself.
_loaded: dict[str, types.ModuleType] = {}
_PR_SET_PDEATHSIG = 1
#: The module probes the base holds, as (name, path): a build goes through only the probes it adds.
_known_modules: set[tuple[str, tuple[str, ...]]] = set()


#: What ``import tensorflow`` loads eagerly "so that registration of optimizers in the SavedModel registry" happens
#: (TensorFlow's ``__init__``): Keras, which no model build uses. ``tf.keras`` still loads it when a build uses it.
_EAGER_KERAS = ("keras.src.optimizers", "tf_keras.src.optimizers")


def _preload(name: str) -> None:
    """Imports the module; TensorFlow without its eager import of Keras (1.3 s of the server's start here: a third
    of its modules, which every base would fingerprint and every lookup verify)."""
    blocked = [eager for eager in _EAGER_KERAS if eager not in sys.modules] if name == "tensorflow" else []
    for eager in blocked:
        sys.modules[eager] = None  # type: ignore[assignment]  # an import of it fails at once, as if not installed
    try:
        importlib.import_module(name)
    finally:
        for eager in blocked:
            if sys.modules.get(eager, ...) is None:
                del sys.modules[eager]


def _fingerprints(paths: list[str]) -> dict[str, Fingerprint]:
    return {path: fingerprint(path) for path in paths}


def _changed_since(fingerprints: dict[str, Fingerprint], started_ns: int) -> list[str]:
    return [path for path, fp in fingerprints.items() if fp[0] is not None and fp[5] >= started_ns - CLOCK_SLACK_NS]


def _listed_since(listings: dict[str, Optional[str]], started_ns: int) -> list[str]:
    """The directories listed whose names may have changed since the build began (their ctime is that late)."""
    changed = []
    for path in listings:
        try:
            if os.lstat(path).st_ctime_ns >= started_ns - CLOCK_SLACK_NS:
                changed.append(path)
        except OSError:
            pass
    return changed


def _warm() -> None:
    """Fills the memos that returnn_common's naming fills at a build's first layer, once here instead of in every
    build (about 0.15 s each): RETURNN's ``better_exchook`` maps each loaded module's file to the module (importing on
    the way RETURNN's lazily registered old module names), and finds the function of a code object that no module
    names, such as ``Parameter.initial``'s, by a scan of every object. Memos only: a build finds what it would have
    found itself, and what the server imports here is in its base."""
    exchook = sys.modules.get("returnn.util.better_exchook")
    if exchook is None:
        return
    find = exchook.get_func_from_code_object
    find(find.__code__)  # its first lookup of a module file maps every module's
    parameter = getattr(sys.modules.get("returnn_common.nn"), "Parameter", None)
    initial = getattr(parameter, "initial", None)
    for function in (initial.fget, initial.fset) if isinstance(initial, property) else ():
        if function is not None:
            find(function.__code__)


def _memo_new_module_files() -> None:
    """Adds the modules a build loaded (the builder's own module, to begin with) to the module-file memo that
    :func:`_warm` filled: ``better_exchook`` maps every loaded module's file anew (13 to 26 ms under the profiler, over
    the server's 3,500 modules) at the first code object of a file it has not mapped. Memos only: the entries it would
    have added."""
    memo = module_value(sys.modules.get("returnn.util.better_exchook"), "_loaded_module_from_filename_cache")
    if not isinstance(memo, dict):
        return
    for name, path in module_files_since(_loaded):
        memo[path[:-1] if path.endswith((".pyc", ".pyo")) else path] = name


def _base(started_ns: int, sys_path: list[str], known: Optional[Base], kept: Kept) -> Base:
    """What the server itself depended on when it was ready: every build from it depends on that. The files'
    fingerprints are taken from ``kept`` or ``known`` (a base the manager verified) where their stat proves them, so
    that a new server does not read the libraries' hundreds of MB again."""
    opened, found = record.looked_at()
    _loaded.update(sys.modules)  # with the files of these modules, which the base holds
    files = [*record.module_files(), *opened, os.path.realpath(sys.executable)]
    from_base = {path: [*fp, known["recorded_ns"]] for path, fp in known["files"].items()} if known else {}
    fingerprints = kept.fingerprints(list(dict.fromkeys(files)), from_base)
    kept.save()
    base = Base(  # in this order: the base's digest is that of its JSON
        format=FORMAT,
        python=Python(executable=sys.executable, version=sys.version),  # its binary is among the files
        sys_path=sys_path,  # as given: what the manager compares
        cwd=os.getcwd(),
        env=record.environment(),
        files=fingerprints,
        probes=found,
        listings=record.listings(),
        modules=record.module_probes(),
        recorded_ns=time.time_ns(),
        changed_while_loading=_changed_since(fingerprints, started_ns),
    )
    return (
        known if known is not None and _same(base, known) else base
    )  # the same base, with the same digest: stored once, however often servers start


#: What makes two bases the same (not when they were recorded).
_SAME_BASE = ("format", *record.BASE_KINDS, "changed_while_loading")


def _same(base: Mapping[str, Any], known: Mapping[str, Any]) -> bool:
    return all(base[name] == known.get(name) for name in _SAME_BASE)


def _result_class(name: str) -> type:
    """The class ``module:qualname`` names (importing its module)."""
    module, _, qualname = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _bytecode_of_installed_only(nowhere: str) -> None:
    """In a build: the setup's code (recipe/, checkouts) is compiled from its source, never taken from a ``.pyc`` of
    an edit that kept the source's mtime and size (its bytecode is looked for under ``nowhere``, which holds none);
    the installed packages and the standard library (librosa, scipy: seconds of compiling) use their ``__pycache__``
    as any import does. Nothing is written."""
    external: Any = importlib._bootstrap_external
    under_prefix = external.cache_from_source
    installed = probes.installed_roots()
    sys.dont_write_bytecode = True
    sys.pycache_prefix = nowhere

    def cache_from_source(path: Any, debug_override: Any = None, *, optimization: Any = None) -> str:
        cached = under_prefix(path, debug_override, optimization=optimization)
        if not os.path.abspath(os.fspath(path)).startswith(installed):
            return cached
        return os.path.join(os.path.dirname(os.fspath(path)), "__pycache__", os.path.basename(cached))

    external.cache_from_source = cache_from_source


def _build(
    directory: str, base: Base, results: tuple[type, ...], started_ns: int, environ: dict[str, str], digest_fd: int
) -> int:
    """In the child: one build; 0 if it wrote its result and dependencies (and sent their digests to ``digest_fd``);
    the builder must return one of ``results``."""
    import pickle

    from sisyphus.hash import sis_hash_helper

    in_build.enter()
    record.set_environment(environ)
    _bytecode_of_installed_only(os.path.join(directory, "no-bytecode"))
    with open(os.path.join(directory, "call.pickle"), "rb") as f:
        builder, args, kwargs = pickle.load(f)
    _memo_new_module_files()
    paths = job_paths.argument_paths((args, kwargs))
    result = builder(*args, **kwargs)
    name = f"{builder.__module__}.{builder.__qualname__}"
    if not isinstance(result, results):
        print(f"error: the builder {name} returned a {type(result).__name__}, not a {results[0].__name__}")
        return 1
    data = job_paths.dumps(result, paths)

    sis_hash = hashlib.sha256(sis_hash_helper(result)).hexdigest()
    known = base["files"]
    opened, found = record.looked_at(exclude=directory, since=_loaded)
    files = [path for path in record.module_files(since=_loaded) + opened if path not in known]
    listings = {
        path: digest for path, digest in record.listings(exclude=directory).items() if path not in base["listings"]
    }
    fingerprints = _fingerprints(list(dict.fromkeys(files)))
    env = {name: value for name, value in record.environment().items() if name not in base["env"]}
    deps = Deps(
        files=fingerprints,
        probes={path: what for path, what in found.items() if path not in base["probes"]},
        listings=listings,
        modules=[probe for probe in record.module_probes() if (probe[0], tuple(probe[1])) not in _known_modules],
        env=env,
        recorded_ns=time.time_ns(),
        sis_hash=sis_hash,
        changed_while_building=_changed_since(fingerprints, started_ns) + _listed_since(listings, started_ns),
    )
    deps_data = json.dumps(deps).encode()
    for name, content in [("result.pickle", data), ("deps.json", deps_data)]:
        with open(os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE), "wb") as f:
            f.write(content)
    digests = {"result.pickle": hashlib.sha256(data).hexdigest(), "deps.json": hashlib.sha256(deps_data).hexdigest()}
    os.write(digest_fd, json.dumps(digests).encode())
    return 0


def _child(request: Request, base: Base, results: tuple[type, ...], protocol_fd: int, digest_fd: int) -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setpgid(0, 0)  # what the builder starts is in its group, which ends with the build
    status = 1
    try:
        os.close(protocol_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        directory = request["dir"]
        log = os.open(os.path.join(directory, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log, 1)
        os.dup2(log, 2)
        status = _build(directory, base, results, request["started_ns"], request["environ"], digest_fd)
    except BaseException:
        traceback.print_exc()
        _say_rc_compat(sys.exc_info()[2])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _say_rc_compat(trace: Optional[types.TracebackType]) -> None:
    """A failure that passed through an ``nn`` that ``rc_compat.apply`` was not applied to: the log's last line names
    the fix."""
    from i6_rc_jobs._compat import rc_compat

    hint = rc_compat.failure_hint(trace)
    if hint:
        print(hint, file=sys.stderr)


class _Lines:
    """Lines of the manager's requests, read from the file descriptor unbuffered (a selector sees only unread data)."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = b""

    def read(self) -> list[Any]:
        """The requests that arrived; raises EOFError at the end of the input."""
        chunk = os.read(self.fd, 65536)
        if not chunk:
            raise EOFError
        lines = (self._buffer + chunk).split(b"\n")
        self._buffer = lines.pop()
        return [json.loads(line) for line in lines]


def main() -> None:
    started_ns = time.time_ns()
    gc.disable()  # the imports make objects that live as long as the server: collections meanwhile (0.2 s) find none
    kept = Kept(kept_path())  # read before recording starts: no dependency of builds
    record.install()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)  # what the libraries print while importing goes where the server's errors go
    protocol = os.fdopen(protocol_fd, "w", buffering=1)
    requests = _Lines(0)
    first: list[Setup] = []
    while not first:
        first = requests.read()
    setup = first[0]
    sys.path[:] = setup["sys_path"]
    # Sisyphus first: it finds the setup's recipe/ packages (e.g. recipe/returnn_common) as in the manager.
    import sisyphus.hash  # noqa: F401  (what every child hashes its result with)

    results = tuple(_result_class(name) for name in setup["results"])
    preloaded = []
    for name in setup["preload"]:
        try:
            _preload(name)
        except ImportError:
            continue
        preloaded.append(name)

    base_started = time.perf_counter()
    _warm()
    base = _base(started_ns, setup["sys_path"], setup["known"], kept)
    with open(os.open(setup["base"], os.O_WRONLY | os.O_CREAT, PRIVATE), "w") as f:
        json.dump(base, f)
    record.forget()  # the base holds it
    _known_modules.update((name, tuple(path)) for name, path, _ in base["modules"])
    gc.collect()  # else a build's first allocations set off a full collection: every object of the server, each build
    gc.enable()
    ready = {"ready": True, "preloaded": preloaded, "base_s": time.perf_counter() - base_started}
    protocol.write(json.dumps(ready) + "\n")
    try:
        _serve(requests, protocol, base, results, protocol_fd)
    except (EOFError, BrokenPipeError):
        pass


def _serve(requests: _Lines, protocol: Any, base: Base, results: tuple[type, ...], protocol_fd: int) -> None:
    """Forks a build per request, at most as many at once as the oldest waiting request allows (its ``workers``):
    the manager sends requests ahead, so that the next build starts when one ends, not when the manager has taken
    its result."""
    selector = selectors.DefaultSelector()
    selector.register(requests.fd, selectors.EVENT_READ)
    children: dict[int, tuple[int, int, int]] = {}  # pidfd -> (pid, request id, the read end of its digest pipe)
    waiting: collections.deque[Request] = collections.deque()
    try:
        while True:
            while waiting and len(children) < waiting[0]["workers"]:
                request = waiting.popleft()
                digests_in, digests_out = os.pipe()
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    os.close(digests_in)
                    _child(request, base, results, protocol_fd, digests_out)
                os.close(digests_out)
                pidfd = os.pidfd_open(pid)
                selector.register(pidfd, selectors.EVENT_READ)
                children[pidfd] = (pid, request["id"], digests_in)
            for key, _ in selector.select():
                if key.fd == requests.fd:
                    waiting.extend(requests.read())
                else:
                    pid, request_id, digests_in = children.pop(key.fd)
                    selector.unregister(key.fd)
                    os.close(key.fd)
                    _, status = os.waitpid(pid, 0)
                    _end_group(pid)
                    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                    digests = _sent(digests_in)
                    protocol.write(json.dumps({"id": request_id, "status": code, "digests": digests}) + "\n")
    finally:
        for pid, _, _ in children.values():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            _end_group(pid)


def _sent(digests_in: int) -> dict[str, str]:
    """The digests a build process sent before it ended (none if it failed first); the pipe is closed."""
    os.set_blocking(digests_in, False)
    try:
        data = os.read(digests_in, 65536)
    except BlockingIOError:  # a process the build started holds the pipe open and nothing was sent
        data = b""
    finally:
        os.close(digests_in)
    return json.loads(data) if data else {}


def _end_group(pid: int) -> None:
    """Ends what a build started (its process group, see :func:`_child`): nothing a build starts outlives it."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # nothing left in it
        pass


if __name__ == "__main__":
    main()

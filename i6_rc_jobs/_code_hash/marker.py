"""``by_content(get_model)``: a config value that stands for a function or class (or a partial of one) and hashes by
the code it runs, not by its name. The manager never imports it: the code is recorded by a build out of the manager
and cached (see docs/guide/code-hash.md)."""

from __future__ import annotations

import difflib
import functools
import logging
import os
import re
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

from i6_rc_jobs._builds.errors import BuildError
from i6_rc_jobs._code_hash import config_v2, snapshots
from i6_rc_jobs._code_hash.fingerprint import DEFAULT_LIBRARIES, CodeFingerprint, ComputedCode, RecordedCode
from i6_rc_jobs._code_hash.record import PRELOAD, recorded_code, resolve
from i6_rc_jobs._computation.inputs import Inputs
from i6_rc_jobs._serialization.job_config import JOB_CONFIG, options_text
from i6_rc_jobs._serialization.pinned_code import CodePins

#: The markers made and not yet resolved: the first that is resolved resolves them all, in one ``build_many`` (the
#: files every build shares are checked once).
_pending: "weakref.WeakSet[ByContent]" = weakref.WeakSet()
#: The failures logged so far (once each, where a marker is hashed by one).
_logged: set[str] = set()
#: A frame of a traceback, and the files of frames that are not the setup's own.
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_NOT_OWN = re.compile(r"[/\\](site-packages|lib/python3\.\d+|i6_rc_jobs|returnn|torch)[/\\]|^<frozen ")
#: How often a marker is built again with the job's config while its construction looks up other options each time.
CONFIG_ROUNDS = 4
#: What a code build returns, as its build server imports it.
RESULTS = (f"{RecordedCode.__module__}:{RecordedCode.__qualname__}",)


class ByContent:
    """A reference (``module.qualname``, with the arguments of a partial) whose Sisyphus hash is the hash of the code
    it runs; written into a config as the plain reference it wraps (:meth:`reference`), which imports the modules of
    that code from their snapshots (:meth:`pins`), unless ``live``."""

    #: Import the setup's live code where the job runs, not the snapshot of what was hashed (a marker pickled before
    #: snapshots existed has neither: it is live).
    live = False
    #: The root of the snapshots of its code (see :mod:`.snapshots`), once its fingerprint is made.
    snapshots: Optional[str] = None
    #: The RETURNN its jobs run (a setup's ``returnn_root``, MiniReturnn among them), which its build imports
    #: first; None: the manager's.
    returnn_root: Optional[str] = None
    #: Why its build failed, in one line with the model's own frame: then its hash is that of the failure, and its
    #: jobs fail with this line where they write their config, while the manager goes on with the other jobs.
    failure: Optional[str] = None
    #: The inputs of the model's forward where it is hashed by what it computes (:mod:`.computed`); None: by its code.
    computation: Optional[Inputs] = None

    def __init__(
        self,
        module: str,
        qualname: str,
        args: tuple = (),
        kwargs: Optional[dict[str, Any]] = None,
        construct: Optional[bool] = None,
        libraries: tuple[str, ...] = DEFAULT_LIBRARIES,
        live: bool = False,
        returnn_root: Optional[str] = None,
        computation: Optional[Inputs] = None,
    ):
        self.module = module
        self.qualname = qualname
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.construct = construct
        self.libraries = tuple(libraries)
        self.live = live
        self.returnn_root = returnn_root
        self.computation = computation
        #: How it hashes by computation, by the digest of the code fingerprint it was recorded with.
        self._computed: dict[str, ComputedCode] = {}
        #: Fixed for the marker's life, as a job's hash is, and pickled with it (hash-diff compares those).
        self._fingerprint: Optional[CodeFingerprint] = None
        _pending.add(self)

    def __repr__(self) -> str:
        inner = ", ".join([repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in sorted(self.kwargs.items())])
        return f"by_content({self.module}.{self.qualname}{', ' if inner else ''}{inner})"

    def __copy__(self) -> "ByContent":
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> "ByContent":
        """The marker itself, as Sisyphus copies a job: configs are deep-copied by jobs (ReturnnTrainingJob makes
        several copies), and a copy would look its code up again."""
        return self

    def _call(self) -> tuple:
        """The build's arguments. A model whose arguments hold a Sisyphus value (a ``tk.Path`` of a job's output,
        which may not exist yet) is only imported, unless told to construct: what it reads from there is named by
        the value's hash, and its hash must be the same before and after the job that makes it ran."""
        construct = self.construct
        if construct is None and _holds_sisyphus_values((self.args, self.kwargs)):
            construct = False
        return (self.module, self.qualname, self.args, self.kwargs, construct, self.libraries)

    def _options(self) -> dict[str, Any]:
        """The build's keyword arguments (none for a marker hashed by its code: its builds are cached as before)."""
        return {} if self.computation is None else {"computation": self.computation}

    def fingerprint(self) -> CodeFingerprint:
        """The code it runs, recorded by a build (cached: warm, a lookup that proves the files unchanged); a failed
        build raises its line (:attr:`failure`). Where construction read the RETURNN config and the job's config is
        known (while a config that holds the marker is hashed or written), the code as built with that config; where
        the build without the job's config failed, it is built with all of it (construction may need an option)."""
        self._resolve()
        job = JOB_CONFIG.get()
        if self.failure is not None:
            if job is None:
                raise BuildError(self.failure)
            return self._in_config(*job, read=set(job[0]) | job[1])
        assert self._fingerprint is not None
        if not self._fingerprint.config_read or job is None:
            return self._fingerprint
        return self._in_config(*job, read=set(self._fingerprint.config_read))

    def _in_config(self, options: dict[str, Any], unavailable: frozenset[str], read: set[str]) -> CodeFingerprint:
        """The fingerprint of the code built with the job's options ``read`` (those construction looks up), built
        again while it looks up others (an option may lead to more); kept per options given, as the marker's own
        is."""
        configured: dict[str, Union[CodeFingerprint, str]] = self.__dict__.setdefault("_configured", {})
        for _ in range(CONFIG_ROUNDS):
            given = options_text({key: options[key] for key in read if key in options}, unavailable & read)
            if given not in configured:
                call: tuple[Any, tuple, dict] = (recorded_code, (*self._call(), given), self._options())
                (recorded,) = code_builds(self.returnn_root).build_many([call], failures=True)
                configured[given] = self._kept(recorded)
            found = configured[given]
            if isinstance(found, str):
                raise BuildError(found)
            if set(found.config_read) <= read:
                return found
            read |= set(found.config_read)
        raise BuildError(f"{self!r}: its construction reads other config options at each of {CONFIG_ROUNDS} builds")

    def _kept(self, recorded: Union[RecordedCode, BuildError]) -> Union[CodeFingerprint, str]:
        """The fingerprint of a build, its snapshots stored; or the line of its failure."""
        if isinstance(recorded, BuildError):
            return f"{self!r}: its build failed: {failure_line(str(recorded))}"
        root = snapshots.snapshot_root()
        for name, module in recorded.fingerprint.modules.items():
            snapshots.store(root, name, module["package"], recorded.sources[name])
        self.snapshots = str(root)
        if recorded.computed is not None:
            self.__dict__.setdefault("_computed", {})[recorded.fingerprint.digest] = recorded.computed
        return recorded.fingerprint

    def computed(self) -> Optional[ComputedCode]:
        """How it hashes by computation (for the code it is hashed with, :meth:`fingerprint`); None for a marker
        hashed by its code, or one whose build failed."""
        if self.computation is None:
            return None
        try:
            digest = self.fingerprint().digest
        except BuildError:
            return None
        return self.__dict__.get("_computed", {}).get(digest)

    def _resolve(self) -> None:
        """Builds the fingerprints of this marker and of every other not yet resolved, in one batch; a marker whose
        build failed gets its :attr:`failure` (logged), the others their fingerprints and snapshots."""
        if self._fingerprint is not None or self.failure is not None:
            return
        markers = [self, *(m for m in list(_pending) if m is not self and m.returnn_root == self.returnn_root)]
        if self.returnn_root is not None and not os.path.isdir(self.returnn_root):
            error = BuildError(f"its RETURNN {self.returnn_root} is not there (yet): make it before the manager hashes")
            found: list[Any] = [error] * len(markers)
        else:
            calls: list[tuple[Any, tuple, dict]] = [
                (recorded_code, marker._call(), marker._options()) for marker in markers
            ]
            found = code_builds(self.returnn_root).build_many(calls, failures=True)
        for marker, recorded in zip(markers, found):
            _pending.discard(marker)
            kept = marker._kept(recorded)
            if isinstance(kept, str):
                marker.failure = kept
            else:
                marker._fingerprint = kept

    def changes(self, now: "ByContent") -> Iterator[str]:
        """What differs between what this marker and ``now`` are hashed by, a line each: for two hashed by
        computation, which graph, op, shape or initial value differs, and which definitions counted by their code;
        then what changed in the code (where the code counts, as the lines before say, or for markers hashed by
        it)."""
        ours, theirs = self.computed(), now.computed()
        if ours is not None and theirs is not None and ours.digest == theirs.digest:
            return
        if ours is not None and theirs is not None and ours.fingerprint is not None and theirs.fingerprint is not None:
            yield from (f"computation: {line}" for line in ours.fingerprint.differences(theirs.fingerprint))
            for name in sorted(set(ours.by_code) ^ set(theirs.by_code)):
                yield f"counted by its code: {name}: {ours.by_code.get(name, 'no')} -> {theirs.by_code.get(name, 'no')}"
        elif (ours, theirs) != (None, None):
            said = ["its code" if c is None or c.fingerprint is None else "what it computes" for c in (ours, theirs)]
            if said[0] != said[1]:
                yield f"hashed by {said[0]} -> by {said[1]}"
        yield from self.fingerprint().changes(now.fingerprint())

    def _sis_hash(self) -> bytes:
        from sisyphus.hash import sis_hash_helper  # (0.2 s of imports: only where a marker is hashed)

        try:
            code = self.fingerprint().digest
        except BuildError as e:
            code = f"failed: {e}"
            if str(e) not in _logged:
                _logged.add(str(e))
                logging.error(f"{e} (its jobs fail with this line; the other jobs go on)")
        computed = self.computed()
        if computed is not None:
            line = f"{self!r}: {computed.summary()}"
            if line not in _logged:
                _logged.add(line)
                if computed.digest is not None:
                    logging.info(line)
                else:
                    logging.warning(line)
            if computed.digest is not None:
                code = f"computation {computed.digest}"
        return sis_hash_helper(("by_content", (f"{self.module}.{self.qualname}", self.args, self.kwargs, code)))

    def config_reference(self) -> Any:
        """The plain reference as data, without importing it: what a :class:`~i6_rc_jobs.ReturnnConfigSerializer`
        writes (an import of ``module.qualname``, or a ``functools.partial`` call of it with the arguments, dims among
        them written as the config's dims); it hashes it by :meth:`_sis_hash`."""
        from i6_rc_jobs._serialization.callables import NamedRef, PartialRef  # (0.6 s with i6_core: only to write)

        named = NamedRef(self.module, self.qualname)
        return PartialRef(named, self.args, self.kwargs) if self.args or self.kwargs else named

    def pins(self) -> Optional[CodePins]:
        """What the written config imports from snapshots and checks where the job runs (:class:`CodePins`: each
        module's snapshot file, SHA-256, whether it is a package and its file in the setup; the modules that stay
        absent; the files, environment variables and library files the code read); None for a live marker."""
        if self.live:
            return None
        fingerprint = self.fingerprint()
        if self.snapshots is None:  # made before snapshots were, and pickled with its job
            return None
        root = Path(self.snapshots)
        modules = {}
        for name, module in fingerprint.modules.items():
            sha256, package = module["sha256"], module["package"]
            modules[name] = (str(snapshots.file_of(root, name, sha256, package)), sha256, package, module["file"])
        return CodePins(modules, set(fingerprint.absent), fingerprint.files, fingerprint.env, fingerprint.library_files)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as any object; written by i6_core's serialization_v2 (a ``ReturnnConfigV2``) as the plain reference,
        imported after the lines that pin its code (:mod:`.config_v2`), as a ReturnnConfigSerializer writes it."""
        if not config_v2.writing_v2():
            return super().__reduce_ex__(protocol)
        return config_v2.reference(self.module, self.qualname, self.args, self.kwargs, self.pins())

    def reference(self) -> Any:
        """The plain reference, as a config holds it: the object (imported), or a ``functools.partial`` of it."""
        target = resolve(self.module, self.qualname)
        return functools.partial(target, *self.args, **self.kwargs) if self.args or self.kwargs else target


def _holds_sisyphus_values(value: Any) -> bool:
    """Whether ``value`` (lists, tuples, dicts, sets of values) holds a Sisyphus ``DelayedBase`` (a ``tk.Path``, a
    ``tk.Variable``), told by its class's name, so that Sisyphus is not imported for a marker without one."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_sisyphus_values(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_sisyphus_values(item) for item in (*value.keys(), *value.values()))
    return any(
        cls.__name__ == "DelayedBase" and cls.__module__ == "sisyphus.delayed_ops" for cls in type(value).__mro__
    )


def failure_line(message: str) -> str:
    """The error a failed build ended in, with the last frame of the traceback in code that is neither Python's nor
    a library's (``ValueError: no such size (recipe/my_model.py:42)``), if there is one; the message as it is if it
    has no traceback."""
    lines = message.splitlines()
    frames = [match for line in lines if (match := _FRAME.match(line))]
    if not frames:
        return " ".join(lines[:1])
    error = next(line for line in reversed(lines) if line.strip() and not line.startswith(" "))
    own = [frame for frame in frames if not _NOT_OWN.search(frame["file"])]
    return f"{error} ({own[-1]['file']}:{own[-1]['line']})" if own else error


def code_diff(before: ByContent, after: ByContent, most: int = 40) -> list[str]:
    """The lines that changed in each module whose code changed from ``before`` to ``after`` (see
    :func:`snapshot_diff`)."""
    if before.snapshots is None or after.snapshots is None:
        return []
    return snapshot_diff((before.snapshots, before.fingerprint()), (after.snapshots, after.fingerprint()), most)


def snapshot_diff(before: tuple[str, CodeFingerprint], after: tuple[str, CodeFingerprint], most: int = 40) -> list[str]:
    """The lines that changed in each module whose code changed from ``before`` to ``after`` (each a snapshot root
    and a fingerprint): a unified diff of their snapshots, at most ``most`` lines a module, or for a module whose
    snapshot is not kept, why there is none."""
    old, new = before[1].modules, after[1].modules
    lines: list[str] = []
    for name in sorted(set(old) & set(new)):
        if old[name]["digest"] == new[name]["digest"]:
            continue
        try:
            texts = [
                snapshots.read(Path(root), name, module["sha256"], module["package"]).decode(errors="replace")
                for root, module in ((before[0], old[name]), (after[0], new[name]))
            ]
        except snapshots.SnapshotError as e:
            lines.append(f"no diff of {name}: {e}")
            continue
        diff = list(difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(), name, name, n=1, lineterm=""))
        lines += diff[:most] + ([f"... ({len(diff) - most} more lines)"] if len(diff) > most else [])
    return lines


@functools.cache
def code_builds(returnn_root: Optional[str] = None) -> Any:
    """The builds of code fingerprints: the manager's Python and paths (after ``returnn_root``, if given), a build
    server that has imported torch."""
    # Imported here: the build machinery is 60 ms of imports, which a process that unpickles a job holding a marker
    # (every worker of such a job) but never looks its code up would pay.
    from i6_rc_jobs._builds.builds import Builds

    return Builds(returnn_root=returnn_root, preload=PRELOAD, results=RESULTS)


def by_content(
    target: Union[Callable[..., Any], str],
    *args: Any,
    construct: Optional[bool] = None,
    libraries: tuple[str, ...] = DEFAULT_LIBRARIES,
    live: bool = False,
    returnn_root: Any = None,
    computation: Optional[Inputs] = None,
    **kwargs: Any,
) -> ByContent:
    """A marker for ``target`` that hashes by its code: a function, a class or a ``functools.partial`` of one, or its
    name as ``"package.module:Qualified.name"`` (then the manager does not import it, nor torch). Further ``args``
    and ``kwargs`` make it a partial. The build constructs the model on the ``meta`` device if ``construct`` (None:
    if the target is a class or has arguments), else only imports it; ``libraries`` are the top-level packages
    identified by commit or version instead of by their files. The written config imports the code from the
    snapshots of what was hashed; ``live=True`` imports the setup's code as it is when the job runs (said in the log,
    since that may no longer be the code the hash names). ``returnn_root`` (a directory or a ``tk.Path``): the RETURNN
    the jobs run, if not the manager's (MiniReturnn for i6's PyTorch setups): the build imports it first, so that the
    code is recorded with the RETURNN it runs with. ``computation`` (``Inputs.of(("B", "T", 80), T=(16, 3000))``:
    the tensors its forward takes): hash the model by what it computes where the build can prove that (its forward
    captured in eval and train mode over these shapes, its initial parameters), by its code where not (said in the
    log); see docs/guide/computation-hash.md."""
    if isinstance(target, functools.partial):
        return by_content(
            target.func,
            *target.args,
            *args,
            construct=construct,
            libraries=libraries,
            live=live,
            returnn_root=returnn_root,
            computation=computation,
            **{**target.keywords, **kwargs},
        )
    if isinstance(target, str):
        module, colon, qualname = target.partition(":")
        if not (colon and module and qualname):
            raise ValueError(f"by_content({target!r}): name it as 'package.module:Qualified.name'")
    else:
        module, qualname = target.__module__, target.__qualname__
        if "<locals>" in qualname or module == "__main__":
            raise ValueError(
                f"by_content({module}.{qualname}): a build imports it by name; define it at module level of a "
                "module in recipe/"
            )
    if live:
        logging.warning(
            f"by_content({module}.{qualname}, live=True): its jobs import the setup's code as it is when they run, "
            "which may no longer be the code their hash names"
        )
    root = None if returnn_root is None else os.path.abspath(str(returnn_root))  # (a tk.Path: its path)
    return ByContent(module, qualname, args, kwargs, construct, libraries, live, root, computation)

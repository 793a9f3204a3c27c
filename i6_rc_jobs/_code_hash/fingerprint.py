"""What a model's code is: the normalized code of every module of the setup that importing and constructing it
loaded, and the identities of the pinned libraries it loaded (a git checkout's commit, else the version), never
their files. Made in a build process (:mod:`.record`), compared in the manager."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from i6_rc_jobs._code_hash.normalize import DUMP_FORMAT
from i6_rc_jobs._computation.fingerprint import ComputationFingerprint

#: Top-level packages whose files are not hashed, only their identity (a checkout's commit, else the version): the
#: rwth-i6 projects a setup pins by commit, and the frameworks. The other installed packages of the Python (stdlib,
#: site-packages) are neither hashed nor identified.
DEFAULT_LIBRARIES = ("returnn", "i6_models", "returnn_common", "torch", "numpy")
#: The tools a build runs in, which the model's computation does not depend on: neither hashed nor identified.
TOOLS = ("sisyphus", "i6_core", "i6_rc_jobs")
#: What a config option that construction looked up and the job's config does not set reads as.
NOT_SET = "not set"


@dataclass(frozen=True)
class CodeFingerprint:
    """The code a reference runs: ``modules`` maps each setup module loaded to its file, the digest of its normalized
    code, the digests of its definitions, the SHA-256 of its source as read (its snapshot, :mod:`.snapshots`) and
    whether it is a package; ``libraries`` maps each pinned library loaded to its identity; ``absent`` are the modules
    the setup's code imports that did not import where the code was recorded (the job sees them absent too); ``files``
    the other files it read and the setup's modules that have no source (path -> SHA-256; the job checks them);
    ``env`` the environment variables the setup's code read (name -> SHA-256 of the value, None: not set; the job
    checks them); ``library_files`` the files each library not identified by a released version loaded (its package
    directory's relative path -> SHA-256; the job checks them, its identity in the digest stands for them);
    ``config_read`` the options of the RETURNN config that construction looked up (name -> the value's code, or
    :data:`NOT_SET`)."""

    reference: str
    constructed: bool
    modules: dict[str, dict[str, Any]]
    libraries: dict[str, str]
    dump_format: str = DUMP_FORMAT
    absent: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, Optional[str]] = field(default_factory=dict)
    library_files: dict[str, dict[str, str]] = field(default_factory=dict)
    config_read: dict[str, str] = field(default_factory=dict)
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        what: dict[str, Any] = {
            "format": self.dump_format,
            "reference": self.reference,
            "constructed": self.constructed,
            "modules": {name: module["digest"] for name, module in self.modules.items()},
            "libraries": self.libraries,
        }
        if self.absent:  # (keys only where there are such: the digests of code without them stay as they were)
            what["absent"] = sorted(self.absent)
        if self.files:
            what["files"] = self.files
        if self.env:
            what["env"] = self.env
        if self.config_read:
            what["config_read"] = self.config_read
        data = json.dumps(what, sort_keys=True).encode()
        object.__setattr__(self, "digest", hashlib.sha256(data).hexdigest())

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The fields added since a fingerprint was pickled with its job take their defaults (its digest is kept)."""
        self.__dict__.update({"files": {}, "env": {}, "library_files": {}, "config_read": {}, **state})

    def _sis_hash(self) -> bytes:
        return self.digest.encode()

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "constructed": self.constructed,
            "modules": self.modules,
            "libraries": self.libraries,
            "dump_format": self.dump_format,
            "absent": list(self.absent),
            "files": self.files,
            "env": self.env,
            "library_files": self.library_files,
            "config_read": self.config_read,
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CodeFingerprint":
        return cls(  # (older records have none of the keys after dump_format)
            data["reference"],
            data["constructed"],
            data["modules"],
            data["libraries"],
            data["dump_format"],
            tuple(data.get("absent", ())),
            data.get("files", {}),
            data.get("env", {}),
            data.get("library_files", {}),
            data.get("config_read", {}),
        )

    def changes(self, now: "CodeFingerprint") -> Iterator[str]:
        """What changed from this fingerprint to ``now``, a line each: modules (with their file and the definitions
        that changed), libraries, the Python's syntax tree format; nothing if the digests are equal."""
        if self.digest == now.digest:
            return
        if self.dump_format != now.dump_format:
            yield f"syntax trees of another Python: {self.dump_format} -> {now.dump_format}"
        if (self.reference, self.constructed) != (now.reference, now.constructed):
            yield f"reference: {self.reference} -> {now.reference}"
        for name in sorted(set(self.modules) | set(now.modules)):
            before, after = self.modules.get(name), now.modules.get(name)
            if before is None and after is not None:
                yield f"module {name}: newly loaded ({after['file']})"
            elif after is None and before is not None:
                yield f"module {name}: no longer loaded ({before['file']})"
            elif before is not None and after is not None and before["digest"] != after["digest"]:
                yield f"module {name} ({after['file']}): {_module_change(before, after)}"
        for path in sorted(set(self.files) | set(now.files)):
            if self.files.get(path) != now.files.get(path):
                how = (
                    "newly read" if path not in self.files else "no longer read" if path not in now.files else "changed"
                )
                yield f"file {path}: {how}"
        for name in sorted(set(self.env) | set(now.env)):
            if self.env.get(name, "") != now.env.get(name, ""):
                yield f"environment variable {name}: {_env_change(self.env.get(name, ''), now.env.get(name, ''))}"
        for name in sorted(set(self.config_read) | set(now.config_read)):
            if self.config_read.get(name) != now.config_read.get(name):
                was, is_now = (side.config_read.get(name, "not read") for side in (self, now))
                yield f"config option {name!r} read in construction: {was} -> {is_now}"
        for name in sorted(set(self.absent) ^ set(now.absent)):
            yield f"module {name}: {'now imports' if name in self.absent else 'no longer imports'}"
        for name in sorted(set(self.libraries) | set(now.libraries)):
            if self.libraries.get(name) != now.libraries.get(name):
                yield f"library {name}: {self.libraries.get(name) or 'not loaded'} -> {now.libraries.get(name) or 'not loaded'}"


#: Why construction counts by its code in a marker hashed by computation (:mod:`.computed`).
CONSTRUCTION = "construction, read by code that counts"


@dataclass(frozen=True)
class ComputedCode:
    """What a build records of a marker hashed by computation: its fingerprint (None where the capture was refused,
    ``refused`` saying why), the definitions that count by their code (``module:qualname`` -> why) and the digest
    (None where refused: the code fingerprint's then counts)."""

    fingerprint: Optional[ComputationFingerprint]
    refused: Optional[str] = None
    by_code: dict[str, str] = field(default_factory=dict)
    digest: Optional[str] = None

    def summary(self) -> str:
        """One line for the log: how the marker is hashed."""
        if self.fingerprint is None:
            return f"hashed by its code, not by what it computes: {self.refused}"
        if not self.by_code:
            return "hashed by what it computes"
        names = sorted(self.by_code, key=lambda name: (self.by_code[name].startswith(CONSTRUCTION), name))
        shown = ", ".join(f"{name} ({self.by_code[name]})" for name in names[:3])
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        return f"hashed by what it computes, and by the code of {shown}{more}"


@dataclass(frozen=True)
class RecordedCode:
    """What a code build returns: the fingerprint, the sources it was made of (module name -> bytes as read), which
    the manager keeps as snapshots before the fingerprint is used (the bytes are not pickled with jobs), and for a
    marker hashed by computation, its capture."""

    fingerprint: CodeFingerprint
    sources: dict[str, bytes]
    #: How a marker hashed by computation hashes (:mod:`.computed`); None for the others.
    computed: Optional[ComputedCode] = None


def _env_change(before: Optional[str], after: Optional[str]) -> str:
    """How a variable's reading changed ("": not read; None: read, not set; else the digest of its value)."""
    if before == "":
        return "newly read"
    if after == "":
        return "no longer read"
    return "now set" if before is None else "no longer set" if after is None else "its value changed"


def _module_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What changed in a module: its definitions that changed, and those that now count or no longer count (the
    functions and classes the reference reaches, where both records name them)."""
    narrowed = before.get("counted") is not None and after.get("counted") is not None
    came = sorted(set(after["counted"]) - set(before["counted"])) if narrowed else []
    went = sorted(set(before["counted"]) - set(after["counted"])) if narrowed else []
    defs = [name for name in _changed_defs(before["defs"], after["defs"]) if name.partition(".")[0] not in came + went]
    said = [f"{', '.join(defs) or 'its code'} changed"] if defs or not (came or went) else []
    said += [f"now counted: {', '.join(came)}"] if came else []
    said += [f"no longer counted: {', '.join(went)}"] if went else []
    return "; ".join(said)


def _changed_defs(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The definitions that changed, came or went; a class whose methods changed is named by those methods only."""
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    methods = {name.partition(".")[0] for name in changed if "." in name}
    return [name for name in changed if name not in methods]

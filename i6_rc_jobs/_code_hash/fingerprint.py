"""What a model's code is: the normalized code of every module of the setup that importing and constructing it
loaded, and the identities of the pinned libraries it loaded (a git checkout's commit, else the version), never
their files. Made in a build process (:mod:`.record`), compared in the manager."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from i6_rc_jobs._code_hash.normalize import DUMP_FORMAT

#: Top-level packages whose files are not hashed, only their identity (a checkout's commit, else the version): the
#: rwth-i6 projects a setup pins by commit, and the frameworks. The other installed packages of the Python (stdlib,
#: site-packages) are neither hashed nor identified.
DEFAULT_LIBRARIES = ("returnn", "i6_models", "returnn_common", "torch", "numpy")
#: The tools a build runs in, which the model's computation does not depend on: neither hashed nor identified.
TOOLS = ("sisyphus", "i6_core", "i6_rc_jobs")


@dataclass(frozen=True)
class CodeFingerprint:
    """The code a reference runs: ``modules`` maps each setup module loaded to its file, the digest of its normalized
    code, the digests of its definitions, the SHA-256 of its source as read (its snapshot, :mod:`.snapshots`) and
    whether it is a package; ``libraries`` maps each pinned library loaded to its identity; ``absent`` are the modules
    the setup's code imports that did not import where the code was recorded (the job sees them absent too); ``files``
    the other files it read (path -> SHA-256; the job checks them)."""

    reference: str
    constructed: bool
    modules: dict[str, dict[str, Any]]
    libraries: dict[str, str]
    dump_format: str = DUMP_FORMAT
    absent: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
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
        data = json.dumps(what, sort_keys=True).encode()
        object.__setattr__(self, "digest", hashlib.sha256(data).hexdigest())

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
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CodeFingerprint":
        absent, files = tuple(data.get("absent", ())), data.get("files", {})  # (older records have neither)
        return cls(
            data["reference"],
            data["constructed"],
            data["modules"],
            data["libraries"],
            data["dump_format"],
            absent,
            files,
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
                defs = _changed_defs(before["defs"], after["defs"])
                yield f"module {name} ({after['file']}): {', '.join(defs) or 'its code'} changed"
        for path in sorted(set(self.files) | set(now.files)):
            if self.files.get(path) != now.files.get(path):
                how = (
                    "newly read" if path not in self.files else "no longer read" if path not in now.files else "changed"
                )
                yield f"file {path}: {how}"
        for name in sorted(set(self.absent) ^ set(now.absent)):
            yield f"module {name}: {'now imports' if name in self.absent else 'no longer imports'}"
        for name in sorted(set(self.libraries) | set(now.libraries)):
            if self.libraries.get(name) != now.libraries.get(name):
                yield f"library {name}: {self.libraries.get(name) or 'not loaded'} -> {now.libraries.get(name) or 'not loaded'}"


@dataclass(frozen=True)
class RecordedCode:
    """What a code build returns: the fingerprint, and the sources it was made of (module name -> bytes as read), which
    the manager keeps as snapshots before the fingerprint is used (the bytes are not pickled with jobs)."""

    fingerprint: CodeFingerprint
    sources: dict[str, bytes]


def _changed_defs(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The definitions that changed, came or went; a class whose methods changed is named by those methods only."""
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    methods = {name.partition(".")[0] for name in changed if "." in name}
    return [name for name in changed if name not in methods]

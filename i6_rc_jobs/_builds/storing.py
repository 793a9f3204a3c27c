"""What a finished build leaves: its result, taken only as the bytes its build process vouched for, stored as a
signed entry where the cache can take one, or the log of its failure; and where builds run when the cache cannot be
written."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from i6_rc_jobs._builds import job_paths
from i6_rc_jobs._builds.call import Call
from i6_rc_jobs._builds.errors import BuildError, tail
from i6_rc_jobs._builds.json_records import Deps, EntryDeps, NewEntry
from i6_rc_jobs._builds.server_link import Ended, ServerLink
from i6_rc_jobs._builds.store import Store, say_unwritable, sha256_hex


def cache_writable(store: Store) -> bool:
    """Whether the cache can take an entry; if not (a full disk, a directory this user may not write), builds run
    without it, said once per cache and process, naming the path and the error."""
    try:
        probe = store.partial("probe")
        try:
            (probe / "probe").write_bytes(bytes(4096))
            store.lock("probe").parent.mkdir(parents=True, exist_ok=True)
        finally:
            shutil.rmtree(probe, ignore_errors=True)
    except OSError as e:
        say_unwritable(store.root, e)
        return False
    return True


def scratch() -> Path:
    """Where builds run when the cache cannot be written: this user's directory in the temporary directory."""
    return Path(tempfile.gettempdir()) / f"i6_rc_jobs-builds-{os.getuid()}"


def keep_log(store: Store, call: Call, partial: Path) -> Path:
    """The log of a failed build, kept as the call's ``failed/`` log."""
    failed = store.failed_log(call.key)
    failed.parent.mkdir(parents=True, exist_ok=True)
    if (partial / "log").exists():
        shutil.move(partial / "log", failed)
    return failed


def finish(
    store: Store, call: Call, partial: Path, ended: Ended, server: ServerLink, keep: bool, replaced: list[Path]
) -> Any:
    """The result of a build that ended, stored as an entry (replacing the variants ``replaced``) if ``keep``, the
    build succeeded and no dependency changed while it ran; its files are used only if they are the bytes whose
    digests the build process sent."""
    if ended.status != 0:
        failed = keep_log(store, call, partial)
        status = ended.status
        how = f"was killed by signal {-status}" if status < 0 else f"failed (exit status {status})"
        raise BuildError(
            f"the build of {call.name}({call.description}) {how}; the end of its output ({failed}):\n" + tail(failed)
        )
    if not (partial / "deps.json").exists():
        raise BuildError(
            f"the build of {call.name}({call.description}) ended with exit status 0 but wrote no result (the "
            f"builder or code it called ended the process, e.g. with os._exit(0)); its output: "
            f"{keep_log(store, call, partial)}"
        )
    result, deps_data = (partial / "result.pickle").read_bytes(), (partial / "deps.json").read_bytes()
    for name, data in [("result.pickle", result), ("deps.json", deps_data)]:
        if sha256_hex(data) != ended.digests.get(name):
            raise BuildError(
                f"the build of {call.name}({call.description}) left a {partial / name} that is not the one its "
                "build process wrote (changed by another process): not used; make sure no one else can write "
                f"{store.root}"
            )
    deps: Deps = json.loads(deps_data)
    (partial / "deps.json").unlink()
    if keep and not (deps["changed_while_building"] or server.changed_while_loading):
        depended = EntryDeps(
            files=deps["files"],
            probes=deps["probes"],
            listings=deps["listings"],
            modules=deps["modules"],
            env=deps["env"],
        )
        try:
            entry = NewEntry(
                builder=call.name,
                arguments=call.description,
                key=call.key,
                base=server.base_digest,
                deps=store.put_deps(depended),
                recorded_ns=deps["recorded_ns"],
                sis_hash=deps["sis_hash"],
            )
            store.put(call.key, partial, entry, result, (partial / "call.pickle").read_bytes())
        except OSError as e:  # a disk that filled up while the build ran: the result is still good
            say_unwritable(store.root, e)
        else:
            for variant in replaced:
                store.remove(variant)
    return job_paths.loads(result, call.paths)

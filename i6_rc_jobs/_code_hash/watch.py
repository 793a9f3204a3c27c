"""``watch_code(job, get_model, train_step)``: the job keeps its name hash, and the fingerprint of the code its
config names is kept beside it, in ``code-fingerprint.json`` of its directory. A manager start says in one line per
job which jobs' model code changed since they were made, naming the modules and definitions.

A job is "made" when its directory is set up: the fingerprint the config load took is written then, when the
manager that set the job up ends (or at the next config load, for a job set up before it was watched: said so)."""

from __future__ import annotations

import atexit
import json
import logging
import os
from typing import Any

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._code_hash.fingerprint import CodeFingerprint
from i6_rc_jobs._code_hash.marker import ByContent, by_content, snapshot_diff

#: The file in a job's directory that holds the fingerprints of its code when it was made.
RECORD = "code-fingerprint.json"

#: The watched jobs not yet set up at their config load: (job, markers), recorded at exit if set up by then.
_unrecorded: list[tuple[Any, dict[str, ByContent]]] = []


def watch_code(job: Any, *targets: Any) -> list[str]:
    """Keeps the fingerprints of ``targets`` (functions, classes, partials, ``"module:name"`` strings or
    :func:`by_content` markers) beside ``job``, and returns (and logs as a warning) the line saying what of them
    changed since the job was made; an empty list if nothing did or the job has no record yet."""
    markers = {
        repr(marker): marker
        for marker in (target if isinstance(target, ByContent) else by_content(target) for target in targets)
    }
    directory = job._sis_path()
    record = os.path.join(directory, RECORD)
    if os.path.isfile(record):
        lines = changed_lines(load_record(record), {name: marker.fingerprint() for name, marker in markers.items()})
        if lines:
            line = f"model code of {job._sis_id()} changed since it was made: {'; '.join(lines)}"
            logging.warning(line)
            return [line]
        return []
    if os.path.isdir(directory):
        logging.info("code fingerprint of %s recorded now: it was set up before its code was watched", job._sis_id())
        write_record(record, markers)
    else:
        if not _unrecorded:
            atexit.register(record_set_up)
        _unrecorded.append((job, markers))
    return []


def record_set_up() -> None:
    """Writes the fingerprints of the watched jobs that were set up since their config load (run at exit)."""
    while _unrecorded:
        job, markers = _unrecorded.pop()
        record = os.path.join(job._sis_path(), RECORD)
        if os.path.isdir(job._sis_path()) and not os.path.exists(record):
            write_record(record, markers)


def write_record(path: str, markers: dict[str, ByContent]) -> None:
    """The markers' fingerprints, each with the root of its code's snapshots (the code of when the job was made)."""
    data = {name: {**marker.fingerprint().to_json(), "snapshots": marker.snapshots} for name, marker in markers.items()}
    write_atomically(path, json.dumps(data, indent=1, sort_keys=True).encode())


def load_record(path: str) -> dict[str, CodeFingerprint]:
    with open(path) as f:
        return {name: CodeFingerprint.from_json(data) for name, data in json.load(f).items()}


def record_diff(before: str, after: str) -> list[str]:
    """The lines that changed in the code of each target of two records (the diffs of their snapshots), where both
    name their snapshots (records written before snapshots were do not)."""
    records = []
    for path in (before, after):
        with open(path) as f:
            records.append(json.load(f))
    lines = []
    for name in sorted(set(records[0]) & set(records[1])):
        roots = [record[name].get("snapshots") for record in records]
        if roots[0] and roots[1]:
            old, new = (CodeFingerprint.from_json(record[name]) for record in records)
            lines += snapshot_diff((roots[0], old), (roots[1], new))
    return lines


def changed_lines(before: dict[str, CodeFingerprint], now: dict[str, CodeFingerprint]) -> list[str]:
    """``target: change, change`` for each target whose code changed, came or went."""
    lines = []
    for name in sorted(set(before) | set(now)):
        if name not in before or name not in now:
            lines.append(f"{name}: {'newly watched' if name not in before else 'no longer watched'}")
        elif before[name].digest != now[name].digest:
            lines.append(f"{name}: {', '.join(before[name].changes(now[name]))}")
    return lines

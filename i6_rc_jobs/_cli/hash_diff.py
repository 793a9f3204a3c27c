"""``python -m i6_rc_jobs hash-diff A B``: why two jobs or configs hash differently in Sisyphus."""

from __future__ import annotations

import argparse
import gzip
import os
import pickle
import stat
import sys
from typing import Any, Optional

from i6_rc_jobs._cli.command import ExitStatus, command_parser
from i6_rc_jobs._cli.setup_paths import importable


class LoadError(Exception):
    """An input that is no job and no pickle: said in one line, apart from "the hashes differ"."""


def untrusted(path: str) -> Optional[str]:
    """Why ``path`` is not safe to unpickle (unpickling runs whatever code the file names), or None: what is loaded,
    and for a job directory the directory too, must be owned by the invoking user and not writable by others (the
    checks ssh makes of its keys). Links are judged by what they lead to."""
    from sisyphus import global_settings as gs

    checked = [path]
    if os.path.isdir(path):
        save = os.path.join(path, gs.JOB_SAVE)
        checked.append(save if os.path.isfile(save) else os.path.join(path, gs.JOB_FINISHED_ARCHIVE))
    for item in checked:
        try:
            info = os.stat(item)
        except OSError:
            continue  # missing: loading says so
        if info.st_uid != os.geteuid():
            return f"{item} is owned by uid {info.st_uid}, not by you (uid {os.geteuid()})"
        if info.st_mode & stat.S_IWOTH:
            return f"{item} is writable by others"
    return None


def setup_imports() -> Optional[str]:
    """Make Sisyphus and the recipes importable as ``sis`` does from a setup directory, or say in one line what is
    missing: Sisyphus from ``tools/sisyphus`` (where ``tools/sisyphus/sis`` finds it, being its script's directory)
    or the directory of a ``sis`` link, if it is not installed; then importing Sisyphus reads ``settings.py`` and
    installs its finder of ``recipe/`` and ``config/`` (``IMPORT_PATHS``), as for ``sis``."""
    link = os.path.realpath("sis")
    places = (os.path.join("tools", "sisyphus"), os.path.dirname(link) if os.path.isfile(link) else None)
    if not importable("sisyphus", places):
        return (
            f"cannot import sisyphus (not installed, and no tools/sisyphus in {os.getcwd()}): run it from the "
            "setup directory, or put Sisyphus on PYTHONPATH (PYTHONPATH=<setup>/tools/sisyphus)"
        )
    try:
        import sisyphus  # noqa: F401 (its RecipeFinder and the settings, as sis has them)
        import i6_core.returnn.config  # noqa: F401 (what the comparison needs besides Sisyphus)
    except ModuleNotFoundError as e:
        return missing(e, "hash-diff")
    except Exception as e:  # e.g. settings.py failing
        return f"importing Sisyphus and its settings.py failed: {type(e).__name__}: {e}"
    return None


def missing(e: ModuleNotFoundError, who: str) -> str:
    """One line for a module that cannot be imported, and how to make it importable."""
    return (
        f"{who} needs the module {e.name!r}, which cannot be imported here: run it from the setup directory (where "
        f"sis finds recipe/{str(e.name).partition('.')[0]}), or put the directory holding it on PYTHONPATH"
    )


def load(path: str) -> Any:
    """A Sisyphus job directory (its job.save, or the finished archive) or a pickle file, gzipped or not."""
    try:
        if os.path.isdir(path) or path.endswith(".tar.gz"):
            from sisyphus.toolkit import load_job

            return load_job(path)
        with open(path, "rb") as f:
            head = f.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as f:
            return pickle.load(f)
    except ModuleNotFoundError as e:
        raise LoadError(f"{path}: {missing(e, 'it')}") from e
    except Exception as e:
        raise LoadError(f"{path}: cannot be loaded as a job or a pickle: {type(e).__name__}: {e}") from e


EXAMPLE = "alias/a alias/b"


class Exit(ExitStatus):
    IDENTICAL = 0, "the hashes are identical"
    DIFFERENT = 1, "the hashes differ (the lines say where)"
    UNUSABLE = 2, "an input could not be loaded or is not trusted, or a module it needs cannot be imported"


def parser() -> argparse.ArgumentParser:
    parser = command_parser(
        __name__,
        Exit,
        EXAMPLE,
        "Print why the Sisyphus hashes of A and B differ, as paths and values, and which modules and functions of "
        "the model code changed (by_content values; job directories that watch_code keeps a code fingerprint "
        "beside), or 'identical'. The inputs are "
        "unpickled, which runs whatever code they name: use only files you trust. Inputs not owned by you or "
        "writable by others (a job directory: the directory and its job.save) are refused unless --trust is given.",
    )
    parser.add_argument(
        "a",
        help="job directory, job.save, or pickled ReturnnConfig, ReturnnCommonSerializer or ReturnnConfigSerializer",
    )
    parser.add_argument("b", help="the same kinds as A")
    parser.add_argument(
        "--trust", action="store_true", help="load inputs not owned by you or writable by others (they can run code)"
    )
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    problem = setup_imports()
    if problem is not None:
        print(f"hash-diff: {problem}", file=sys.stderr)
        return Exit.UNUSABLE
    if not args.trust:
        for path in (args.a, args.b):
            reason = untrusted(path)
            if reason is not None:
                print(f"hash-diff: {reason}: unpickling it could run code; pass --trust to load it", file=sys.stderr)
                return Exit.UNUSABLE

    from sisyphus.hash import sis_hash_helper

    from i6_rc_jobs._cli.explain import explain

    try:
        a, b = load(args.a), load(args.b)
    except LoadError as e:
        print(f"hash-diff: {e}", file=sys.stderr)
        return Exit.UNUSABLE
    lines = list(explain(a, b))
    if not lines and sis_hash_helper(a) != sis_hash_helper(b):
        lines = ["the hashes differ, but no part that differs was found (a hash() that hashes otherwise?)"]
    code = code_lines(args.a, args.b)
    print("\n".join(lines + code) if lines or code else "identical")
    return Exit.DIFFERENT if lines or code else Exit.IDENTICAL


def code_lines(a: str, b: str) -> list[str]:
    """The changes of the code fingerprints kept beside two job directories (``watch_code``), if both have them, with
    the diff of the code's snapshots."""
    from i6_rc_jobs._code_hash.watch import RECORD, changed_lines, load_record, record_diff

    records = [os.path.join(path, RECORD) for path in (a, b)]
    if not all(os.path.isfile(record) for record in records):
        return []
    lines = [f"code of {line}" for line in changed_lines(load_record(records[0]), load_record(records[1]))]
    return lines + [f"    {line}" for line in record_diff(*records)] if lines else []

"""Running git for the cache: never prompting, failing with git's own message and the repository it was about."""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Optional

from .errors import VersionedImportError

#: ``git log`` arguments that print a commit as ``<full commit> <committer date YYYYMMDDHHMMSS>`` (in the commit's
#: own time zone, as RETURNN dates versions): what a version's ``<date>-<commit>`` is checked against.
COMMIT_AND_DATE = ("log", "-1", "--format=%H %cd", "--date=format:%Y%m%d%H%M%S")
#: No password prompt can hang a Sisyphus manager or a cluster job.
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}


def git(*args: str, cwd: Optional[str] = None, input: Optional[str] = None, what: str) -> str:
    """Runs ``git args`` (with ``input`` on stdin) and returns its stdout; ``what`` says what it was for (e.g. the
    repository and version)."""
    done = run_git(*args, cwd=cwd, input=input, what=what)
    if done.returncode != 0:
        raise VersionedImportError(f"{what}: git {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def run_git(
    *args: str, cwd: Optional[str] = None, input: Optional[str] = None, what: str
) -> subprocess.CompletedProcess:
    """Runs ``git args``, whatever its exit status; only a missing git is an error. Bytes that are not UTF-8 (in a
    diff) come through as surrogate escapes, so that ``.encode("utf-8", "surrogateescape")`` gives them back."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env={**os.environ, **_ENV},
            input=input,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            check=False,
        )
    except FileNotFoundError:
        raise VersionedImportError(f"{what}: git is not installed (needed once per version, to fetch it)") from None


def extract(git_dir: str, commit: str, target: str, what: str) -> None:
    """Writes the files of ``commit`` into the (new, empty) directory ``target``, as ``git archive`` gives them, with
    the modes the umask gives and the group the directory gives (tar run by root would otherwise keep the archive's
    owner and modes, and git's own umask 002)."""
    with tempfile.TemporaryFile() as errors:  # not a pipe: git could block on it while tar waits for the archive
        archive = subprocess.Popen(
            ["git", "-c", "tar.umask=user", "--git-dir", git_dir, "archive", "--format=tar", commit],
            stdout=subprocess.PIPE,
            stderr=errors,
            env={**os.environ, **_ENV},
        )
        untar = subprocess.run(
            ["tar", "-x", "--no-same-owner", "--no-same-permissions", "-C", target],
            stdin=archive.stdout,
            capture_output=True,
            check=False,
        )
        assert archive.stdout is not None  # stdout=PIPE
        archive.stdout.close()
        status = archive.wait()
        errors.seek(0)
        archive_error = errors.read().decode(errors="replace").strip()
    if status != 0 or untar.returncode != 0:
        problem = archive_error or untar.stderr.decode(errors="replace").strip()
        raise VersionedImportError(f"{what}: extracting commit {commit} failed: {problem}")

"""Running git for the cache: never prompting, failing with git's own message and the repository it was about."""

from __future__ import annotations

import os
import subprocess
from typing import Optional

from i6_rc_jobs._imports import proof
from i6_rc_jobs._imports.errors import VersionedImportError

#: ``git log`` arguments that print a commit as ``<full commit> <committer date YYYYMMDDHHMMSS>`` (in the commit's
#: own time zone, as RETURNN dates versions): what a version's ``<date>-<commit>`` is checked against.
COMMIT_AND_DATE = ("log", "-1", "--format=%H %cd", "--date=format:%Y%m%d%H%M%S")
#: No password prompt can hang a Sisyphus manager or a cluster job.
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
#: Settings a repository's own config or files cannot undo, so that git runs nothing it names.
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.attributesFile=/dev/null", "-c", "core.fsmonitor=false")
#: What ``git clone --bare`` writes into a clone's config, and nothing else may be there.
_CLONE_CONFIG = (
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "remote.origin.url",
)


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
    return _run(args, cwd, input, what, text=True)


def _run(args: tuple[str, ...], cwd: Optional[str], input, what: str, text: bool) -> subprocess.CompletedProcess:
    """``git args`` with :data:`_SAFE`: no hook, attributes file or file-system monitor runs anything."""
    try:
        return subprocess.run(
            ["git", *_SAFE, *args],
            cwd=cwd,
            env={**os.environ, **_ENV},
            input=input,
            capture_output=True,
            text=text,
            errors="surrogateescape" if text else None,
            check=False,
        )
    except FileNotFoundError:
        raise VersionedImportError(f"{what}: git is not installed (needed once per version, to fetch it)") from None


def check_config(git_dir: str, url: str, what: str) -> None:
    """Refuses a clone in the shared cache whose ``config`` has more than a clone writes: another user of the cache
    could otherwise make git run a command as this one (a filter, a hook, ``core.fsmonitor``, ``core.sshCommand``,
    an ``include.path``, ...) or fetch from elsewhere."""
    listed = _run(("config", "--file", f"{git_dir}/config", "--list", "-z"), None, None, what, text=True)
    if listed.returncode != 0:
        raise VersionedImportError(f"{what}: the config of {git_dir} cannot be read: {listed.stderr.strip()}")
    for entry in filter(None, listed.stdout.split("\0")):
        key, _, value = entry.partition("\n")
        if key not in _CLONE_CONFIG or (key == "remote.origin.url" and value != url):
            raise VersionedImportError(
                f"{what}: {git_dir}/config sets {key} (a clone of the cache has only {', '.join(_CLONE_CONFIG)}, "
                f"the url {url}): someone may be trying to run code as you; remove {git_dir} to fetch anew"
            )


def extract(git_dir: str, commit: str, target: str, what: str) -> tuple[bytes, bytes]:
    """Writes the files of ``commit`` into the (new, empty) directory ``target``, exactly the blobs git stores (no
    filter or attribute applies), with the modes the umask gives and the group the directory gives; a submodule is
    an empty directory. Returns the commit object and the tree's listing (see :mod:`.proof`)."""
    commit_object = _bytes(("--git-dir", git_dir, "cat-file", "commit", commit), None, what)
    listing_data = _bytes(("--git-dir", git_dir, "ls-tree", "-r", "-z", "--full-tree", commit), None, what)
    listing = proof.parse_listing(listing_data)
    blobs = [oid for mode, oid in listing.values() if mode != "160000"]
    contents = _bytes(("--git-dir", git_dir, "cat-file", "--batch"), "\n".join(blobs).encode() + b"\n", what)
    at = 0
    for path, (mode, _) in listing.items():
        if any(part in ("", ".", "..", ".git") for part in path.split("/")):
            raise VersionedImportError(f"{what}: commit {commit} has the path {path!r}, which git would not check out")
        file = os.path.join(target, *path.split("/"))
        os.makedirs(os.path.dirname(file), exist_ok=True)
        if mode == "160000":
            os.mkdir(file)
            continue
        header_end = contents.index(b"\n", at)
        size = int(contents[at:header_end].split()[2])
        data, at = contents[header_end + 1 : header_end + 1 + size], header_end + 2 + size
        if mode == "120000":
            os.symlink(data, os.fsencode(file))
            continue
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if mode == "100755" else 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return commit_object, listing_data


def _bytes(args: tuple[str, ...], input: Optional[bytes], what: str) -> bytes:
    done = _run(args, None, input, what, text=False)
    if done.returncode != 0:
        raise VersionedImportError(f"{what}: git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout

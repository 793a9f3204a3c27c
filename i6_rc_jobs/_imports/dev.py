"""Development mode: ``import_(repo, path, None)`` imports a live working copy instead of a version, and says what
it used: the commit to pin, every change (staged, unstaged, untracked and git-ignored files: any file can be imported
or run), and a patch of them, saved, so that a run made with it can be reproduced."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._imports import git
from i6_rc_jobs._imports.errors import VersionedImportError

#: Where the working copies are: ``$I6_RC_IMPORTS_DEV/<host>/<owner>/<name>``, default ``<cache>/dev``.
ENV = "I6_RC_IMPORTS_DEV"
logger = logging.getLogger("i6_rc_jobs._imports")


#: The patch in one form whatever the user's git settings (prefixes, context, algorithm, renames, external tools,
#: abbreviation, order), so that the manager and its workers name one working copy alike.
_DIFF = (
    "--binary",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--no-renames",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--unified=3",
    "--inter-hunk-context=0",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "--full-index",
    "-O/dev/null",
)
#: Settings of the user's that would change the patch and that no diff option undoes.
_DIFF_CONFIG = ("-c", "core.quotePath=true", "-c", "diff.suppressBlankEmpty=false")
#: Bytecode Python writes into the working copy when another program imports from it: the import never reads it (see
#: :mod:`.bytecode`). A ``.pyc`` elsewhere is imported where its source is missing, so it counts.
_BYTECODE = re.compile(r"(^|/)__pycache__/")


def dev_root(cache: Path) -> Path:
    return Path(os.environ.get(ENV) or cache / "dev")


def report(path: Path, patches: Path, call: str, repo: str, imported: str) -> str:
    """Logs (as a warning) what the working copy at ``path`` holds now, where it is imported (``call``, the file and
    line of the ``import_(repo, imported, None)`` call) and the edit of that call that pins the commit instead, saves
    its changes against its commit as a patch under ``patches``, and returns the name of that state (see
    :func:`state_name`)."""
    what = f"development working copy {path}"
    commit, date, changes, patch = _state(path, what)
    version, arguments = f"{date[:8]}-{commit[:12]}", f"{_literal(repo)}, {_literal(imported)}"
    lines = [
        f"{what} is imported, not a version, at {call}",
        f"  at commit {version} (the version to pin, once the changes below are committed and pushed):",
        f"  - import_({arguments}, None)",
        f"  + import_({arguments}, {_literal(version)})",
    ]
    name = _name(commit, patch)
    if changes:
        saved = _save(patches / f"{path.name}-{name}.patch", patch)
        lines.append(f"  with changes: {'; '.join(changes)}")
        lines.append(f"  patch (git apply on {commit[:12]}): {saved}")
    else:
        lines.append("  without changes")
    logger.warning("\n".join(lines))
    return name


def state_name(path: Path) -> str:
    """``dev_<commit>_<patch digest>`` (``..._clean`` without changes): the package name of the working copy as it
    is now, so that Sisyphus hashes of its functions and classes change with its code."""
    commit, _, _, patch = _state(path, f"development working copy {path}")
    return _name(commit, patch)


def _literal(text: str) -> str:
    """``text`` as a Python string literal in double quotes, as black writes it in the user's code."""
    return json.dumps(text, ensure_ascii=False)


def _name(commit: str, patch: bytes) -> str:
    return f"dev_{commit[:12]}_{hashlib.sha256(patch).hexdigest()[:16] if patch else 'clean'}"


def _state(path: Path, what: str) -> tuple[str, str, list[str], bytes]:
    """(commit, its date, the changes as ``XY path``, the patch of all of them against the commit)."""
    cwd = str(path)
    commit, date = git.git(*git.COMMIT_AND_DATE, "HEAD", cwd=cwd, what=what).split()
    status_args = ("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional")  # every file
    entries = git.git(*status_args, cwd=cwd, what=what).split("\0")
    changes, untracked = [], []
    entries.reverse()
    while entries:
        entry = entries.pop()
        if not entry:
            continue
        status, name = entry[:2], entry[3:]
        if status[0] in "RC":  # renamed or copied: the original path follows as its own entry
            name = f"{entries.pop()} -> {name}"
        if status in ("??", "!!"):  # untracked, or ignored: the import runs ignored files all the same
            if _BYTECODE.search(name):  # written by Python importing the copy, not a change of it
                continue
            untracked.append(name)
        changes.append(f"{status.strip()} {name}")
    patch = git.git(*_DIFF_CONFIG, "diff", *_DIFF, "HEAD", cwd=cwd, what=what).encode("utf-8", "surrogateescape")
    for name in untracked:  # not in git diff; git add -N would touch the user's index
        done = git.run_git(*_DIFF_CONFIG, "diff", "--no-index", *_DIFF, "--", "/dev/null", name, cwd=cwd, what=what)
        if done.returncode not in (0, 1) or done.stderr.strip():  # 1: there are differences
            raise VersionedImportError(f"{what}: the untracked file {name!r} cannot be diffed: {done.stderr.strip()}")
        patch += done.stdout.encode("utf-8", "surrogateescape")
    return commit, date, changes, patch


def _save(path: Path, patch: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, patch)
    return path

"""Development mode: ``import_(repo, path, None)`` imports a live working copy instead of a version, and says what
it used: the commit to pin, every change (staged, unstaged, untracked), and a patch of them, saved, so that a run
made with it can be reproduced."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from . import git
from .names import Repo

#: Where the working copies are: ``$I6_RC_IMPORTS_DEV/<host>/<owner>/<name>``, default ``<cache>/dev``.
ENV = "I6_RC_IMPORTS_DEV"
logger = logging.getLogger("i6_rc_jobs.imports")


def dev_root(cache: Path) -> Path:
    return Path(os.environ.get(ENV) or cache / "dev")


def report(repo: Repo, path: Path, patches: Path) -> str:
    """Logs (as a warning) what the working copy at ``path`` holds now, saves its changes against its commit as a
    patch under ``patches``, and returns a name for that state, ``dev_<commit>_<patch digest>``: the package name
    of the working copy, so that Sisyphus hashes of its functions and classes change with its code."""
    what = f"{repo} development working copy {path}"
    commit, date = git.git(
        "log", "-1", "--format=%H %cd", "--date=format:%Y%m%d%H%M%S", "HEAD", cwd=str(path), what=what
    ).split()
    changes = git.git("status", "--porcelain=v1", "--untracked-files=all", cwd=str(path), what=what).splitlines()
    lines = [
        f"{what} is imported, not a version",
        f"  at commit {date[:8]}-{commit[:12]} (the version to pin, once the changes below are committed and pushed)",
    ]
    digest = "clean"
    if changes:
        patch = git.git("diff", "--binary", "HEAD", cwd=str(path), what=what)
        for change in changes:
            if change.startswith("?? "):  # untracked: not in git diff, and git add -N would touch the user's index
                patch += git.git(
                    "diff",
                    "--no-index",
                    "--binary",
                    "--",
                    "/dev/null",
                    change[3:],
                    cwd=str(path),
                    what=what,
                    ok_codes=(0, 1),
                )
        digest = hashlib.sha256(patch.encode()).hexdigest()[:16]
        saved = _save(patches / f"{repo.name}-{commit[:12]}-{digest}.patch", patch)
        lines.append(f"  with changes: {'; '.join(change.strip() for change in changes)}")
        lines.append(f"  patch (git apply on {commit[:12]}): {saved}")
    else:
        lines.append("  without changes")
    logger.warning("\n".join(lines))
    return f"dev_{commit[:12]}_{digest}"


def _save(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path

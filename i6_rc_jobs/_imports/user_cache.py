"""This user's own cache directories (``$XDG_CACHE_HOME/i6_rc_jobs/<name>``, default ``~/.cache/...``): what is kept
there (bytecode, proofs of versions) is trusted because no other user can write it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def user_directory(name: str) -> Optional[Path]:
    """This user's directory ``name``, made if missing; None if another user could write to it (then nothing is kept
    there, nor read)."""
    directory = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "i6_rc_jobs" / name
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = directory.stat()
    except OSError:
        return None
    return directory if status.st_uid == os.getuid() and not status.st_mode & 0o022 else None

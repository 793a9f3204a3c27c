"""Files of the user's own that are trusted because no other user can write them (kept fingerprints, module proofs,
verdicts): read only where the file and its directory are the user's, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional


class OthersCouldWrite(Exception):
    """A kept file that another user could have written: not to be trusted."""


def own_directory(st: os.stat_result) -> bool:
    """Whether only the user (or root) can replace the directory's files (as in ``/tmp``, with its sticky bit)."""
    return st.st_uid in (os.geteuid(), 0) and not (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX)


def read_own(path: Path) -> Optional[bytes]:
    """The file's bytes; None if there is none (or a link); :class:`OthersCouldWrite` if another user could have
    written it or replaced it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # none yet, or a link
        return None
    try:
        st, parent = os.fstat(fd), os.stat(path.parent)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022 or not own_directory(parent):
            raise OthersCouldWrite(
                f"{path} (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}) could be written by others"
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)

"""Writing a file so that readers see the old file or the complete new one, never a part, even after a crash."""

from __future__ import annotations

import os


def write_atomically(path: str | os.PathLike, data: bytes) -> None:
    """Writes ``data`` to a new file beside ``path``, flushes it to disk and renames it over ``path``: a killed
    writer leaves no partial file, and a machine crash right after a job finished cannot leave an empty file under
    it on a local file system (where data is written back up to 30 s after the rename is journaled). The file gets
    the mode ``open()`` would give it (0o666 less the umask), as i6_core's and Sisyphus's files do."""
    path = os.fspath(path)
    tmp = f"{path}.{os.urandom(6).hex()}.tmp"  # random: two hosts on a shared file system may share a pid
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise

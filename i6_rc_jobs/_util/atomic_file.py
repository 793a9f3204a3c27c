"""Writing a file so that readers see the old file or the complete new one, never a part, even after a crash."""

from __future__ import annotations

import contextlib
import os


def write_atomically(path: str | os.PathLike, data: bytes, mode: int = 0o666) -> None:
    """Writes ``data`` to a new file beside ``path``, flushes it to disk and renames it over ``path``: a killed
    writer leaves no partial file, and a machine crash soon after a job finished cannot leave an empty file under it
    on a local file system (where data is written back up to 30 s after the rename is journaled). The rename itself
    is not flushed: a crash may lose it, and the file is then missing, not empty (on ext4 and XFS, whose journals keep
    metadata changes in order, together with the job's finished marker, made later). The file gets the mode
    ``open()`` would give it (0o666 less the umask), as i6_core's and Sisyphus's files do, or ``mode`` less the
    umask."""
    directory, name = os.path.split(os.fspath(path))
    # Hidden, and random: two hosts on a shared file system may share a pid.
    tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
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
        with contextlib.suppress(FileNotFoundError):  # renamed already, e.g. a signal right after os.replace
            os.unlink(tmp)
        raise

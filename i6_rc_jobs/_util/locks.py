"""Locks on files that several processes, users and hosts share: the kernel drops the lock of a killed process, and
the holder writes who it is into the file, so that a wait can name it and a lock left by a process that has ended
is taken over."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from i6_rc_jobs._util.processes import alive


class LockError(Exception):
    """A lock that cannot be had: held by a process that has ended, and this user may not remove it."""


class LockTimeoutError(LockError):
    """A lock held by another process for longer than the wait allowed (the message names the holder)."""


@contextmanager
def locked(lock: Path, wait: bool = True, timeout: Optional[float] = None) -> Iterator[bool]:
    """Holds an exclusive lock on the file ``lock`` (made if missing) while the block runs; yields whether it holds it,
    which only ``wait=False`` makes False (another process holds it). The kernel drops the lock of a killed process;
    a lock that a process which has ended still holds (through a child that inherited it) is taken over by removing
    the file. Anyone who may read the file may lock it, so a wait ends after ``timeout`` seconds, with an error that
    names the holder. The holder writes who it is into the file (see :func:`holder`) and empties it when it lets go."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        f = open(lock, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            if not wait:
                yield False
                return
            _wait_for(lock, deadline, timeout)
            continue
        with contextlib.suppress(FileNotFoundError):
            if os.stat(lock).st_ino == os.fstat(f.fileno()).st_ino:
                break  # not a file taken over (removed) meanwhile
        f.close()
    try:
        f.truncate(0)
        f.write(f"{os.getpid()} {_user()} {socket.gethostname()} {time.time()}\n")
        f.flush()
        yield True
    finally:
        f.truncate(0)
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _wait_for(lock: Path, deadline: Optional[float], timeout: Optional[float]) -> None:
    """Waits a little for the lock's holder; takes over from one that has ended; refuses to wait past ``deadline``."""
    who = holder(lock)
    if who is not None and who.dead():
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass
        except PermissionError:
            raise LockError(
                f"the lock {lock} is held by {who}, which has ended, and this user may not remove it: ask its owner "
                f"to remove it (a lock others cannot remove when it is left behind is no lock to share)"
            ) from None
        return
    if deadline is not None and time.monotonic() > deadline:
        raise LockTimeoutError(
            f"waited {timeout:.0f} s for the lock {lock}, held by {who or 'a process that did not say who it is'}: "
            "end that process if it hangs"
        )
    time.sleep(0.05)


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as it wrote into the lock file."""

    pid: int
    user: str
    host: str
    since: float

    def dead(self) -> bool:
        """Whether the holder is a process of this host that has ended (its lock is then held by a process it
        started, or by none)."""
        return self.host == socket.gethostname() and not alive(self.pid)

    def __str__(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host} since {since} (user {self.user})"


def holder(lock: Path) -> Optional[Holder]:
    """Who holds the lock: as it wrote, else (a process that locked it and said nothing) the process of this host
    that the kernel lists as holding it, else None (not held, or held from another host)."""
    try:
        pid, user, host, since = lock.read_text().split()
        return Holder(int(pid), user, host, float(since))
    except (OSError, ValueError):
        pass
    try:
        status = lock.stat()
        device = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == device:
                owner = os.stat(f"/proc/{fields[4]}").st_uid
                return Holder(int(fields[4]), _user(owner), socket.gethostname(), status.st_mtime)
    except (OSError, ValueError):
        pass
    return None


def _user(uid: Optional[int] = None) -> str:
    uid = os.getuid() if uid is None else uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)

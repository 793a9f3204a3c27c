"""Whether a process of this host still runs: what a dead process left behind (a lock, a partial directory) is taken
over or removed."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True

"""Whether this manager builds a call now: under the call's lock, taken without waiting, so that two managers with the
same calls in different orders never wait for each other; a wait for another manager's lock is reported once, naming
its holder, and ends after a timeout or when the holder has ended."""

from __future__ import annotations

import contextlib
import logging
import time

from i6_rc_jobs._util.locks import holder, locked
from i6_rc_jobs._builds.call import Call
from i6_rc_jobs._builds.store import Store

#: After this long waiting for another manager's lock, the wait is reported (once per entry), naming the holder.
_SAY_AFTER_S = 2.0


class Claims:
    """The claims of one ``build_many``: when the wait for each call's lock began, and which waits were reported."""

    def __init__(self, store: Store, lock_timeout: float):
        self.store = store
        self.lock_timeout = lock_timeout
        self.waiting: dict[str, float] = {}  # call digest -> when the wait for its lock began
        self.said: set[str] = set()  # the calls whose wait was reported

    def claim(self, call: Call, stack: contextlib.ExitStack) -> bool:
        """Whether the call is to be built now: its lock taken (into ``stack``), or held by a dead process or for
        longer than ``lock_timeout`` (then it is built without the lock). A wait is reported once, naming the holder."""
        lock = self.store.lock(call.key)
        if stack.enter_context(locked(lock, wait=False)):
            return True
        what = f"{call.name}({call.description})"
        who = holder(lock)
        if who is not None and who.dead():
            logging.warning(
                "build cache: the lock %s of %s is held by %s, which has ended: taken over", lock, what, who
            )
            return True
        waited = time.monotonic() - self.waiting.setdefault(call.digest, time.monotonic())
        if waited > self.lock_timeout:
            logging.warning(
                "build cache: waited %.0f s for the lock %s of %s, held by %s: built without it",
                waited,
                lock,
                what,
                who or "another process",
            )
            return True
        if waited > _SAY_AFTER_S and call.digest not in self.said:
            self.said.add(call.digest)
            logging.warning(
                "build cache: waiting (at most %.0f s) for the lock %s of %s, held by %s",
                self.lock_timeout,
                lock,
                what,
                who or "another process",
            )
        return False

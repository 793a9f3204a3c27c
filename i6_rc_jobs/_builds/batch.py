"""One ``build_many`` in the manager: its calls looked up, and those not cached built by the build server, each under
its lock (another manager may be building it: then its result is taken), at most ``workers`` at once, the next ones
sent ahead so that one starts as soon as another ends."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Optional

from i6_rc_jobs._builds import storing
from i6_rc_jobs._builds.call import Call
from i6_rc_jobs._builds.claims import Claims
from i6_rc_jobs._builds.errors import BuildError
from i6_rc_jobs._builds.lookup import Lookup
from i6_rc_jobs._builds.recheck import keep_proofs
from i6_rc_jobs._builds.server_link import ServerLink, ServerSpec, discard, server_for
from i6_rc_jobs._builds.store import Store, write_private

#: How long a manager waits between looks at a lock another manager holds.
_POLL_S = 0.05
#: Held by the batch that uses the build servers.
_building = threading.Lock()


class Batch:
    """One ``build_many``: its lookups share one verifier and one recheck (each file, path and module name is checked
    once). ``fresh``: built anew, neither looked up nor stored."""

    def __init__(self, spec: ServerSpec, workers: int, lock_timeout: float, store: Store, fresh: bool = False):
        self.spec = spec
        self.workers = workers
        self.store = store
        self.fresh = fresh
        self.lookups = Lookup(store, spec.setting)
        self.claims = Claims(store, lock_timeout)

    def run(self, calls: list[Call], failures: bool = False) -> list[Any]:
        """The results of the calls, in their order; a failed build raises, or with ``failures`` stands in the list
        as its :class:`BuildError`."""
        results: dict[str, Any] = {}  # by the digest of the call
        for call in [] if self.fresh else calls:
            if call.digest not in results:
                found = self.lookups.lookup(call)
                if found is not None:
                    results[call.digest] = found
        missing = {call.digest: call for call in calls if call.digest not in results}
        if missing:
            results.update(self.build_missing(list(missing.values())))
            for call in [] if self.fresh else missing.values():
                if not isinstance(results[call.digest], BuildError):
                    self.lookups.lookup(call)  # proves the new entry, so that the next start keeps the proofs
        keep_proofs()
        failed = [result for result in results.values() if isinstance(result, BuildError)]
        if failed and not failures:
            more = f" ({len(failed) - 1} more builds failed)" if len(failed) > 1 else ""
            raise BuildError(f"{failed[0]}{more}")
        return [results[call.digest] for call in calls]

    def build_missing(self, calls: list[Call]) -> dict[str, Any]:
        """Builds the calls, each under its lock, at most ``workers`` at once (a failed one's result is its
        :class:`BuildError`). One batch of the process builds at a
        time (its threads share the build servers); a batch that ends before its builds (an interrupt) ends their
        server."""
        with _building:
            if not (self.fresh or storing.cache_writable(self.store)):
                self.fresh, self.store = True, Store(storing.scratch())
            return self._build_missing(calls)

    def _build_missing(self, calls: list[Call]) -> dict[str, Any]:
        results: dict[str, Any] = {}
        pending = list(calls)
        running: dict[int, tuple[Call, contextlib.ExitStack, Path]] = {}
        server: Optional[ServerLink] = None
        try:
            while pending or running:
                for call in list(pending):
                    if len(running) >= 2 * self.workers:  # one waits at the server for each running
                        break
                    stack = contextlib.ExitStack()
                    if not (self.fresh or self.claims.claim(call, stack)):
                        stack.close()
                        continue
                    pending.remove(call)
                    found = None if self.fresh else self.lookups.lookup(call)  # built by another manager meanwhile
                    if found is not None:
                        results[call.digest] = found
                        stack.close()
                        continue
                    server = server or server_for(self.spec, self.store, self.lookups.base_holds)
                    partial = self.store.partial("build")
                    stack.callback(shutil.rmtree, partial, ignore_errors=True)
                    started_ns = time.time_ns()
                    write_private(partial / "call.pickle", call.data)
                    running[server.submit(partial, started_ns, self.workers)] = (call, stack, partial)
                if not running:
                    time.sleep(_POLL_S)
                    continue
                assert server is not None  # started with the first build running
                for ended in server.wait(timeout=_POLL_S if pending else None):
                    call, stack, partial = running.pop(ended.request)
                    with stack:
                        try:
                            replaced = self.lookups.stale_variants(call)
                            results[call.digest] = storing.finish(
                                self.store, call, partial, ended, server, not self.fresh, replaced
                            )
                        except BuildError as e:
                            results[call.digest] = e
        finally:
            for _, stack, _ in running.values():
                stack.close()
            if running and server is not None:
                discard(server)  # its builds would answer the next batch
        return results

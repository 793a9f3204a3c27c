"""pytest plugin, loaded after ``tests.rc_peer.plugin``: records each config that the peer suite's serializer swap
wrote for a returnn_common test, by test, to the JSON lines file named by ``FUZZ_CORPUS`` (see
:mod:`fuzz.corpora`)."""

from __future__ import annotations

import json
import os

from tests.rc_peer import plugin

_before: set[str] = set()


def pytest_runtest_logstart(nodeid: str) -> None:
    _before.clear()
    _before.update(plugin._state.ours_codes if plugin._state else ())


def pytest_runtest_logfinish(nodeid: str) -> None:
    if plugin._state is None:
        return
    new = sorted(plugin._state.ours_codes - _before)
    with open(os.environ["FUZZ_CORPUS"], "a") as file:
        for code in new:
            file.write(json.dumps({"test": nodeid, "code": code}) + "\n")

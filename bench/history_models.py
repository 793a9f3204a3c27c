"""The models of ``bench.graph_history``: those of ``tests.rc_builders``, written once for any returnn_common ``nn``
from 2022-04 on (the adapters are listed there), at their default sizes. Each builder takes the ``nn`` and returns the
raw ``(extern_data, network)`` dicts."""

from __future__ import annotations

import types
from typing import Callable

from tests import rc_builders

MODELS = ("transformer", "lstm_stack", "enc_dec_loop")

BUILDERS: dict[str, Callable[[types.ModuleType], rc_builders.RawDicts]] = {
    name: getattr(rc_builders, name) for name in MODELS
}

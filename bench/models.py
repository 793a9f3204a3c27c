"""The benchmarked models: real returnn_common nets from tests/rc_models, built quietly, with their sizes, so that
every number in the report can be tied to how big the dict was."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

#: name -> (builder name in tests.rc_models, its arguments, number of layers (for the growth ratio) or None)
MODEL_SPECS: dict[str, tuple[str, dict[str, int], Optional[int]]] = {
    "transformer-6": ("transformer", {"num_layers": 6}, 6),
    "transformer-12": ("transformer", {"num_layers": 12}, 12),
    "transformer-24": ("transformer", {"num_layers": 24}, 24),
    "lstm-stack-6": ("lstm_stack", {"num_layers": 6}, 6),
    # Not run by default (--models ... to add them): small nets with derived dims, where the alternatives break.
    "conv-downsampling": ("conv_downsampling", {}, None),
    "enc-dec-loop": ("enc_dec_loop", {}, None),
}
DEFAULT_MODELS = ("transformer-6", "transformer-12", "transformer-24", "lstm-stack-6")


@dataclass
class Model:
    """One built model: the raw dicts (with the real RETURNN dims) as tests/rc_models returns them."""

    name: str
    layers: Optional[int]
    extern_data: dict[str, Any]
    network: dict[str, Any]
    build_s: float
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def raw(self) -> dict[str, Any]:
        """Both dicts in one, the object the lower bounds (pickle, repr, deepcopy) are measured on."""
        return {"extern_data": self.extern_data, "network": self.network}


@contextlib.contextmanager
def quiet_fds() -> Iterator[None]:
    """returnn_common prints on stdout and TensorFlow logs on fd 2 while a model is built; both would bury the
    tables. Redirected at the fd level (TF's C++ logging bypasses sys.stderr); shown only if the build fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            if failed:
                log.seek(0)
                tail = log.read().decode("utf-8", "replace").splitlines()[-30:]
                print("\n".join(["model build output (last lines):", *tail]), file=sys.stderr)


def build(name: str) -> Model:
    """Builds one model of MODEL_SPECS with returnn_common (fresh dims on every call)."""
    from tests import rc_models

    builder_name, kwargs, layers = MODEL_SPECS[name]
    builder: Callable[..., tuple[dict[str, Any], dict[str, Any]]] = getattr(rc_models, builder_name)
    start = time.perf_counter()
    with quiet_fds():
        extern_data, network = builder(**kwargs)
    model = Model(name, layers, extern_data, network, time.perf_counter() - start)
    model.sizes = count(model.raw)
    return model


def count(raw: Any) -> dict[str, int]:
    """Sizes of a raw dict: ``nodes`` is every dict, list/tuple/set and leaf reached through values (keys not
    counted), ``dim_occurrences`` every place a Dim sits (keys included), ``dims`` the distinct dims by RETURNN
    equality and ``dim_objects`` by identity (equal-but-distinct copies count once in ``dims``)."""
    from returnn.tensor import Dim

    sizes = {"nodes": 0, "dicts": 0, "dim_occurrences": 0}
    dims: set[Dim] = set()
    objects: set[int] = set()
    stack = [raw]
    while stack:
        value = stack.pop()
        sizes["nodes"] += 1
        if isinstance(value, dict):
            sizes["dicts"] += 1
            stack.extend(value.values())
            for key in value:
                if isinstance(key, Dim):
                    sizes["dim_occurrences"] += 1
                    dims.add(key)
                    objects.add(id(key))
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
        elif isinstance(value, Dim):
            sizes["dim_occurrences"] += 1
            dims.add(value)
            objects.add(id(value))
    sizes["dims"] = len(dims)
    sizes["dim_objects"] = len(objects)
    return sizes

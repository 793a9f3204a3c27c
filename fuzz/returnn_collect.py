"""pytest plugin for RETURNN's own layer tests: records each net dict that a test constructs at the root of a
``TFNetwork`` (with that network's extern data and the behavior version in effect), written by our serializer as a
config, by test, to the JSON lines file named by ``FUZZ_CORPUS`` (see :mod:`fuzz.corpora`). A net dict
the serializer cannot write (a function, a TF tensor in it) is left out."""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from returnn.tf.network import TFNetwork
from returnn.util.basic import BehaviorVersion, NotSpecified

from i6_rc_jobs import ReturnnCommonSerializer

_codes: dict[str, None] = {}
_construct_from_dict = TFNetwork.construct_from_dict


def _extern_data(network: TFNetwork) -> dict[str, dict[str, Any]]:
    """The network's extern data as the serializer takes it: dims, dtype, sparse dim, the version of RETURNN's
    ``Tensor`` (version 1 takes the last feature dim as the feature axis) and a feature axis set otherwise."""
    raw = {}
    for key, data in network.extern_data.data.items():
        entry: dict[str, Any] = {"dims": tuple(data.dim_tags), "dtype": data.dtype, "version": data.version}
        if data.sparse_dim is not None:
            entry["sparse_dim"] = data.sparse_dim
        if data.feature_dim_axis_or_unspecified is not NotSpecified:
            entry["feature_dim_axis"] = data.feature_dim_axis
        if not data.available_for_inference:
            entry["available_for_inference"] = False
        raw[key] = entry
    return raw


def _code(network: TFNetwork, net_dict: dict[str, Any]) -> Optional[str]:
    try:
        serializer = ReturnnCommonSerializer(extern_data=_extern_data(network), network=net_dict)
        code = serializer.get()
    except Exception:  # noqa: BLE001 (what the serializer cannot write is not in the corpus)
        return None
    return f"use_tensorflow = True\nbehavior_version = {BehaviorVersion.get()}\n\n{code}"


def _recording(self: TFNetwork, net_dict: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    if self.parent_net is None and self.extra_parent_net is None and self.extern_data is not None:
        code = _code(self, net_dict)
        if code is not None:
            _codes.setdefault(code)
    return _construct_from_dict(self, net_dict, *args, **kwargs)


TFNetwork.construct_from_dict = _recording  # type: ignore[method-assign]


def pytest_runtest_logstart(nodeid: str) -> None:
    _codes.clear()


def pytest_runtest_logfinish(nodeid: str) -> None:
    with open(os.environ["FUZZ_CORPUS"], "a") as file:
        for code in _codes:
            file.write(json.dumps({"test": nodeid, "code": code}) + "\n")
    _codes.clear()

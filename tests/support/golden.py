"""Golden files: the generated code and the Sisyphus hashes of the fixed cases, in both hash schemes. A hash that
changes is a decision: bump FORMAT_VERSION in i6_rc_jobs/_hashing/sis_hash.py (GRAPH_FORMAT_VERSION in
i6_rc_jobs/_hashing/graph_rules.py for graph hashes), say why in CHANGELOG.md, then rewrite the files with
``.venv/bin/python -m tests.support.golden --update`` (all the rules: docs/development.md, "Changing a hash")."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Callable

from i6_core.returnn.config import ReturnnConfig
from sisyphus.hash import short_hash

from i6_rc_jobs import ReturnnCommonSerializer, ReturnnConfigSerializer
from i6_rc_jobs._hashing.graph_rules import GRAPH_FORMAT_VERSION
from i6_rc_jobs._hashing.sis_hash import FORMAT_VERSION
from tests.support.cases import CASES

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden"
HASHES = GOLDEN / "hashes.json"
GRAPH_HASHES = GOLDEN / "graph_hashes.json"
#: ReturnnConfigSerializer's cases (PyTorch / RETURNN-frontend configs): their hashes, their code in <name>.config.
CONFIG_HASHES = GOLDEN / "config_hashes.json"


def rc_cases() -> dict[str, Callable[[], ReturnnCommonSerializer]]:
    """The real returnn_common models, as serializers (imported lazily: they need returnn_common and TensorFlow)."""
    from tests import rc_models

    return {
        f"rc_{name}": lambda build=build: ReturnnCommonSerializer(**dict(zip(("extern_data", "network"), build())))
        for name, build in rc_models.ALL_BUILDERS.items()
    }


def current_hashes() -> dict:
    """Per case: the serializer's own bytes and the short hash of a ReturnnConfig holding it (what a job sees)."""
    hashes = {}
    for name, make in sorted({**CASES, **rc_cases()}.items()):
        serializer = make()
        config = ReturnnConfig({"num_epochs": 2}, python_prolog=[serializer])
        hashes[name] = {"serializer": serializer._sis_hash().decode(), "returnn_config": short_hash(config)}
    return {"format_version": FORMAT_VERSION, "hashes": hashes}


def current_graph_hashes() -> dict:
    """Per case with a network: the graph hash of its serializer (``hash_scheme="graph"``)."""
    hashes = {}
    for name, make in sorted({**CASES, **rc_cases()}.items()):
        serializer = make()
        if serializer.sections() and serializer.sections()[-1][0] != "extern_data":
            serializer.hash_scheme = "graph"
            hashes[name] = serializer._sis_hash().decode()
    return {"graph_format_version": GRAPH_FORMAT_VERSION, "hashes": hashes}


def config_cases() -> dict[str, Callable[[], ReturnnConfigSerializer]]:
    from tests.support.config_cases import rf_config_values

    return {"rf_config": lambda: ReturnnConfigSerializer(rf_config_values())}


def current_config_hashes() -> dict:
    """Per config case: the serializer's own bytes and the short hash of a ReturnnConfig holding it."""
    hashes = {}
    for name, make in sorted(config_cases().items()):
        serializer = make()
        config = ReturnnConfig({"backend": "torch"}, python_prolog=[serializer])
        hashes[name] = {"serializer": serializer._sis_hash().decode(), "returnn_config": short_hash(config)}
    return {"format_version": FORMAT_VERSION, "hashes": hashes}


def code_file(name: str) -> pathlib.Path:
    return GOLDEN / f"{name}.config"


def update() -> None:
    HASHES.write_text(json.dumps(current_hashes(), indent=2, sort_keys=True) + "\n")
    GRAPH_HASHES.write_text(json.dumps(current_graph_hashes(), indent=2, sort_keys=True) + "\n")
    CONFIG_HASHES.write_text(json.dumps(current_config_hashes(), indent=2, sort_keys=True) + "\n")
    for name, make in {**CASES, **config_cases()}.items():
        code_file(name).write_text(make().get())


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(__doc__)
    update()

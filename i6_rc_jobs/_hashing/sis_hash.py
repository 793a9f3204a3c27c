"""The Sisyphus hash of a ReturnnCommonSerializer (of its serialized net). A change of these bytes for an unchanged config is a decision:
bump FORMAT_VERSION, update tests/golden/hashes.json and say why in CHANGELOG.md (docs/development.md, "Changing a
hash", says when a correction keeps the version)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Optional

from sisyphus.hash import sis_hash_helper

from i6_rc_jobs._serialization.values import gc_paused
from i6_rc_jobs._hashing.canonical import Canonicalizer, canonical
from i6_rc_jobs._hashing.graph import Graph
from i6_rc_jobs._hashing.graph_rules import GRAPH_FORMAT_VERSION

if TYPE_CHECKING:
    from i6_rc_jobs._serialization.serialized_code import SerializedCode
    from i6_rc_jobs._serialization.serialized_net import SerializedNet

FORMAT_VERSION = 1


def _is_hashed(serializer: SerializedCode, name: str) -> bool:
    return name.partition("[")[0] not in serializer.unhashed


def split_sections(
    serializer: SerializedCode, graphs: Optional[dict[str, Graph]] = None
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """The parts that count for the hash, and the others; with ``hash_scheme="graph"``, each network as its graph
    (``graphs``, if the caller made them already with :func:`layer_graphs`)."""
    hashed: list[tuple[str, Any]] = []
    unhashed: list[tuple[str, Any]] = []
    for name, value in serializer.sections():
        (hashed if _is_hashed(serializer, name) else unhashed).append((name, value))
    if serializer.hash_scheme == "graph":
        graphs = layer_graphs(serializer) if graphs is None else graphs
        hashed = [(name, graphs[name].form if name in graphs else value) for name, value in hashed]
    return hashed, unhashed


def layer_graphs(serializer: SerializedNet) -> dict[str, Graph]:
    """The graph of each hashed network part (the network, or each stage), by part name."""
    sections = serializer.sections()
    extern_data = next((value for name, value in sections if name == "extern_data"), None) or {}
    keys = frozenset(key for key in extern_data if type(key) is str)
    float32 = frozenset(key for key in keys if _dtype(extern_data[key]) == "float32")
    return {
        name: Graph(value, name, keys, float32)
        for name, value in sections
        if name != "extern_data" and _is_hashed(serializer, name)
    }


def _dtype(options: Any) -> Any:
    """The dtype of extern data as RETURNN's Tensor makes it: given, or int32 if sparse, else float32."""
    if type(options) is not dict:
        return None
    if options.get("dtype") is not None:
        return options["dtype"]
    return "int32" if options.get("sparse") or options.get("sparse_dim") is not None else "float32"


def canonical_form(
    serializer: SerializedNet, graphs: Optional[dict[str, Graph]] = None
) -> tuple[Canonicalizer, dict[str, Any]]:
    """The canonicalizer (for dim definitions by index) and the canonical form of the hashed parts."""
    _, canonicalizer, form = canonical(*split_sections(serializer, graphs))
    return canonicalizer, form


def serializer_sis_hash(serializer: SerializedCode, label: str = "ReturnnCommonSerializer") -> bytes:
    """Bytes for Sisyphus to splice into the hash of whatever holds the serializer (e.g. a ReturnnConfig); ``label``
    says what kind of serializer it is."""
    if serializer.hash_value is not None:
        return f"({label}, explicit, ".encode() + sis_hash_helper(serializer.hash_value) + b")"
    with gc_paused():  # the graph and the canonical form are trees of thousands of containers
        text, _, _ = canonical(*split_sections(serializer))
    if serializer.unhashed:
        text = f"unhashed {sorted(serializer.unhashed)!r} {text}"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if serializer.hash_scheme == "graph":
        return f"({label}, graph v{GRAPH_FORMAT_VERSION}, {digest})".encode()
    return f"({label}, v{FORMAT_VERSION}, {digest})".encode()

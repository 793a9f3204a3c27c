"""The data of a ReturnnCommonSerializer: a net dict (or staged net dicts) and extern_data with dims as code references,
how it is shared between jobs, and its code. Its hash is :mod:`i6_rc_jobs._hashing`'s, joined in
:class:`i6_rc_jobs.serializers.ReturnnCommonSerializer`."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Iterable, Optional

from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.pycode import INDENT, CodeWriter
from i6_rc_jobs._serialization.refs import dim_lines
from i6_rc_jobs._serialization.serialized_code import SerializedCode
from i6_rc_jobs._serialization.values import check_tree

#: The parts a serializer holds, in the order they are written and hashed.
PARTS = ("extern_data", "network", "staged_networks")
#: What the hash is made of: the dicts as written (the default), or the computation graph (docs/guide/hash-schemes.md).
HASH_SCHEMES = ("dict", "graph")


def _returnn_common_nn(module: Any) -> ModuleType:
    """The returnn_common ``nn`` package whose ``Module`` class ``module`` is an instance of."""
    for klass in type(module).__mro__:
        if klass.__name__ == "Module" and klass.__module__.endswith(".nn.module"):
            return importlib.import_module(klass.__module__.removesuffix(".module"))
    raise SerializationError(f"{describe(module)} is not a returnn_common nn.Module").at("from_returnn_common")


def _part(name: str) -> property:
    """An attribute for one part; reading or setting it opens the serializer (see the class)."""

    def get(self: SerializedNet) -> Any:
        return self._opened()[name]

    def set_(self: SerializedNet, value: Any) -> None:
        data = self._opened()
        _check_parts({**data, name: value})
        if value is not None:
            check_tree(value, name)
        data[name] = value

    return property(get, set_, doc=f"The {name} dict (DimRefs in place of dims), or None.")


def _check_parts(data: dict[str, Any]) -> None:
    """The rules for the parts, checked wherever they come from (constructor, attributes, and before writing, for
    edits in place): dicts, never both network and staged_networks, stages keyed by int start epochs (written as
    code into get_network)."""
    for name in PARTS:
        if data[name] is not None and not isinstance(data[name], dict):
            raise SerializationError(f"{describe(data[name])} is not a dict").at(name)
    if data["network"] is not None and data["staged_networks"] is not None:
        raise SerializationError("give either network or staged_networks, not both").at("ReturnnCommonSerializer")
    staged = data["staged_networks"]
    if staged is not None:
        if not staged or not all(type(epoch) is int for epoch in staged):
            raise SerializationError("staged_networks needs int start epochs as keys").at("staged_networks")
        for epoch, net in staged.items():
            if not isinstance(net, dict):
                raise SerializationError(f"{describe(net)} is not a dict").at(f"staged_networks[{epoch}]")


class SerializedNet(SerializedCode):
    """Sits in an i6_core ``ReturnnConfig`` (``python_prolog=[...]`` or ``python_epilog=[...]``) and writes
    ``extern_data`` and ``network`` (or ``get_network`` for staged networks) with the code defining their dims.

    On construction every RETURNN ``Dim`` is replaced, in copies, by a :class:`DimRef`; afterwards this is plain
    data: it pickles and writes without RETURNN, returnn_common or TensorFlow, and ``.extern_data``, ``.network``
    and ``.staged_networks`` are ordinary dicts you may still edit (with DimRefs taken from them). Reading one opens
    the serializer (see :class:`SerializedCode` for the sharing between jobs).
    """

    def __init__(
        self,
        *,
        extern_data: Optional[dict[str, Any]] = None,
        network: Optional[dict[str, Any]] = None,
        staged_networks: Optional[dict[int, dict[str, Any]]] = None,
        hash_value: Any = None,
        unhashed: Iterable[str] = (),
        hash_scheme: str = "dict",
    ):
        """
        :param extern_data: RETURNN ``extern_data``, e.g. ``{"data": {"dim_tags": [batch_dim, time_dim, feat_dim]}}``
        :param network: the net dict
        :param staged_networks: instead of ``network``: start epoch -> net dict; ``get_network(epoch)`` returns the
            stage with the largest start epoch <= epoch (the rule of i6_core's ``staged_network_dict``)
        :param hash_value: if given, the Sisyphus hash is that of this object (e.g. a name and a version) instead of
            that of the dicts
        :param unhashed: parts left out of the hash, e.g. ``["extern_data"]`` when the dataset is hashed already
        :param hash_scheme: ``"dict"`` hashes the dicts (names of layers included); ``"graph"`` the computation graph
            they define, which stays the same across cosmetic rewrites of the dict (docs/guide/hash-schemes.md)
        """
        from i6_rc_jobs._serialization.capture import DimCapture
        from i6_rc_jobs._serialization.convert import convert
        from i6_rc_jobs._serialization.data_sizes import check_data_sizes

        _check_parts({"extern_data": extern_data, "network": network, "staged_networks": staged_networks})
        unknown = set(unhashed) - set(PARTS)
        if unknown:
            raise SerializationError(f"unknown parts {sorted(unknown)}, choose from {PARTS}").at("unhashed")
        if hash_scheme not in HASH_SCHEMES:
            raise SerializationError(f"unknown hash scheme {hash_scheme!r}, choose from {HASH_SCHEMES}").at(
                "hash_scheme"
            )
        self.hash_value = hash_value
        self.unhashed = frozenset(unhashed)
        self.hash_scheme = hash_scheme
        #: The RETURNN behavior_version the dicts need (returnn_common's ``nn.min_returnn_behavior_version`` for a
        #: serializer made by ``from_returnn_common``), checked against the config's; not hashed.
        self.min_behavior_version: Optional[int] = None
        if extern_data is not None:
            check_data_sizes(extern_data)
        capture = DimCapture()
        self._data: dict[str, Any] = {
            "extern_data": None if extern_data is None else convert(extern_data, capture, "extern_data"),
            "network": None if network is None else convert(network, capture, "network"),
            "staged_networks": (
                None
                if staged_networks is None
                else {
                    epoch: convert(net, capture, f"staged_networks[{epoch}]")
                    for epoch, net in sorted(staged_networks.items())
                }
            ),
        }
        self._reset_sharing()

    @classmethod
    def from_returnn_common(cls, root_module, **options: Any) -> SerializedNet:
        """From the current returnn_common root name context: its extern_data and the net dict of ``root_module``
        (what ``nn.get_returnn_config()`` would serialize), taken as raw dicts with the real dims. The returnn_common
        is the one ``root_module`` was built with: the installed one, or a version imported with
        :func:`i6_rc_jobs._imports.import_`. ``options``: ``hash_value``, ``unhashed``, ``hash_scheme``, as for the
        constructor."""
        from i6_rc_jobs._compat import rc_compat

        nn = _returnn_common_nn(root_module)
        not_applied = rc_compat.not_applied(nn)
        if not_applied:  # a Transformer builds without it, a Conformer does not: said before either reaches a job
            raise SerializationError(not_applied).at("from_returnn_common")
        rc_config = nn.get_returnn_config()
        made = cls(
            extern_data=rc_config.get_extern_data_raw_dict(),
            network=rc_config.get_net_dict_raw_dict(root_module=root_module),
            **options,
        )
        made.min_behavior_version = nn.min_returnn_behavior_version
        return made

    extern_data = _part("extern_data")
    network = _part("network")
    staged_networks = _part("staged_networks")

    def sections(self) -> list[tuple[str, Any]]:
        """The dicts, in the order they are hashed: extern_data, then the network or the stages by epoch. For
        reading only (the serializer stays closed): edit through the attributes."""
        data = self._data
        out = [(name, data[name]) for name in ("extern_data", "network") if data[name] is not None]
        out.extend((f"staged_networks[{epoch}]", net) for epoch, net in sorted((data["staged_networks"] or {}).items()))
        return out

    def stage_epochs(self) -> list[int]:
        """The epochs at which a network stage starts; ``[1]`` for a single network."""
        return sorted(self._data["staged_networks"] or [1])

    def _defined_names(self) -> Iterable[str]:
        names = [name for name in ("extern_data", "network") if self._data[name] is not None]
        return names + (["get_network"] if self._data["staged_networks"] is not None else [])

    def _render(self, resolve_delayed: bool = True) -> tuple[CodeWriter, list[str], list[str]]:
        _check_parts(self._data)
        writer = CodeWriter(resolve_delayed)
        parts = []
        for name in ("extern_data", "network"):
            if self._data[name] is not None:
                parts.append(f"{name} = {writer.write(self._data[name], name)}")
        if self._data["staged_networks"] is not None:
            parts.append(self._get_network_code(writer))
        return writer, dim_lines(writer.dims, list(writer.dims.values())), parts

    def _get_network_code(self, writer: CodeWriter) -> str:
        indent = INDENT * 2
        lines = [
            "def get_network(epoch, **kwargs):",
            f'{INDENT}"""The stage with the largest start epoch <= epoch."""',
        ]
        for epoch, net in sorted(self._data["staged_networks"].items(), reverse=True):
            lines.append(f"{INDENT}if epoch >= {epoch}:")
            lines.append(f"{indent}return {writer.write(net, f'staged_networks[{epoch}]', indent)}")
        starts = self.stage_epochs()
        lines.append(f'{INDENT}raise ValueError(f"no network stage starts at or before epoch {{epoch}}: {starts}")')
        return "\n".join(lines)

    def __repr__(self) -> str:
        parts = [name for name in PARTS if self._data[name] is not None]
        return f"<{type(self).__name__} with {', '.join(parts) or 'nothing'}>"

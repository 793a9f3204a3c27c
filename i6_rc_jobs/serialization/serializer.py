"""ReturnnCommonSerializer: a net dict (or staged net dicts) and extern_data, with dims as code references."""

from __future__ import annotations

import copy
from typing import Any, Iterable, Optional

from sisyphus.delayed_ops import DelayedBase

from .copying import copy_tree
from .errors import SerializationError
from .prolog import dim_lines
from .pycode import INDENT, CodeWriter

#: The parts a serializer holds, in the order they are written and hashed.
PARTS = ("extern_data", "network", "staged_networks")


class ReturnnCommonSerializer(DelayedBase):
    """Sits in an i6_core ``ReturnnConfig`` (``python_prolog=[...]`` or ``python_epilog=[...]``) and writes
    ``extern_data`` and ``network`` (or ``get_network`` for staged networks) with the code defining their dims.

    On construction every RETURNN ``Dim`` is replaced, in copies, by a :class:`DimRef`; afterwards this is plain
    data: it pickles and writes without RETURNN, returnn_common or TensorFlow, and ``.extern_data``, ``.network``
    and ``.staged_networks`` are ordinary dicts you may still edit (with DimRefs taken from them).
    """

    def __init__(
        self,
        *,
        extern_data: Optional[dict[str, Any]] = None,
        network: Optional[dict[str, Any]] = None,
        staged_networks: Optional[dict[int, dict[str, Any]]] = None,
        hash_value: Any = None,
        unhashed: Iterable[str] = (),
    ):
        """
        :param extern_data: RETURNN ``extern_data``, e.g. ``{"data": {"dim_tags": [batch_dim, time_dim, feat_dim]}}``
        :param network: the net dict
        :param staged_networks: instead of ``network``: start epoch -> net dict; ``get_network(epoch)`` returns the
            stage with the largest start epoch <= epoch (the rule of i6_core's ``staged_network_dict``)
        :param hash_value: if given, the Sisyphus hash is that of this object (e.g. a name and a version) instead of
            that of the dicts
        :param unhashed: parts left out of the hash, e.g. ``["extern_data"]`` when the dataset is hashed already
        """
        from .capture import DimCapture
        from .convert import convert

        if network is not None and staged_networks is not None:
            raise SerializationError("give either network or staged_networks, not both").at("ReturnnCommonSerializer")
        if staged_networks is not None and (
            not staged_networks or not all(type(epoch) is int for epoch in staged_networks)
        ):
            raise SerializationError("staged_networks needs int start epochs as keys").at("staged_networks")
        unknown = set(unhashed) - set(PARTS)
        if unknown:
            raise SerializationError(f"unknown parts {sorted(unknown)}, choose from {PARTS}").at("unhashed")
        self.hash_value = hash_value
        self.unhashed = frozenset(unhashed)
        capture = DimCapture()
        self.extern_data = None if extern_data is None else convert(extern_data, capture, "extern_data")
        self.network = None if network is None else convert(network, capture, "network")
        self.staged_networks = (
            None
            if staged_networks is None
            else {
                epoch: convert(net, capture, f"staged_networks[{epoch}]")
                for epoch, net in sorted(staged_networks.items())
            }
        )

    @classmethod
    def from_returnn_common(cls, root_module) -> ReturnnCommonSerializer:
        """From the current returnn_common root name context: its extern_data and the net dict of ``root_module``
        (what ``nn.get_returnn_config()`` would serialize), taken as raw dicts with the real dims."""
        from returnn_common import nn

        rc_config = nn.get_returnn_config()
        return cls(
            extern_data=rc_config.get_extern_data_raw_dict(),
            network=rc_config.get_net_dict_raw_dict(root_module=root_module),
        )

    def __deepcopy__(self, memo: dict) -> ReturnnCommonSerializer:
        """Sisyphus deep-copies every job's arguments: this copies the dicts several times faster than
        copy.deepcopy, keeping which positions share a dim (see :mod:`.copying`)."""
        copied = copy.copy(self)
        memo[id(self)] = copied
        copied.__dict__ = {key: copy_tree(value, memo) for key, value in self.__dict__.items()}
        return copied

    def is_set(self) -> bool:
        return True

    def _sis_hash(self) -> bytes:
        from ..hashing.sis_hash import serializer_sis_hash

        return serializer_sis_hash(self)

    def get(self) -> str:
        """The complete code: imports, the dim prolog, ``extern_data = ...``, then ``network`` or ``get_network``."""
        return self._code(*self._render())

    @property
    def dim_prolog(self) -> str:
        """The code that defines the dims the dicts use now (imports included)."""
        writer, dims, _ = self._render()
        return self._code(writer, dims, [])

    def dim_names(self) -> list[str]:
        """The variable names the written code defines or imports for dims."""
        writer, _, _ = self._render()
        return list(writer.dims)

    def code_and_names(self) -> tuple[str, list[str]]:
        """``get()`` and every name it defines (dims, ``extern_data``, ``network`` or ``get_network``), from one
        rendering: what must not clash with the keys of the config around it."""
        writer, dims, parts = self._render()
        defined = [name for name in ("extern_data", "network") if getattr(self, name) is not None]
        if self.staged_networks is not None:
            defined.append("get_network")
        return self._code(writer, dims, parts), [*writer.dims, *defined]

    def _render(self) -> tuple[CodeWriter, list[str], list[str]]:
        """Writes the dicts, then the lines of the dims they name: (writer, dim lines, dict code parts)."""
        writer = CodeWriter()
        parts = []
        if self.extern_data is not None:
            parts.append(f"extern_data = {writer.write(self.extern_data, 'extern_data')}")
        if self.network is not None:
            parts.append(f"network = {writer.write(self.network, 'network')}")
        if self.staged_networks is not None:
            parts.append(self._get_network_code(writer))
        return writer, dim_lines(writer, list(writer.dims.values())), parts

    @staticmethod
    def _code(writer: CodeWriter, dims: list[str], parts: list[str]) -> str:
        return "\n\n".join(["\n".join(writer.import_lines()), *(["\n".join(dims)] if dims else []), *parts]) + "\n"

    def _get_network_code(self, writer: CodeWriter) -> str:
        indent = INDENT * 2
        lines = [
            "def get_network(epoch, **kwargs):",
            f'{INDENT}"""The stage with the largest start epoch <= epoch."""',
        ]
        for epoch, net in sorted(self.staged_networks.items(), reverse=True):
            lines.append(f"{INDENT}if epoch >= {epoch}:")
            lines.append(f"{indent}return {writer.write(net, f'staged_networks[{epoch}]', indent)}")
        starts = sorted(self.staged_networks)
        lines.append(f'{INDENT}raise ValueError(f"no network stage starts at or before epoch {{epoch}}: {starts}")')
        return "\n".join(lines)

    def __repr__(self) -> str:
        parts = [name for name in PARTS if getattr(self, name) is not None]
        return f"<ReturnnCommonSerializer with {', '.join(parts) or 'nothing'}>"

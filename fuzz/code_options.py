"""Python functions that generated nets put into code options (``eval``): the written config imports them from here,
and RETURNN calls them with the layer. Each reads a layer by a fixed name, as user code does, in the layout of the
eval's output (a loop's is time-major)."""

from __future__ import annotations

from typing import Any

KEYED = "keyed"
"""The layer the functions read by name"""


def plus_keyed(source: Any, self: Any, **_kwargs: Any) -> Any:
    """The first source plus the output of the layer named :data:`KEYED` (RETURNN wants each source used, and the
    layer built before: it is the second source, too)."""
    return (
        source(0) + 0.5 * source(1) + self.network.get_layer(KEYED).output.copy_compatible_to(self.output).placeholder
    )


def times_keyed(source: Any, self: Any, **_kwargs: Any) -> Any:
    """The first source times the output of the layer named :data:`KEYED`, plus the second source."""
    return source(0) * self.network.get_layer(KEYED).output.copy_compatible_to(self.output).placeholder + source(1)

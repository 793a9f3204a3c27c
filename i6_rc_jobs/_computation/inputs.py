"""The inputs a model's forward is captured with: each tensor's shape (named dims that vary, ints that do not) and
dtype, and for each named dim the range of sizes that training and recognition use. The capture holds for every
shape in these ranges, or is refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

#: The dtypes an input may have, by the name torch gives them.
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")
#: A dim's range when none is given: the batch's, and any other (frames, labels).
DEFAULT_RANGES = {"B": (1, 64)}


@dataclass(frozen=True)
class TensorSpec:
    """One tensor argument of ``forward``: ``shape`` holds ints (fixed sizes) and names (dims that vary; one name is
    one size, in every tensor it stands in); ``lengths_of`` makes an int tensor of shape ``(B,)`` that holds the
    sizes of that dim (a sequence-lengths argument, every sequence full length)."""

    shape: tuple[Union[int, str], ...]
    dtype: str = "float32"
    lengths_of: Optional[str] = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"TensorSpec{self.shape}: dtype {self.dtype!r} is none of {', '.join(DTYPES)}")
        for axis, size in enumerate(self.shape):
            if not (isinstance(size, str) and size.isidentifier()) and not (isinstance(size, int) and size > 0):
                raise ValueError(f"TensorSpec{self.shape}: axis {axis}: {size!r} is neither a size > 0 nor a dim name")
        if self.lengths_of is not None and (len(self.shape) != 1 or self.dtype not in ("int64", "int32")):
            raise ValueError(f"TensorSpec{self.shape}: lengths_of needs an int tensor of one axis, shape ('B',)")


@dataclass(frozen=True)
class Inputs:
    """The arguments of ``forward`` (positional, in order) and the range ``(min, max)`` of each named dim, both ends
    included. Every named dim needs a range, except ``B`` (default ``1..64``)."""

    tensors: tuple[TensorSpec, ...]
    ranges: tuple[tuple[str, int, int], ...]

    @classmethod
    def of(cls, *tensors: Union[TensorSpec, tuple], **ranges: tuple[int, int]) -> Inputs:
        """``Inputs.of(("B", "T", 80), TensorSpec(("B", "T"), "bool"), T=(16, 3000))``: a plain tuple is a float32
        tensor of that shape."""
        specs = tuple(t if isinstance(t, TensorSpec) else TensorSpec(tuple(t)) for t in tensors)
        names = {size for spec in specs for size in spec.shape if isinstance(size, str)}
        names |= {spec.lengths_of for spec in specs if spec.lengths_of}
        given = {**{k: v for k, v in DEFAULT_RANGES.items() if k in names}, **ranges}
        missing, unused = sorted(names - set(given)), sorted(set(given) - names)
        if missing:
            raise ValueError(f"Inputs: dim {missing[0]!r} has no range: pass {missing[0]}=(min, max)")
        if unused:
            raise ValueError(f"Inputs: range {unused[0]}={given[unused[0]]!r} for a dim no tensor has")
        for name, (low, high) in sorted(given.items()):
            if not 1 <= low <= high:
                raise ValueError(f"Inputs: range {name}=({low}, {high}) is no range of sizes (1 <= min <= max)")
        return cls(specs, tuple((name, low, high) for name, (low, high) in sorted(given.items())))

    def range_of(self, name: str) -> tuple[int, int]:
        return next((low, high) for n, low, high in self.ranges if n == name)

    def dims(self) -> Iterator[str]:
        return (name for name, _, _ in self.ranges)

    def example_sizes(self, fixed: Optional[dict[str, int]] = None) -> dict[str, int]:
        """A size per dim for the example tensors: inside its range, not 0 or 1 (torch specializes those), and no
        two alike, nor like a fixed size (torch takes equal sizes as one), unless the range allows no other."""
        taken = {size for spec in self.tensors for size in spec.shape if isinstance(size, int)}
        sizes = dict(fixed or {})
        taken |= set(sizes.values())
        for name, low, high in self.ranges:
            if name in sizes:
                continue
            candidates = [s for s in range(max(low, 2), min(high, low + 200) + 1) if s not in taken] or [high]
            sizes[name] = candidates[min(len(candidates) - 1, 3)]
            taken.add(sizes[name])
        return sizes

    def tensors_for(self, sizes: dict[str, int], seed: int) -> tuple[Any, ...]:
        """Tensors of these sizes: normal floats, ints in ``0..9``, all-true masks, full lengths (from ``seed``)."""
        import torch

        generator = torch.Generator().manual_seed(seed)
        made = []
        for spec in self.tensors:
            shape = [size if isinstance(size, int) else sizes[size] for size in spec.shape]
            dtype = getattr(torch, spec.dtype)
            if spec.lengths_of is not None:
                made.append(torch.full(shape, sizes[spec.lengths_of], dtype=dtype))
            elif spec.dtype == "bool":
                made.append(torch.ones(shape, dtype=dtype))
            elif dtype.is_floating_point:
                made.append(torch.randn(shape, generator=generator).to(dtype))
            else:
                made.append(torch.randint(0, 10, shape, generator=generator, dtype=dtype))
        return tuple(made)

    def describe(self) -> dict[str, Any]:
        """What the fingerprint records of the inputs (it hashes them: other inputs, another capture)."""
        return {
            "tensors": [[list(spec.shape), spec.dtype, spec.lengths_of] for spec in self.tensors],
            "ranges": {name: [low, high] for name, low, high in self.ranges},
        }

"""Comparing dicts with real RETURNN dims up to a one-to-one map of dims, as the round-trip tests need."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy
from returnn.tensor import Dim, batch_dim, single_step_dim
from returnn.tensor.marked_dim import MarkedDim

from i6_rc_jobs._serialization.capture import same_derivation, same_op
from i6_rc_jobs._serialization.refs import canonical_op


def own_description(dim: Dim) -> Optional[str]:
    """A ``same_as`` copy's description if it is not its base's (axis strings find the copy by it)."""
    base = dim.get_same_base()
    return dim.description if base is not dim and dim.description and dim.description != base.description else None


def representative(dim: Dim) -> Dim:
    """The dim a serializer writes for ``dim``: the documented rule for equal-but-distinct copies."""
    if dim.is_batch_dim():
        return batch_dim
    base = dim.get_same_base()
    same = base.kind == dim.kind and base.match_priority == dim.match_priority and own_description(dim) is None
    op, base_op = dim.derived_from_op, base.derived_from_op
    same = same and (base_op is None or (op is not None and same_op(op, base_op)))
    same = same and base.auto_generated == dim.auto_generated
    if base is not dim and same:
        return representative(base)
    return dim


class DimMap:
    """A one-to-one map from original dims (after :func:`representative`) to the dims a written config made, that
    checks kind, static size, match_priority, description (where it has one), auto_generated, special, vocab and
    derivation on the way."""

    def __init__(self):
        self.forward: dict[int, Dim] = {}
        self.backward: dict[int, Dim] = {}
        self._alive: list[Dim] = []
        self._copies: dict[tuple, Dim] = {}

    def match(self, orig: Dim, loaded: Dim, path: str) -> None:
        orig = representative(orig)
        base = orig.get_same_base()
        if base is not orig:  # copies of one base with one kind, match_priority and derivation are one dim, too
            op = orig.derived_from_op  # its base's derivation, or one of its own (a copy alone)
            keeps_op = op is not None and (same_op(op, base.derived_from_op) or id(orig))
            key = (id(representative(base)), orig.kind, orig.match_priority, own_description(orig), keeps_op)
            key += (orig.auto_generated,)
            orig = self._copies.setdefault(key, orig)
        known = self.forward.get(id(orig))
        if known is not None:
            assert known is loaded or same_derivation(known, loaded), f"{path}: {orig} was loaded as {known}, {loaded}"
            return
        other = self.backward.get(id(loaded))  # dims derived alike are one object in the written config
        assert other is None or same_derivation(other, orig), f"{path}: {loaded} stands for two original dims"
        if orig is batch_dim or orig is single_step_dim:
            assert loaded is orig, f"{path}: global {orig} loaded as {loaded}"
        assert orig.kind == loaded.kind, f"{path}: kind {orig.kind} != {loaded.kind}"
        assert orig.dimension == loaded.dimension, f"{path}: size {orig.dimension} != {loaded.dimension}"
        assert orig.match_priority == loaded.match_priority, f"{path}: match_priority differs"
        assert orig.auto_generated == loaded.auto_generated and orig.special == loaded.special, path
        if orig.description is not None and other is None:  # else its variable name, or the first original's
            assert orig.description == loaded.description, f"{path}: {orig.description!r} != {loaded.description!r}"
        assert _vocab(orig) == _vocab(loaded), f"{path}: vocab {orig.vocab!r} != {loaded.vocab!r}"
        self.forward[id(orig)] = loaded
        self.backward[id(loaded)] = orig
        self._alive += [orig, loaded]
        orig_base, loaded_base = orig.get_same_base(), loaded.get_same_base()
        if orig_base is not orig:
            assert loaded_base is not loaded, f"{path}: {orig} is a copy, {loaded} is not"
            self.match(orig_base, loaded_base, path + " (base)")
        op, loaded_op = orig.derived_from_op, loaded.derived_from_op
        if op is None or op.kind == "constant":
            assert loaded_op is None or loaded_op.kind == "constant", f"{path}: {loaded} is derived, {orig} not"
            return
        assert loaded_op is not None, f"{path}: {orig} is derived by {op}, {loaded} is not"
        assert canonical_op(op.kind) == canonical_op(loaded_op.kind), f"{path}: {op} != {loaded_op}"
        assert len(op.inputs) == len(loaded_op.inputs), f"{path}: {op} != {loaded_op}"
        for i, (a, b) in enumerate(zip(op.inputs, loaded_op.inputs)):
            if a.is_constant_static_dim():
                assert b.is_constant_static_dim() and a.dimension == b.dimension, f"{path}: {op} != {loaded_op}"
            else:
                self.match(a, b, f"{path} (input {i})")


def _vocab(dim: Dim) -> Optional[tuple]:
    """What RETURNN reads of a dim's vocab: its class, file, labels, special label ids and postfix."""
    vocab = dim.vocab
    if vocab is None:
        return None
    specials = [vocab.unknown_label_id, vocab.bos_label_id, vocab.eos_label_id, vocab.pad_label_id]
    return type(vocab), vocab.vocab_file, vocab.labels, specials, vocab.seq_postfix


def assert_equal_up_to_dims(orig: Any, loaded: Any, dims: DimMap, path: str = "") -> None:
    """Equal values, where dims correspond under ``dims``; dict subclasses count as dicts, nan equals nan, numpy values
    are equal in type, dtype, shape and bytes."""
    if isinstance(orig, Dim):
        assert isinstance(loaded, Dim), f"{path}: {loaded!r} is no Dim"
        dims.match(orig, loaded, path)
    elif isinstance(orig, MarkedDim):
        assert type(orig) is type(loaded), f"{path}: {orig!r} != {loaded!r}"
        dims.match(orig.tag, loaded.tag, path)
    elif isinstance(orig, dict):
        assert type(loaded) is dict, f"{path}: {type(loaded)} is no dict"
        assert len(orig) == len(loaded), f"{path}: keys {list(orig)} != {list(loaded)}"
        loaded_keys = _pair_up(list(orig), list(loaded), dims, path)
        for key, loaded_key in loaded_keys:
            assert_equal_up_to_dims(orig[key], loaded[loaded_key], dims, f"{path}[{key!r}]")
    elif isinstance(orig, (set, frozenset)):
        assert type(orig) is type(loaded) and len(orig) == len(loaded), f"{path}: {orig!r} != {loaded!r}"
        _pair_up(list(orig), list(loaded), dims, path)
    elif isinstance(orig, (list, tuple)):
        assert type(orig) is type(loaded) and len(orig) == len(loaded), f"{path}: {orig!r} != {loaded!r}"
        for i, (a, b) in enumerate(zip(orig, loaded)):
            assert_equal_up_to_dims(a, b, dims, f"{path}[{i}]")
    elif isinstance(orig, (numpy.ndarray, numpy.generic)):  # the same type, dtype, shape and bytes, little-endian
        orig = orig.astype(orig.dtype.newbyteorder("<")) if orig.dtype.str[0] == ">" else orig
        assert type(orig) is type(loaded) and orig.dtype.str == loaded.dtype.str, f"{path}: {orig!r} != {loaded!r}"
        assert orig.shape == loaded.shape, f"{path}: {orig!r} != {loaded!r}"
        assert value_bytes(orig) == value_bytes(loaded), path
    elif isinstance(orig, float) and math.isnan(orig):
        assert isinstance(loaded, float) and math.isnan(loaded), f"{path}: {orig!r} != {loaded!r}"
    else:
        assert type(orig) is type(loaded) and orig == loaded, f"{path}: {orig!r} != {loaded!r}"


def value_bytes(value: Any) -> bytes:
    """The bytes of a numpy value, C order; of an x87 long double (10 bytes of value in 16) without the padding."""
    data = numpy.ascontiguousarray(value).tobytes()
    if value.dtype.base in (numpy.dtype(numpy.longdouble), numpy.dtype(numpy.clongdouble)):
        if numpy.finfo(numpy.longdouble).nmant == 63:
            items = numpy.frombuffer(data, dtype=numpy.uint8).reshape(-1, numpy.dtype(numpy.longdouble).itemsize)
            return items[:, :10].tobytes()
    return data


def _pair_up(orig: list, loaded: list, dims: DimMap, path: str) -> list[tuple[Any, Any]]:
    """Pairs the elements of two unordered collections: plain values by equality, dims by description (written
    configs keep descriptions) or else as the dim derived alike they were loaded as, then checks each pair."""
    pairs = []
    rest = list(loaded)
    for item in sorted(orig, key=_sort_key):
        candidates = [x for x in rest if _sort_key(x) == _sort_key(item)]
        if not candidates and isinstance(item, Dim):  # one dim in the written config for originals derived alike
            candidates = [x for x in rest if id(x) in dims.backward and same_derivation(dims.backward[id(x)], item)]
        assert candidates, f"{path}: nothing for {item!r} in {loaded!r}"
        match = candidates[0]
        del rest[
            next(i for i, x in enumerate(rest) if x is match)
        ]  # by identity: numpy compares with a tuple as arrays
        assert_equal_up_to_dims(item, match, dims, f"{path}{{{item!r}}}")
        pairs.append((item, match))
    return pairs


def _sort_key(value: Any) -> str:
    if isinstance(value, Dim):
        value = representative(value)
        return f"dim {value.description} {value.kind} {value.match_priority}"
    if isinstance(value, MarkedDim):
        return f"marked {type(value).__name__} {_sort_key(value.tag)}"
    if isinstance(value, (set, frozenset)):  # its repr follows the hash order of its elements
        return f"{type(value).__name__} {sorted(map(_sort_key, value))}"
    return f"{type(value).__name__} {value!r}"

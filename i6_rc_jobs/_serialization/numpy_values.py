"""numpy arrays and scalars in a serializer's dicts (a ``constant`` layer's value, a parameter's init): which are
taken, and how they are written. numpy is never imported here: a numpy value exists only where numpy is loaded."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from i6_rc_jobs._serialization.errors import SerializationError, describe

#: The dtype kinds taken: all but object (``O``: the items are Python objects, with no code form of their own) and
#: void (``V``: structured and raw records, whose ``dtype.str`` does not name their fields).
KINDS = frozenset("biufcmMSU")
#: Arrays of at most this many items, all bools, ints, finite floats of at most 64 bits, str or bytes (which read back
#: exactly from Python's literals; numpy pads str and bytes with NULs), are written as a list of their items; all
#: others as their bytes, in base64 (1.33 characters per byte). Measured on a 1000x1000 float32 array of random
#: normals: 5.3 MB of code, written in 0.03 s, compiled and run in 0.06 s; as a list it would be 32.6 MB, 1.5 s and
#: 4.4 s.
READABLE_ITEMS = 1000


def loaded_numpy() -> ModuleType:
    """numpy, loaded where a numpy value is (a value of kind NUMPY)."""
    return sys.modules["numpy"]


def check_numpy(value: Any, numpy: ModuleType) -> None:
    """Refuses what cannot be written to load back with the same type, dtype, shape and content."""
    cls = type(value)
    plain_scalar = isinstance(value, numpy.generic) and value.dtype.type is cls
    if cls is not numpy.ndarray and not (plain_scalar and getattr(numpy, cls.__name__, None) is cls):  # np.matrix, ...
        raise SerializationError(
            f"{describe(value)} is a subclass of a numpy type, which would be written as the plain type: convert "
            f"it with numpy.asarray(...)"
        )
    if value.dtype.kind not in KINDS:
        raise SerializationError(
            f"{describe(value)} has dtype {value.dtype} (kind {value.dtype.kind!r}), which has no code form: "
            f"numpy arrays of bools, numbers, datetimes or strings can be written, not of objects or records"
        )


def little_endian(value: Any) -> Any:
    """``value`` with its items little-endian: what is written and hashed. Byte order, like memory layout, is how the
    items are stored, not what they are (TensorFlow reads both alike), and numpy's pickling (protocol 4, Python's
    default) turns it into the machine's: a serializer must write and hash alike before and after pickling."""
    return value.astype(value.dtype.newbyteorder("<")) if value.dtype.str[0] == ">" else value


#: x87 extended precision, numpy's long double on x86: 10 bytes of value in an item of 12 or 16 (the rest is padding,
#: whatever memory held: other bytes in each process for one value).
X87_BYTES = 10


def stored_bytes(value: Any, numpy: ModuleType) -> bytes:
    """The bytes of ``value`` that are written and hashed: little-endian (:func:`little_endian`), in C order, and of an
    x87 long double (also in a complex one) its value's bytes, with the padding after them as zeros."""
    value = numpy.ascontiguousarray(little_endian(value))
    data = value.tobytes()
    part = numpy.dtype(numpy.longdouble)
    if numpy.finfo(part).nmant != 63 or value.dtype.base not in (part, numpy.dtype(numpy.clongdouble)):
        return data
    items = numpy.frombuffer(data, dtype=numpy.uint8).reshape(-1, part.itemsize).copy()
    items[:, X87_BYTES:] = 0
    return items.tobytes()


def readable(value: Any, numpy: ModuleType) -> bool:
    """Whether ``value`` is written as its items (see :data:`READABLE_ITEMS`), else as its bytes."""
    dtype = value.dtype
    if value.size > READABLE_ITEMS:
        return False
    if dtype.kind in "biuSU":
        return True
    return dtype.kind == "f" and dtype.itemsize <= 8 and bool(numpy.isfinite(value).all())


def numpy_brackets(value: Any, numpy: ModuleType) -> int:
    """How many brackets the written code of ``value`` opens: ``float32(1.5)`` one; ``array([...], ...)``,
    ``frombuffer(b64decode(...), ...)`` and ``.reshape((2, 3))`` two."""
    return 1 if isinstance(value, numpy.generic) and readable(value, numpy) else 2

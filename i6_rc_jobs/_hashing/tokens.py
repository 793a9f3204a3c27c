"""The typed leaves of the canonical form: tokens for dims, layers and code, and containers tagged with their kind,
whose texts no plain value can spell."""

from __future__ import annotations

import hashlib
from typing import Any, Optional

from i6_core.returnn.config import CodeWrapper
from sisyphus.delayed_ops import DelayedBase
from sisyphus.hash import sis_hash_helper

from i6_rc_jobs._serialization.numpy_values import check_numpy, little_endian, stored_bytes
from i6_rc_jobs._serialization.kinds import LEAF_TYPES
from i6_rc_jobs._serialization.values import wrapper_code


class Token:
    """A typed leaf of the canonical form; its repr can never equal that of a plain value (it starts with ``<``)."""

    __slots__ = ("text", "code")

    def __init__(self, text: str):
        self.text = text
        self.code = f"<{text}>"  # made once: the canonical form's repr is the hashed text, with ~10k dims in it

    def __repr__(self) -> str:
        return self.code

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.text == self.text

    def __hash__(self) -> int:
        return hash((type(self), self.text))


class DimToken(Token):
    """A dim: the first occurrence spells out the definition, later ones only the index."""

    __slots__ = ("index",)

    def __init__(self, index: int, definition: Optional[str]):
        super().__init__(f"dim#{index} {definition}" if definition is not None else f"dim#{index}")
        self.index = index


class Tagged(tuple):
    """A container that is not a list, tuple or dict (a namedtuple, a marked dim), with its kind in front."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _tagged_code(self[0], [repr(item) for item in self[1:]])

    # Never equal to a plain tuple of the same items: as dict keys, ``ImplicitSparseDim(d)`` and
    # ``("ImplicitSparseDim", d)`` (or a namedtuple and a tuple spelling its class) are two entries.
    def __eq__(self, other: object) -> bool:
        return type(other) is Tagged and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((Tagged, tuple(self)))


class SetForm:
    """A set or frozenset: its elements' canonical forms in canonical order, spelled out once as the text a Tagged
    would have (hash-diff compares sets as a whole)."""

    __slots__ = ("code",)

    def __init__(self, kind: str, codes: list[str]):
        self.code = _tagged_code(kind, codes)

    def __repr__(self) -> str:
        return self.code

    def __eq__(self, other: object) -> bool:
        return type(other) is SetForm and other.code == self.code

    def __hash__(self) -> int:
        return hash(self.code)


def _tagged_code(kind: str, codes: list[str]) -> str:
    """``kind`` and the items as a tuple would show them: ``set()``, ``set(<dim#3>,)``, ``set(<dim#1>, <dim#3>)``."""
    return f"{kind}({', '.join(codes)}{',' if len(codes) == 1 else ''})"


def code_token(wrapper: CodeWrapper) -> Token:
    """A CodeWrapper by its code, encoded so that no code can spell the end of its token and the start of another:
    as it is while it holds no angle bracket (a reader ends the token at the first ``>``), else as a string literal;
    a Sisyphus delayed value as code (which i6_core writes by its ``get()``, in the worker) by its Sisyphus hash, as
    plain i6_core hashes it: a job's output path by its job, an unset Variable without asking for its value."""
    if isinstance(wrapper.code, DelayedBase):
        return Token(f"code-delayed {sis_hash_helper(wrapper.code).hex()}")
    code = wrapper_code(wrapper)
    if "<" in code or ">" in code:
        return Token(f"code={code!r}")
    return Token(f"code {code}")


def imported_token(module: str, qualname: str) -> Token:
    """A function or class the config imports, by its module and qualified name (dotted identifiers, so the token
    ends where they do; a versioned module's name carries its commit)."""
    return Token(f"import {module}:{qualname}")


def numpy_token(value: Any, numpy: Any) -> Token:
    """A numpy scalar by its dtype and bytes; an array by its dtype, shape and the sha256 of its bytes in C order;
    little-endian, as written. The dtype as a string literal (``'<f4'``): it holds ``<``."""
    check_numpy(value, numpy)
    value = little_endian(value)
    data = stored_bytes(value, numpy)
    if isinstance(value, numpy.generic):
        return Token(f"numpy-scalar {value.dtype.str!r} {data.hex()}")
    return Token(f"numpy-array {value.dtype.str!r} {value.shape!r} sha256:{hashlib.sha256(data).hexdigest()}")


#: What the canonical form takes as it is: plain leaves, and the tokens of layer references in the graph scheme's
#: form (graph.py; tens of thousands in a large model, so they skip the call of ``_value`` as leaves do).
AS_IS_TYPES = LEAF_TYPES | {Token}

GLOBAL_TOKENS = {"batch_dim": Token("batch_dim"), "single_step_dim": Token("single_step_dim")}
#: Where the globals go among set elements: first, by name (numbered dims follow by index), as in _order_key.
GLOBAL_ORDER = {name: i - len(GLOBAL_TOKENS) for i, name in enumerate(sorted(GLOBAL_TOKENS))}

"""The spellings of values that RETURNN takes alike, as the graph hash respells them (rules "value-spellings" and
"scalar-operands"): a constant's value and dtype, an initial state, a binary op of a layer and a float."""

from __future__ import annotations

import re
from typing import Any, Optional

from i6_rc_jobs._serialization.errors import SerializationError
from i6_rc_jobs._hashing.graph_rules import INITIAL_STATE_CLASSES, SCALAR_FUNCTIONS, SCALAR_OPERATORS
from i6_rc_jobs._hashing.graph_scopes import Layer
from i6_rc_jobs._hashing.tokens import Tagged


def respell(node: dict[str, Any], layer: Layer) -> None:
    """Rule "value-spellings", on the options of a node of a class in RESPELLED (in place)."""
    if node["class"] == "constant":
        spelled = constant_value(node, layer)
        if spelled is not None:
            node["value"], node["dtype"] = spelled
    if node["class"] in INITIAL_STATE_CLASSES and "initial_state" in node:
        node["initial_state"] = _initial_state(node["initial_state"])


#: The classes whose options rule "value-spellings" respells (see respell).
RESPELLED = frozenset({"constant"}) | INITIAL_STATE_CLASSES


def constant_value(desc: dict[str, Any], layer: Layer) -> Optional[tuple[Any, Any]]:
    """A constant layer's (``desc`` of ``layer``) scalar value and dtype as the tensor RETURNN makes (rule
    "value-spellings"): the dtype given or inferred from the value's type, an int in a float dtype as the float it
    becomes if a double holds it exactly (else as it is: TF rounds it once, its float twice); None for values that are no bool, int or float. An int too large for any float is refused (TF cannot
    make it: ValueError)."""
    value = desc.get("value", 0.0)  # ConstantLayer's default
    if type(value) not in (bool, int, float):
        return None
    dtype = desc.get("dtype")
    if dtype is None:  # inferred for None only ("" or False stays as given: no dtype RETURNN knows)
        dtype = {bool: "bool", int: "int32", float: "float32"}[type(value)]
    if type(dtype) is str and dtype.startswith("float") and type(value) is int:
        try:
            number = float(value)  # tf.constant(0, dtype=float32) is 0.0
        except OverflowError:
            raise SerializationError(
                f"an int of {len(str(abs(value)))} digits in dtype {dtype!r}: too large for a float, TF cannot make "
                "this constant (give a float, e.g. float('inf'), or an int dtype)"
            ).at(f"{layer.where}['value']") from None
        if int(number) == value:  # else TF rounds the int once, and the float twice: it stays as written
            value = number
    return value, dtype


def _initial_state(value: Any) -> Any:
    """An initial state as RnnCellLayer reads it: 0, 0.0 and "zeros" are zeros, 1, 1.0 and "ones" ones (also per
    state in a dict, list or tuple); layers and anything else as they are."""
    if type(value) in (int, float) and value in (0, 1):
        return ("zeros", "ones")[int(value)]
    if type(value) is dict:
        return {key: _initial_state(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_initial_state(item) for item in value)
    return value


class Scalar:
    """A float operand of a binary op (rule "scalar-operands"), in place of a source name."""

    __slots__ = ("token",)

    def __init__(self, number: float):
        self.token = Tagged(("@scalar", number))


#: Rule "scalar-operands": the classes whose output dtype is their "dtype" option (float32 where not given, but a
#: constant's, which follows its value: see constant_value), and those whose output has their sources' dtype where
#: they have no "dtype" or "out_type" (an eval only as a scalar operation; a reduce of FLOAT_MODES), each read off
#: returnn/tf/layers/basic.py.
DTYPE_CLASSES = frozenset({"constant", "cast", "variable", "random"})
FLOAT32_KEEPING = frozenset(
    "activation combine concat copy dot dropout eval expand_dims layer_norm linear merge_dims norm pad reduce "
    "reinterpret_data slice softmax_over_spatial split split_dims squeeze window".split()
)
FLOAT_MODES = frozenset({"sum", "mean", "max", "min", "logsumexp"})
SCALAR_KINDS = frozenset(SCALAR_OPERATORS.values()) | frozenset(SCALAR_FUNCTIONS.values())
SCALAR_CLASSES = frozenset({"eval", "combine"})  # the classes of the layers rule "scalar-operands" looks at
EVAL_OPTIONS = frozenset({"class", "eval", "from"})  # their effective options, if the rule applies
COMBINE_OPTIONS = frozenset({"class", "kind", "from"})

_UNSIGNED = r"(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)"  # as str(float) writes a finite float
_FLOAT = rf"-?{_UNSIGNED}"  # as the right operand; on the left "-2.0 ** x" would be -(2.0 ** x)
_OPERATOR = "|".join(re.escape(op) for op in sorted(SCALAR_OPERATORS, key=len, reverse=True))
_FUNCTION = "|".join(re.escape(fn) for fn in SCALAR_FUNCTIONS)
_SCALAR_EVALS = (  # (pattern, the kinds of its op, whether the source is the first operand)
    (re.compile(rf"source\(0\) (?P<op>{_OPERATOR}) (?P<number>{_FLOAT})"), SCALAR_OPERATORS, True),
    (re.compile(rf"(?P<number>{_UNSIGNED}) (?P<op>{_OPERATOR}) source\(0\)"), SCALAR_OPERATORS, False),
    (re.compile(rf"(?P<op>{_FUNCTION})\(source\(0\), (?P<number>{_FLOAT})\)"), SCALAR_FUNCTIONS, True),
    (re.compile(rf"(?P<op>{_FUNCTION})\((?P<number>{_FLOAT}), source\(0\)\)"), SCALAR_FUNCTIONS, False),
)


def scalar_eval(code: str) -> Optional[tuple[str, float, bool]]:
    """(combine kind, the float, whether the source is the first operand) of eval code that applies one binary op to
    its source and a float literal, as returnn_common writes it; else None."""
    for pattern, kinds, first in _SCALAR_EVALS:
        found = pattern.fullmatch(code)
        if found is not None:
            return kinds[found.group("op")], float(found.group("number")), first
    return None

"""Which code in a net dict the graph hash reads completely: code that can neither name a layer nor make a TF variable
nor draw random numbers in any way the hash does not see (rule "layer-names", denied by default).

RETURNN evaluates an eval layer's code with ``source``, ``self``, ``tf``, everything of ``returnn.tf.util.basic`` and
the layer's ``eval_locals`` in scope (EvalLayer, CombineLayer._op_kind_eval), and an activation with a call in it as
``lambda x: <code>`` with ``tf`` (get_activation_function). Through ``self`` code reaches every layer, through
``tf.compat.v1.get_variable`` it makes variables named after its layer, and a string it computes (``'p' + '1'``) may
be a layer's name that no search of its words finds. So code is read completely only if it is an expression of
literals, operators and calls of its sources and of the pure TF functions below (whose names the hash ties as any
string's); all other code makes every name count."""

from __future__ import annotations

import ast
import functools
from typing import Any, Iterable

#: TF functions that compute from their arguments only: no variables, no randomness, no names, no side effects.
_PURE = frozenset(
    "abs add add_n argmax argmin cast ceil clip_by_value concat cos cosh cumsum divide einsum equal erf exp "
    "expand_dims expm1 floor floordiv floormod gather greater greater_equal identity less less_equal log log1p "
    "log_sigmoid log_softmax logical_and logical_not logical_or matmul maximum minimum multiply negative not_equal "
    "ones_like pow reciprocal reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum reshape round "
    "rsqrt sigmoid sign sin sinh softmax softplus sqrt square squared_difference squeeze stack stop_gradient subtract "
    "tanh tile transpose truediv where zeros_like".split()
)
_PURE_NN = frozenset("elu gelu leaky_relu log_softmax relu relu6 selu sigmoid silu softmax softplus swish tanh".split())
#: Dotted names code may call, and the dtypes it may name.
_CALLS = frozenset(
    {f"tf.{name}" for name in _PURE} | {f"tf.math.{name}" for name in _PURE} | {f"tf.nn.{name}" for name in _PURE_NN}
)
_DTYPES = frozenset(f"tf.{name}" for name in "bfloat16 bool float16 float32 float64 int32 int64".split())
_OPERATORS = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
_STRUCTURE = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Tuple, ast.List)
_SLICING = (ast.Subscript, ast.Slice)

#: The names eval code and activation code read: their sources, and "x" in an activation (``lambda x: <code>``).
_INPUTS = {"eval": frozenset({"source"}), "activation": frozenset({"x"})}


def is_code(key: str, value: Any) -> bool:
    """Whether an option's value is code: eval's, or an activation with a call in it (get_activation_function)."""
    return key == "eval" or (key == "activation" and type(value) is str and "(" in value)


def code_read_completely(desc: dict[str, Any], key: str) -> bool:
    """Whether the code of option ``key`` of a layer's ``desc`` ("eval", or "activation") is read completely (also
    for no code there: an activation by its function's name)."""
    if key not in desc or not is_code(key, desc[key]):
        return True
    code = desc[key]
    if type(code) is not str:  # a function: read by no one
        return False
    local = desc.get("eval_locals") or {} if key == "eval" else {}
    return type(local) is dict and reads_completely(code, _INPUTS[key], map(str, local))


def reads_completely(code: str, inputs: frozenset[str], values: Iterable[str] = ()) -> bool:
    """Whether ``code`` is an expression of ``inputs`` (called as ``source(<int>)`` where that is the input), the
    names ``values`` (eval_locals keys) as plain values, literals, operators and calls of pure TF functions."""
    return _reads_completely(code, inputs, frozenset(values))


@functools.lru_cache(maxsize=4096)
def _reads_completely(code: str, inputs: frozenset[str], values: frozenset[str]) -> bool:
    if not values.isdisjoint({"tf", "source", "x"}):  # a local shadows what the code calls
        return False
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return _expression(tree, inputs, values)


def _expression(node: ast.AST, inputs: frozenset[str], values: frozenset[str]) -> bool:
    if isinstance(node, ast.Call):
        return _call(node, inputs, values)
    if isinstance(node, ast.Constant):  # a string too: no call code may make reads a layer by its name
        return True
    if isinstance(node, ast.Name):
        return (node.id in inputs and node.id != "source") or node.id in values
    if isinstance(node, ast.Attribute):
        return _dotted(node) in _DTYPES
    if isinstance(node, (*_STRUCTURE, *_SLICING, *_OPERATORS)):
        return all(_expression(child, inputs, values) for child in ast.iter_child_nodes(node))
    return False


def _call(node: ast.Call, inputs: frozenset[str], values: frozenset[str]) -> bool:
    if isinstance(node.func, ast.Name) and node.func.id == "source" and "source" in inputs:
        return (
            len(node.args) == 1
            and type(getattr(node.args[0], "value", None)) is int
            and all(keyword.arg == "auto_convert" for keyword in node.keywords)
            and all(type(getattr(keyword.value, "value", None)) is bool for keyword in node.keywords)
        )
    if _dotted(node.func) not in _CALLS:
        return False
    arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
    return all(keyword.arg is not None for keyword in node.keywords) and all(
        _expression(argument, inputs, values) for argument in arguments
    )


def _dotted(node: ast.AST) -> str:
    """``tf.math.exp`` for that attribute chain, "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) and parts else ""

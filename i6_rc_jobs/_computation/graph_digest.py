"""A captured graph (``torch.export``'s ``ExportedProgram``) as a digest that names what it computes, not how the code
that made it was spelled: each node is hashed by its op, its arguments (other nodes by their hashes, constants by
value) and its output's shape and dtype, from the outputs back (a Merkle DAG), so that independent operations traced
in another order, and nodes whose results nothing uses, leave the digest as it was. Names that count: the
parameters' and buffers' (a checkpoint's keys). Random ops are chained in the order they run (the order in which they
draw from the generator changes what they draw). Assertions on sizes do not count here: the capture checks them over
the declared ranges (:mod:`.asserts`)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

#: Ops whose two operands can swap without changing a bit of the result (IEEE addition and multiplication are
#: commutative, broadcasting and type promotion are symmetric): ``x + y`` and ``y + x`` are one node.
COMMUTATIVE = frozenset({"aten.add.Tensor", "aten.mul.Tensor"})
#: The ops whose node is a check on sizes or metadata, not a computation.
CHECKS = ("aten._assert_scalar.default", "aten._assert_tensor_metadata.default", "aten.sym_constrain_range_for_size")


def _sha(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


#: A size symbol of torch's shape environment in the text of an expression.
_SYMBOL = re.compile(r"\b[su]\d+\b")


def tensor_digest(tensor: Any) -> str:
    """A tensor's dtype, shape and bytes."""
    import torch

    data = tensor.detach().to("cpu").contiguous()
    raw = data.view(torch.uint8) if data.dim() else data.reshape(1).view(torch.uint8)
    return f"{str(data.dtype).removeprefix('torch.')}{list(data.shape)}:{hashlib.sha256(raw.numpy().tobytes()).hexdigest()}"


def op_name(target: Any) -> str:
    """An op by its qualified name (``aten.mm.default``, ``operator.mul``), never by the address of a function."""
    name = getattr(target, "name", None)
    if callable(name):  # an OpOverload: "aten::mm.default"
        return str(target).replace("::", ".")
    module = getattr(target, "__module__", None) or ""
    return f"{module}.{getattr(target, '__qualname__', repr(target))}".removeprefix("_operator.")


class GraphDigest:
    """The digest of one exported program, and a listing of its nodes (``op(args) -> shape dtype``, references by
    the op they come from) that says which op, shape or constant two digests differ by. ``symbols`` renames the
    size symbols of the capture to the names of the dims they stand for (``s57`` -> ``T``); ``prefix`` is taken
    from the parameters' names (those of the module that wraps the model)."""

    def __init__(self, program: Any, symbols: dict[str, str], prefix: str = ""):
        self._symbols = symbols
        self._hashes: dict[Any, str] = {}
        self._labels: dict[Any, str] = {}
        self.listing: list[str] = []
        signature = program.graph_signature
        inputs = {spec.arg.name: spec for spec in signature.input_specs if hasattr(spec.arg, "name")}
        graph = program.graph_module.graph
        user_input = 0
        chain = "start"
        for node in graph.nodes:
            if node.op == "placeholder":
                spec = inputs[node.name]
                kind = spec.kind.name.lower()
                if kind == "user_input":
                    what = f"input {user_input}"
                    user_input += 1
                elif kind == "constant_tensor":
                    what = f"constant {tensor_digest(program.constants[spec.target])}"
                else:
                    what = f"{kind} {spec.target.removeprefix(prefix)}"
                self._node(node, what, [], None)
            elif node.op == "get_attr":
                self._node(node, f"attribute {self._attribute(program.graph_module, node.target)}", [], None)
            elif node.op == "call_function":
                name = op_name(node.target)
                shown = [self._shown(a) for a in node.args]
                shown += [f"{k}={self._shown(v)}" for k, v in sorted(node.kwargs.items())]
                args = [self._value(a) for a in node.args] + [
                    f"{k}={self._value(v)}" for k, v in sorted(node.kwargs.items())
                ]
                if name in COMMUTATIVE and not node.kwargs:
                    args.sort()
                if _draws_random(node.target):
                    args.append(f"after {chain}")
                self._node(node, name, args, ", ".join(shown))
                if _draws_random(node.target):
                    chain = self._hashes[node]
            elif node.op == "output":
                outputs = [self._value(a) for a in node.args]
                kinds = [
                    f"{spec.kind.name.lower()} {(spec.target or '').removeprefix(prefix)}".rstrip()
                    for spec in signature.output_specs
                ]
                self.outputs = {"values": outputs, "kinds": kinds, "random": chain}
            else:
                raise ValueError(f"an exported graph holds a node {node.op!r} ({node.name}) that is not hashed")
        self.digest = _sha({"outputs": self.outputs, "effects": self._effects(graph)})

    def _effects(self, graph: Any) -> list[str]:
        """Nodes that nothing uses and that have an effect (torch's ``is_impure``) other than a check, in the order
        they run: what the outputs do not show, the digest keeps."""
        return [
            self._hashes[node]
            for node in graph.nodes
            if node.op == "call_function" and not node.users and node.is_impure() and op_name(node.target) not in CHECKS
        ]

    def _node(self, node: Any, what: str, args: list[str], shown: Any) -> None:
        """Hashes the node; lists it (``shown``: its arguments as read, None for an input) unless it is a check."""
        out = self._meta(node.meta.get("val"))
        self._hashes[node] = _sha([what, args, out])
        self._labels[node] = what
        if shown is None:
            self.listing.append(f"{what} -> {out}")
        elif what not in CHECKS:
            self.listing.append(f"{what}({shown}) -> {out}")

    def _shown(self, value: Any) -> str:
        """An argument as the listing shows it: a node by what it is (its op, or which input or parameter)."""
        import torch.fx

        if isinstance(value, torch.fx.Node):
            return self._labels[value]
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(self._shown(v) for v in value) + "]"
        if isinstance(value, float):
            return repr(value)
        return value if isinstance(value, str) else self._value(value)

    def _value(self, value: Any) -> str:
        import torch.fx

        if isinstance(value, torch.fx.Node):
            return self._hashes[value]
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self._value(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {self._value(v)}" for k, v in sorted(value.items())) + "}"
        if isinstance(value, float):
            return value.hex()
        if isinstance(value, (bool, int, str, type(None))):
            return repr(value)
        return self._plain(value)

    def _plain(self, value: Any) -> str:
        """A dtype, device, layout, memory format, slice or size expression by its text; anything else is refused
        (its text might hold an address)."""
        import torch

        if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format, slice)):
            return str(value)
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return self._expr(value)
        raise ValueError(f"an exported graph holds an argument of type {type(value).__name__} that is not hashed")

    def _expr(self, value: Any) -> str:
        """A size expression with the capture's symbols named by their dims (``(T//4)``)."""
        return _SYMBOL.sub(lambda m: self._symbols.get(m.group(0), m.group(0)), str(value.node.expr))

    def _meta(self, value: Any) -> str:
        import torch

        if isinstance(value, torch.Tensor):
            shape = ", ".join(str(s) if isinstance(s, int) else self._expr(s) for s in value.shape)
            return f"[{shape}] {str(value.dtype).removeprefix('torch.')}"
        if isinstance(value, (list, tuple)):
            return "(" + ", ".join(self._meta(v) for v in value) + ")"
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return f"size {self._expr(value)}"
        return type(value).__name__ if value is not None else "-"

    def _attribute(self, module: Any, target: str) -> str:
        import torch

        value: Any = module
        for part in target.split("."):
            value = getattr(value, part)
        if isinstance(value, torch.fx.GraphModule):
            raise ValueError(f"an exported graph holds a subgraph ({target}: control flow) that is not hashed")
        if isinstance(value, torch.Tensor):
            return tensor_digest(value)
        raise ValueError(f"an exported graph holds an attribute {target} of type {type(value).__name__}")


def size_symbols(program: Any, axes: dict[tuple[int, int], str]) -> dict[str, str]:
    """The size symbols of a capture (``s57``) by the name of the dim each stands for; ``axes`` maps (user input,
    axis) to the dim name."""
    names = [spec.arg.name for spec in program.graph_signature.input_specs if spec.kind.name == "USER_INPUT"]
    found = {}
    for node in program.graph_module.graph.nodes:
        if node.op == "placeholder" and node.name in names:
            for axis, size in enumerate(node.meta["val"].shape):
                if not isinstance(size, int) and (names.index(node.name), axis) in axes:
                    found[str(size.node.expr)] = axes[(names.index(node.name), axis)]
    return found


def _draws_random(target: Any) -> bool:
    import torch

    return torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())

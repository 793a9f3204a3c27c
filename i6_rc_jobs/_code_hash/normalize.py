"""The code of a Python source as its syntax tree, without what cannot change what it computes: comments and
formatting (the tree has neither), docstrings and other statements that are only a string, and annotations that no
code reads (of function parameters and returns, of local variables). Annotations of module and class attributes are
kept: dataclasses, NamedTuple, TypedDict and the like read them, and they decide which fields there are.

Each top-level function and class, and each method, gets a digest of its own, so that a change can be named."""

from __future__ import annotations

import ast
import hashlib
import sys

#: What the dump of a syntax tree depends on besides the code: its node types change between Python versions.
DUMP_FORMAT = f"ast-{sys.version_info[0]}.{sys.version_info[1]}-v1"


class _Strip(ast.NodeTransformer):
    """Removes docstrings, string statements and unread annotations from a tree."""

    def __init__(self) -> None:
        self.in_function = 0

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        kept = [self.visit(s) for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        return kept or [ast.Pass()]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, name, self._body(value))
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody") and isinstance(value, list):
                continue
            if isinstance(value, list):
                setattr(node, name, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, name, self.visit(value))
        return node

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        node.returns = None
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if arg is not None:
                arg.annotation = None
                arg.type_comment = None
        node.type_comment = None
        self.in_function += 1
        try:
            return self.generic_visit(node)
        finally:
            self.in_function -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        outer, self.in_function = self.in_function, 0  # a class in a function: its attributes' annotations count
        try:
            return self.generic_visit(node)
        finally:
            self.in_function = outer

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if self.in_function:  # never evaluated nor stored; the name stays local, as the statement makes it
            node.annotation = ast.Constant(None)
        return self.generic_visit(node)


def _dump(node: ast.AST) -> bytes:
    return ast.dump(node, annotate_fields=False, include_attributes=False).encode()


def _digest(data: bytes) -> str:
    return hashlib.sha256(DUMP_FORMAT.encode() + b"\0" + data).hexdigest()


def normalized(source: str | bytes, filename: str = "<source>") -> ast.Module:
    """The source's tree without comments, formatting, docstrings and unread annotations."""
    tree = _Strip().visit(ast.parse(source, filename))
    assert isinstance(tree, ast.Module)
    return tree


def code_digest(source: str | bytes, filename: str = "<source>") -> str:
    """The SHA-256 of the source's code as :func:`normalized` has it."""
    return _digest(_dump(normalized(source, filename)))


def definition_digests(source: str | bytes, filename: str = "<source>") -> dict[str, str]:
    """Digests of the module's top-level functions and classes and of the classes' methods, by qualified name, and of
    the rest of its top-level code as ``<module>``: what a changed module digest is narrowed down to."""
    tree = normalized(source, filename)
    digests: dict[str, str] = {}
    rest: list[bytes] = []
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            digests[statement.name] = _digest(_dump(statement))
            if isinstance(statement, ast.ClassDef):
                for inner in statement.body:
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        digests[f"{statement.name}.{inner.name}"] = _digest(_dump(inner))
        else:
            rest.append(_dump(statement))
    digests["<module>"] = _digest(b"\n".join(rest))
    return digests

"""The code of a Python source as its syntax tree, without what cannot change what it computes: comments and
formatting (the tree has neither), docstrings and other statements that are only a string, and annotations that no
code reads (of function parameters and returns, of local variables). Annotations of module and class attributes are
kept: dataclasses, NamedTuple, TypedDict and the like read them, and they decide which fields there are.

What tools rewrite without changing what the code does counts once, in one spelling: the order of a run of imports
(isort), imports of ``typing`` that only removed annotations read, ``if TYPE_CHECKING:`` blocks, and pyupgrade's
rewrites (``super(Model, self)``, ``class A(object)``, ``u"x"``, ``Optional[int]``, ``List[int]``).

Each top-level function and class, and each method, gets a digest of its own, so that a change can be named."""

from __future__ import annotations

import ast
import functools
import hashlib
import sys
from typing import Callable, Collection, NamedTuple, Optional

from i6_rc_jobs._code_hash import reachable
from i6_rc_jobs._code_hash.reachable import bindings, builtin, resolves, uses

#: What the dump of a syntax tree depends on besides the code: its node types change between Python versions.
DUMP_FORMAT = f"ast-{sys.version_info[0]}.{sys.version_info[1]}-v2"
#: Modules whose import runs no code of the setup's and binds nothing but what is imported from them.
_PURE_MODULES = ("typing", "typing_extensions", "collections.abc")
#: ``typing``'s aliases of the builtin generics, which subscripted mean the same in an annotation.
_GENERICS = {"List": "list", "Dict": "dict", "Tuple": "tuple", "Set": "set", "FrozenSet": "frozenset", "Type": "type"}
_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPES = (*_DEFINITION, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


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

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        node.kind = None  # u"x" is "x"
        return node


class _Annotation(ast.NodeTransformer):
    """Spells a kept annotation one way: ``Optional[X]``, ``Union[X, None]`` as ``X | None``, ``Union[X, Y]`` as
    ``X | Y``, ``List[X]`` as ``list[X]`` (each equal to the other at run time), where the names are ``typing``'s."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names

    def _typing(self, node: ast.expr) -> str:
        """The name in ``typing`` that ``node`` is, or ""."""
        if isinstance(node, ast.Name):
            name = self.names[node.id][0].rpartition(".")[2] if self.names.get(node.id) else ""
            return name if resolves(self.names, node.id, f"typing.{name}", f"typing_extensions.{name}") else ""
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return node.attr if resolves(self.names, node.value.id, "typing", "typing_extensions") else ""
        return ""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        name = self._typing(node.value)
        if name == "Optional":
            return _union([node.slice, ast.Constant(None)]) or node
        if name == "Union" and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) > 1:
            return _union(node.slice.elts) or node
        if name in _GENERICS and builtin(self.names, _GENERICS[name]):
            node.value = ast.Name(_GENERICS[name], ast.Load())
        return node


def _union(members: list[ast.expr]) -> Optional[ast.expr]:
    """``a | b | ...``; None if a member is a string (``"Model" | None`` fails where ``Optional["Model"]`` works)."""
    if any(isinstance(m, ast.Constant) and isinstance(m.value, str) for m in members):
        return None
    return functools.reduce(lambda left, right: ast.BinOp(left, ast.BitOr(), right), members)


def _upgrade(tree: ast.Module) -> None:
    """Undoes pyupgrade's rewrites where they provably mean the same: kept annotations in one spelling,
    ``class A(object)`` as ``class A``, ``super(A, self)`` in a method of a top-level class ``A`` as ``super()``."""
    names = bindings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            node.annotation = _Annotation(names).visit(node.annotation)
        if isinstance(node, ast.ClassDef) and not node.keywords and builtin(names, "object"):
            if len(node.bases) == 1 and isinstance(node.bases[0], ast.Name) and node.bases[0].id == "object":
                node.bases = []
    if not builtin(names, "super"):
        return
    for cls in tree.body:
        # The class as its name finds it at run time is the class the statement made: no decorator replaced it,
        # no metaclass, nothing else binds its name.
        if not isinstance(cls, ast.ClassDef) or cls.decorator_list or cls.keywords or len(names[cls.name]) != 1:
            continue
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parameters = [*method.args.posonlyargs, *method.args.args]
            if not parameters or len(bindings(method).get(parameters[0].arg, ())) != 1:
                continue  # no first parameter, or the method rebinds it
            for node in _own_scope(method.body):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "super"
                    and not node.keywords
                    and [a.id if isinstance(a, ast.Name) else None for a in node.args] == [cls.name, parameters[0].arg]
                ):
                    node.args = []


def _own_scope(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a function's body that run in its own scope (where ``super()`` finds the class and the first
    argument), not in a nested function, lambda, class or comprehension."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = [statement for statement in body if not isinstance(statement, _SCOPES)]
    while stack:
        node = stack.pop()
        found.append(node)
        stack += [child for child in ast.iter_child_nodes(node) if not isinstance(child, _SCOPES)]
    return found


def _each_body(tree: ast.AST, rewrite: Callable[[list[ast.stmt], ast.AST], list[ast.stmt]]) -> None:
    """Replaces every list of statements in ``tree`` (a module's, a function's, a branch's) by its rewrite."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, name, rewrite(value, node) or [ast.Pass()])


def _type_checking(test: ast.expr, names: dict[str, list[str]]) -> bool:
    """Whether ``test`` is ``typing.TYPE_CHECKING``, False wherever the code runs."""
    if isinstance(test, ast.Name):
        return resolves(names, test.id, "typing.TYPE_CHECKING", "typing_extensions.TYPE_CHECKING")
    return (
        isinstance(test, ast.Attribute)
        and test.attr == "TYPE_CHECKING"
        and isinstance(test.value, ast.Name)
        and resolves(names, test.value.id, "typing", "typing_extensions")
    )


def _imports(tree: ast.Module) -> None:
    """Drops ``if TYPE_CHECKING:`` blocks whose names no kept code reads, then the imports of ``typing`` (and such)
    that no kept code reads, and puts each run of consecutive imports in one order."""
    names, read = bindings(tree), uses(tree)

    def type_checking(body: list[ast.stmt], _: ast.AST) -> list[ast.stmt]:
        kept: list[ast.stmt] = []
        for statement in body:
            if isinstance(statement, ast.If) and _type_checking(statement.test, names):
                inside = sum((uses(s) for s in statement.body), uses(statement.test))
                if not any(read[name] > inside[name] for name in bindings(ast.Module(statement.body, []))):
                    kept += [s for s in statement.orelse if not isinstance(s, ast.Pass)]
                    continue
            kept.append(statement)
        return kept

    _each_body(tree, type_checking)
    read = uses(tree)
    if not reachable.dynamic(tree):  # (else a name may be read by a string the code computes)
        _each_body(tree, lambda body, owner: body if isinstance(owner, ast.ClassDef) else _unread(body, read))
    _each_body(tree, lambda body, owner: body if isinstance(owner, ast.Try) else _sorted_runs(body))


def _unread(body: list[ast.stmt], read: Collection[str]) -> list[ast.stmt]:
    """``body`` without the names imported from a pure module that nothing reads (a class's body binds
    attributes: not rewritten here)."""
    kept: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.ImportFrom) and not statement.level and statement.module in _PURE_MODULES:
            statement.names = [a for a in statement.names if a.name == "*" or (a.asname or a.name) in read]
        elif isinstance(statement, ast.Import):
            statement.names = [
                a
                for a in statement.names
                if a.name not in _PURE_MODULES or (a.asname or a.name.partition(".")[0]) in read
            ]
        if not isinstance(statement, (ast.Import, ast.ImportFrom)) or statement.names:
            kept.append(statement)
    return kept


def _sorted_runs(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with each import of several names split in one import per name, and each run of consecutive imports
    sorted, unless two of its imports bind one name to different things (then their order decides). (Not the body of
    a ``try``: where an import fails decides which others ran.)"""
    result: list[ast.stmt] = []
    run: list[ast.stmt] = []
    for statement in [*body, None]:
        if isinstance(statement, ast.Import):
            run += [ast.Import([alias]) for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom):
            run += [ast.ImportFrom(statement.module, [alias], statement.level) for alias in statement.names]
        else:
            bound: dict[str, set[str]] = {}
            for single in run:
                assert isinstance(single, (ast.Import, ast.ImportFrom))
                alias = single.names[0]
                if isinstance(single, ast.Import):
                    name, origin = alias.asname or alias.name.partition(".")[0], alias.asname and alias.name
                else:
                    name, origin = alias.asname or alias.name, f"{single.level}:{single.module}.{alias.name}"
                bound.setdefault(name, set()).add(origin or name)
            if "*" not in bound and all(len(origins) == 1 for origins in bound.values()):
                run.sort(key=_dump)
            result += run + ([statement] if statement else [])
            run = []
    return result


def _dump(node: ast.AST) -> bytes:
    return ast.dump(node, annotate_fields=False, include_attributes=False).encode()


def _digest(data: bytes) -> str:
    return hashlib.sha256(DUMP_FORMAT.encode() + b"\0" + data).hexdigest()


class ModuleCode(NamedTuple):
    """A module's code as it counts: its digest, the digests of its definitions that count (and of the rest of its
    top-level code, ``<module>``), and the names of the top-level functions and classes that count (None: the whole
    module, where nothing could be proven)."""

    digest: str
    definitions: dict[str, str]
    counted: Optional[list[str]]


def _normalized(source: str | bytes, filename: str, roots: Optional[Collection[str]]) -> tuple[ast.Module, bool]:
    tree = _Strip().visit(ast.parse(source, filename))
    assert isinstance(tree, ast.Module)
    _upgrade(tree)
    counted = None if roots is None else reachable.counted(tree, roots)
    if counted is not None:
        tree.body = [s for s in tree.body if not isinstance(s, _DEFINITION) or s.name in counted]
    _imports(tree)
    return tree, counted is not None


def normalized(source: str | bytes, filename: str = "<source>") -> ast.Module:
    """The source's tree without comments, formatting, docstrings and unread annotations, in one spelling of what
    tools rewrite alike."""
    return _normalized(source, filename, None)[0]


def code_digest(source: str | bytes, filename: str = "<source>") -> str:
    """The SHA-256 of the source's code as :func:`normalized` has it."""
    return _digest(_dump(normalized(source, filename)))


def definition_digests(source: str | bytes, filename: str = "<source>") -> dict[str, str]:
    """Digests of the module's top-level functions and classes and of the classes' methods, by qualified name, and of
    the rest of its top-level code as ``<module>``: what a changed module digest is narrowed down to."""
    return _definitions(normalized(source, filename))


def module_code(source: str | bytes, filename: str = "<source>", roots: Optional[Collection[str]] = None) -> ModuleCode:
    """The module's code as it counts when ``roots`` are its names used from outside (see :mod:`.reachable`): only
    the top-level functions and classes they reach, and all other top-level code; the whole module where that
    cannot be proven, or without ``roots``. Where all count, the digest is :func:`code_digest`'s."""
    tree, narrowed = _normalized(source, filename, roots)
    definitions = _definitions(tree)
    counted = sorted(name for name in definitions if name != "<module>" and "." not in name) if narrowed else None
    return ModuleCode(_digest(_dump(tree)), definitions, counted)


def _definitions(tree: ast.Module) -> dict[str, str]:
    digests: dict[str, str] = {}
    rest: list[bytes] = []
    for statement in tree.body:
        if isinstance(statement, _DEFINITION):
            digests[statement.name] = _digest(_dump(statement))
            if isinstance(statement, ast.ClassDef):
                for inner in statement.body:
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        digests[f"{statement.name}.{inner.name}"] = _digest(_dump(inner))
        else:
            rest.append(_dump(statement))
    digests["<module>"] = _digest(b"\n".join(rest))
    return digests


def setup_code(
    sources: dict[str, bytes], files: dict[str, str], packages: Collection[str], module: str, qualname: str
) -> dict[str, ModuleCode]:
    """The code of each of the setup's modules (name -> source, file) as it counts for the reference
    ``module.qualname``: narrowed to what the reference and the other modules reach (:func:`reachable.setup_roots`)."""
    roots = reachable.setup_roots(sources, packages, module, qualname)
    return {name: module_code(source, files[name], roots[name]) for name, source in sources.items()}

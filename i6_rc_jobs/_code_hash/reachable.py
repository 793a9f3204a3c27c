"""Which top-level functions and classes of a setup module a model can run: those its reference names, those the
setup's other modules import from the module, and, transitively, every one that counted code names (in a body, a
decorator, a default, a base class, a string). A function that nothing reaches is never called, so an edit of it
cannot change what the model computes. Where code may look names up by a computed string (``globals()``, ``eval``,
``sys.modules``, ``__getattr__`` of a module, ``import *``), nothing can be proven: the whole module counts."""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from typing import Collection, Iterator, Optional

#: Names through which code finds a module's names by a string it computes, or another module's.
_LOOKS_ELSEWHERE = frozenset({"eval", "exec", "__import__", "importlib", "inspect", "pkgutil", "runpy", "gc"})
#: Attributes through which code reaches a module's namespace without naming the module.
_NAMESPACE_ATTRIBUTES = frozenset({"modules", "_getframe", "__globals__", "f_globals", "f_locals", "__builtins__"})
#: Names through which a module's own names are found by a string it computes, or exported as a list of strings.
_LOOKS_AT_ITSELF = frozenset({"globals", "vars", "locals", "dir", "__all__", "__getattr__", "__dir__"})
_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def bindings(tree: ast.AST) -> dict[str, list[str]]:
    """Every binding of each name anywhere in ``tree``, by where it comes from: ``typing.Optional`` for
    ``from typing import Optional``, ``typing`` for ``import typing``, ``a`` for ``import a.b``, "" for anything else
    (an assignment, a definition, a parameter); ``*`` names a star import (which may bind any name)."""
    found: dict[str, list[str]] = defaultdict(list)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                found[alias.asname or top].append(alias.name if alias.asname else top)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                found[alias.asname or alias.name].append("" if node.level else f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found[node.id].append("")
        elif isinstance(node, (*_DEFINITION, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            found[node.name].append("")
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found[node.rest].append("")
        elif isinstance(node, ast.arg):
            found[node.arg].append("")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                found[name].append("")
    return found


def resolves(names: dict[str, list[str]], name: str, *origins: str) -> bool:
    """Whether every binding of ``name`` in the module is an import of one of ``origins`` (and there is no star
    import): then the name is that object wherever it is read."""
    return "*" not in names and bool(names.get(name)) and set(names[name]) <= set(origins)


def builtin(names: dict[str, list[str]], name: str) -> bool:
    """Whether ``name`` is the builtin of that name throughout the module (nothing binds it)."""
    return "*" not in names and name not in names


def uses(tree: ast.AST) -> Counter[str]:
    """The names ``tree`` reads or deletes, declares global, or spells in a string (``getattr(self, "step")``)."""
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            found[node.id] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(_IDENTIFIER.findall(node.value))
    return found


def looks_elsewhere(tree: ast.AST) -> bool:
    """Whether the code may find a module's names by a computed string: through ``sys.modules``, ``importlib``, a
    frame or a function's globals."""
    names = bindings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _LOOKS_ELSEWHERE:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _NAMESPACE_ATTRIBUTES:
            if node.attr != "modules" or (isinstance(node.value, ast.Name) and "sys" in names.get(node.value.id, ())):
                return True  # (``self.modules()`` of a torch module is no module's namespace)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(module.partition(".")[0] in _LOOKS_ELSEWHERE | {"builtins"} for module in modules):
                return True
            if isinstance(node, ast.ImportFrom) and node.module == "sys":
                return any(alias.name in _NAMESPACE_ATTRIBUTES | {"*"} for alias in node.names)
    return False


def dynamic(tree: ast.AST) -> bool:
    """Whether the module may read one of its own names by a string it computes (or lets others do so)."""
    return looks_elsewhere(tree) or any(
        (isinstance(node, ast.Name) and node.id in _LOOKS_AT_ITSELF)
        or (isinstance(node, _DEFINITION) and node.name in _LOOKS_AT_ITSELF)
        or (isinstance(node, ast.Constant) and node.value == "__all__")
        for node in ast.walk(tree)
    )


def counted(tree: ast.Module, roots: Collection[str]) -> Optional[frozenset[str]]:
    """The names of the top-level functions and classes of ``tree`` (normalized) that count when ``roots`` are the
    module's names used from outside; None if that cannot be proven (the whole module counts). A definition counts
    if it is reached from the roots or from the module's other top-level statements, if defining it may run code of
    the setup (a decorator, a default that calls, a base class that is not known to do nothing), or if its name is
    bound elsewhere too."""
    if dynamic(tree):
        return None
    names = bindings(tree)
    definitions: dict[str, list[ast.stmt]] = defaultdict(list)
    bound_otherwise = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    for statement in tree.body:
        if isinstance(statement, _DEFINITION):
            definitions[statement.name].append(statement)
        else:
            bound_otherwise.update(bindings(statement))
    classes = {
        name: found[0]
        for name, found in definitions.items()
        if isinstance(found[0], ast.ClassDef) and len(found) == 1 and name not in bound_otherwise
    }
    todo = [name for name in roots if name in definitions]
    for statement in tree.body:
        if not isinstance(statement, _DEFINITION):
            todo += [name for name in uses(statement) if name in definitions]
        elif (
            len(definitions[statement.name]) > 1
            or statement.name in bound_otherwise
            or not _defining_runs_nothing(statement, names, classes)
        ):
            todo.append(statement.name)
    reached: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            for found in definitions[name]:
                todo += [used for used in uses(found) if used in definitions and used not in reached]
    return frozenset(reached)


def setup_roots(
    sources: dict[str, bytes], packages: Collection[str], module: str, qualname: str
) -> dict[str, Optional[set[str]]]:
    """For each of the setup's modules (name -> source), the names used from outside it: the reference's first
    name in its module, the names the setup's modules import from it or read as attributes of it; None where the
    module object itself is passed on, star-imported, or any module may look names up by a computed string."""
    roots: dict[str, Optional[set[str]]] = {name: set() for name in sources}
    _add(roots, module, qualname.partition(".")[0])
    for name, source in sources.items():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return dict.fromkeys(sources)
        if looks_elsewhere(tree):
            return dict.fromkeys(sources)
        package = name if name in packages else name.rpartition(".")[0]
        aliases: dict[str, set[str]] = defaultdict(set)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    aliases[alias.asname or alias.name.partition(".")[0]].add(
                        alias.name if alias.asname else alias.name.partition(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, package)
                for alias in node.names:
                    if alias.name == "*":
                        _whole(roots, base)
                    else:
                        _add(roots, base, alias.name)
                        aliases[alias.asname or alias.name].add(f"{base}.{alias.name}")
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in aliases:
                for target in aliases[node.id]:
                    _add_chain(roots, target, node, parents)
    return roots


def _add_chain(roots: dict[str, Optional[set[str]]], target: str, node: ast.expr, parents: dict) -> None:
    """Roots of what ``node`` (a name bound to ``target``) is followed by: ``a.b.f`` makes ``b`` a root of ``a`` and
    ``f`` one of ``a.b``; a module used otherwise (passed on, ``getattr``) counts whole."""
    while isinstance(parents.get(node), ast.Attribute):
        node = parents[node]
        assert isinstance(node, ast.Attribute)
        if node.attr.startswith("__"):  # its namespace (``__dict__``) or machinery: any name may be read
            break
        _add(roots, target, node.attr)
        target = f"{target}.{node.attr}"
    _whole(roots, target)


def _whole(roots: dict[str, Optional[set[str]]], module: str) -> None:
    if module in roots:
        roots[module] = None


def _add(roots: dict[str, Optional[set[str]]], module: str, name: str) -> None:
    found = roots.get(module)
    if found is not None:
        found.add(name)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` imports from, by absolute name."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))


def _pure(node: Optional[ast.expr], names: dict[str, list[str]]) -> bool:
    """Whether evaluating ``node`` runs none of the setup's code: constants, names, attributes, displays of them,
    arithmetic on constants, ``dataclasses.field`` of them."""
    if node is None or isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, ast.Attribute):
        return _pure(node.value, names)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_pure(e, names) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_pure(e, names) for e in [*node.keys, *node.values])
    if isinstance(node, (ast.UnaryOp, ast.BinOp)):
        return all(isinstance(e, (ast.Constant, ast.UnaryOp, ast.BinOp)) and _pure(e, names) for e in _operands(node))
    if isinstance(node, ast.Call) and _is(node.func, names, "dataclasses.field"):
        return all(_pure(e, names) for e in [*node.args, *(k.value for k in node.keywords)])
    return False


def _operands(node: ast.UnaryOp | ast.BinOp) -> list[ast.expr]:
    return [node.operand] if isinstance(node, ast.UnaryOp) else [node.left, node.right]


def _is(node: ast.expr, names: dict[str, list[str]], origin: str) -> bool:
    """Whether ``node`` is ``origin`` (``module.name``) as the module's imports bind it."""
    module, _, attribute = origin.rpartition(".")
    if isinstance(node, ast.Name):
        return resolves(names, node.id, origin)
    if isinstance(node, ast.Attribute) and node.attr == attribute:
        return (
            isinstance(node.value, ast.Name)
            and resolves(names, node.value.id, module)
            or _is(node.value, names, module)
        )
    return False


def _defining_runs_nothing(
    node: ast.stmt, names: dict[str, list[str]], classes: dict[str, ast.ClassDef], in_class: bool = False
) -> bool:
    """Whether executing the definition runs none of the setup's code: no decorator (but ``dataclass``, and in a
    class ``staticmethod``, ``classmethod``, ``property``), pure defaults, and for a class no metaclass, bases that
    are ``object``, ``torch.nn.Module`` or such classes of the module without ``__init_subclass__``, a body of such
    definitions and pure assignments."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        allowed = ("staticmethod", "classmethod", "property") if in_class else ()
        return all(
            (isinstance(d, ast.Name) and d.id in allowed and builtin(names, d.id))
            or (
                in_class
                and isinstance(d, ast.Attribute)
                and isinstance(d.value, ast.Name)
                and d.attr in ("setter", "getter", "deleter")
            )
            for d in node.decorator_list
        ) and all(_pure(d, names) for d in [*node.args.defaults, *node.args.kw_defaults])
    if not isinstance(node, ast.ClassDef) or node.keywords:
        return False
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        if not _is(call.func if call else decorator, names, "dataclasses.dataclass") or (
            call and (call.args or not all(_pure(k.value, names) for k in call.keywords))
        ):
            return False
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            parent = classes[base.id]
            hooks = {s.name for s in parent.body if isinstance(s, _DEFINITION)}
            if "__init_subclass__" in hooks or not _defining_runs_nothing(parent, names, classes):
                return False
        elif not (
            (isinstance(base, ast.Name) and base.id == "object" and builtin(names, "object"))
            or _is(base, names, "torch.nn.Module")
        ):
            return False
    return all(_runs_nothing(statement, names, classes) for statement in node.body)


def _runs_nothing(statement: ast.stmt, names: dict[str, list[str]], classes: dict[str, ast.ClassDef]) -> bool:
    if isinstance(statement, _DEFINITION):
        return _defining_runs_nothing(statement, names, classes, in_class=True)
    if isinstance(statement, ast.Assign):
        return all(isinstance(t, ast.Name) for t in statement.targets) and _pure(statement.value, names)
    if isinstance(statement, ast.AnnAssign):
        return isinstance(statement.target, ast.Name) and all(
            _pure(e, names) for e in [statement.value, *_annotation_parts(statement.annotation, names)]
        )
    return isinstance(statement, ast.Pass)


def _annotation_parts(node: ast.expr, names: dict[str, list[str]]) -> Iterator[ast.expr]:
    """The parts of an annotation whose evaluation could run code: what remains after taking apart subscripts of
    ``typing``'s and the builtins' generics and ``X | Y`` of them (an evaluated annotation runs their machinery only).
    """
    if isinstance(node, ast.Subscript) and _generic(node.value, names):
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for element in elements:
            yield from _annotation_parts(element, names)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        yield from _annotation_parts(node.left, names)
        yield from _annotation_parts(node.right, names)
    elif isinstance(node, ast.List):  # the parameters of a Callable[[...], ...]
        for element in node.elts:
            yield from _annotation_parts(element, names)
    else:
        yield node


def _generic(node: ast.expr, names: dict[str, list[str]]) -> bool:
    if isinstance(node, ast.Name) and node.id in ("list", "dict", "tuple", "set", "frozenset", "type"):
        return builtin(names, node.id)
    attribute = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return any(_is(node, names, f"{module}.{attribute}") for module in ("typing", "typing_extensions"))

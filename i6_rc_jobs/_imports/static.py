"""Finding ``import_`` calls without running the code (``ast``), and fetching the versions they name together with
those that the code of these versions names in turn: the whole import graph, into the cache, for nodes that cannot
reach the repositories. Only what the source says for certain is resolved: string literals, names of strings or tuples
of strings assigned once at module level, their items and the names unpacked from them; every other call is reported
with the reason, never guessed."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from i6_rc_jobs._imports.cache import RepoCache
from i6_rc_jobs._imports.errors import VersionedImportError
from i6_rc_jobs._imports.names import Repo, Version, check_path

#: Where ``import_`` is exported (the package, and the module path of 0.6 that still works): a call of a name imported
#: from either is a versioned import.
_IMPORT_ = {"i6_rc_jobs.import_", "i6_rc_jobs.imports.import_"}
_PARAMETERS = ("repo", "path", "version")


@dataclass(frozen=True)
class Call:
    """An ``import_(repo, path, version)`` call with arguments known from the source alone."""

    file: Path
    line: int
    repo: str
    path: str
    version: str


@dataclass(frozen=True)
class Unresolved:
    """A use of ``import_`` whose arguments the source alone does not tell, and why."""

    file: Path
    line: int
    reason: str


def find(file: Path) -> list[Union[Call, Unresolved]]:
    """The uses of ``import_`` in the Python source ``file``, in the order of the source."""
    try:
        tree = ast.parse(file.read_bytes(), str(file))
    except SyntaxError as e:
        return [Unresolved(file, e.lineno or 0, f"cannot be parsed: {e.msg}")]
    names, constants = _imported_names(tree), _constants(tree)
    calls = {id(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found: list[Union[Call, Unresolved]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and _qualified(node, names) in _IMPORT_:
            call = calls.get(id(node))
            found.append(
                _call(file, call, constants)
                if call is not None
                else Unresolved(file, node.lineno, "import_ is used other than called: calls through it are not found")
            )
    return sorted(found, key=lambda entry: entry.line)


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """name -> the dotted name it was imported as (``import a.b`` binds ``a``; relative imports are not followed)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    names["import_"] = f"{node.module}.import_"
                else:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _qualified(node: ast.expr, names: dict[str, str]) -> Optional[str]:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, names)
        return None if base is None else f"{base}.{node.attr}"
    return None


#: What a name stands for when the source alone tells it: a string, or a tuple of them.
Known = Union[str, tuple[str, ...]]


def _constants(tree: ast.Module) -> dict[str, Known]:
    """Names bound exactly once in the whole file, whatever the scope of a use: by ``NAME = <known>`` at module
    level, or by unpacking a known tuple anywhere (``repo, version = NAME``), where :func:`_known` tells what is
    known (a string, a tuple of them, a name or item of one)."""
    bindings: dict[str, int] = {}
    unpackings: list[ast.Assign] = []
    for node in ast.walk(tree):
        bound = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound = [node.id]
        elif isinstance(node, ast.arg):
            bound = [node.arg]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = [alias.asname or alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound = [node.name]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound = node.names
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            unpackings.append(node)
        for name in bound:
            bindings[name] = bindings.get(name, 0) + 1
    once = {name for name, count in bindings.items() if count == 1}
    constants: dict[str, Known] = {}
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id in once:
            value = _known(getattr(statement, "value", None), constants)
            if value is not None:
                constants[targets[0].id] = value
    for assign in unpackings:
        target = assign.targets[0]
        assert isinstance(target, ast.Tuple)  # (as collected)
        names = [name.id for name in target.elts if isinstance(name, ast.Name)]
        value = _known(assign.value, constants)
        if isinstance(value, tuple) and len(value) == len(names) == len(target.elts):
            constants.update((name, item) for name, item in zip(names, value) if name in once)
    return constants


def _known(node: Optional[ast.expr], constants: dict[str, Known]) -> Optional[Known]:
    """What ``node`` is, if the source alone tells it: a string literal, a tuple of known strings, a name in
    ``constants``, or an item of a known tuple by an int literal (``NAME[0]``, ``NAME[-1]``); None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Tuple):
        items = [_known(item, constants) for item in node.elts]
        texts = [item for item in items if isinstance(item, str)]
        return tuple(texts) if len(texts) == len(items) else None
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Subscript):
        value, index = _known(node.value, constants), _int_literal(node.slice)
        if isinstance(value, tuple) and index is not None and -len(value) <= index < len(value):
            return value[index]
    return None


def _int_literal(node: ast.expr) -> Optional[int]:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return value if type(value) is int else None


def _call(file: Path, call: ast.Call, constants: dict[str, Known]) -> Union[Call, Unresolved]:
    given = dict(zip(_PARAMETERS, call.args))
    given.update((keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg in _PARAMETERS)
    unknown = [keyword.arg or "**" for keyword in call.keywords if keyword.arg not in _PARAMETERS]
    if len(call.args) > 3 or unknown or any(isinstance(arg, ast.Starred) for arg in call.args) or len(given) != 3:
        return Unresolved(file, call.lineno, f"not import_(repo, path, version): {ast.unparse(call)}")
    texts = {}
    for parameter in _PARAMETERS:
        node = given[parameter]
        if parameter == "version" and isinstance(node, ast.Constant) and node.value is None:
            return Unresolved(file, call.lineno, "version None: development mode imports a working copy, no version")
        text = _known(node, constants)
        if not isinstance(text, str):
            reason = (
                "not a string literal, nor a name or item of a string (or tuple of them) assigned once at module level"
            )
            return Unresolved(file, call.lineno, f"{parameter} {ast.unparse(node)}: {reason}")
        texts[parameter] = text
    return Call(file, call.lineno, texts["repo"], texts["path"], texts["version"])


def python_files(path: Path) -> list[Path]:
    """``path`` itself if it is a file (of any name: a config may be ``.config``), else its ``*.py`` files."""
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


@dataclass(frozen=True)
class Fetched:
    """A version in the cache: its repository, full commit, version as first named, and file tree."""

    repo: Repo
    commit: str
    version: str
    tree: Path


@dataclass
class Graph:
    """What :func:`fetch_graph` found: the calls, the calls it could not resolve, errors as ``file:line: message``,
    and the versions now in the cache."""

    calls: list[Call] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    versions: dict[tuple[Repo, str], Fetched] = field(default_factory=dict)


def fetch_graph(files: list[Path], root: Path) -> Graph:
    """Finds the ``import_`` calls in ``files``, fetches their versions into the cache at ``root``, and does the same
    for every Python file of each version fetched (its code may call ``import_`` anywhere; relative imports can
    reach every file of it), and for every file a call imports as a module, until no new version turns up."""
    graph, pending, seen = Graph(), list(files), set(files)
    while pending:
        file = pending.pop(0)
        for entry in find(file):
            if isinstance(entry, Unresolved):
                graph.unresolved.append(entry)
                continue
            graph.calls.append(entry)
            try:
                fetched, target = _fetch(entry, root, graph.versions)
            except VersionedImportError as e:
                graph.errors.append(f"{entry.file}:{entry.line}: {e}")
                continue
            new = [target] if target.is_file() else []
            if (fetched.repo, fetched.commit) not in graph.versions:
                graph.versions[fetched.repo, fetched.commit] = fetched
                new += python_files(fetched.tree)
            new = [file for file in dict.fromkeys(new) if file not in seen]
            pending += new
            seen.update(new)
    return graph


def _fetch(call: Call, root: Path, known: dict[tuple[Repo, str], Fetched]) -> tuple[Fetched, Path]:
    """The version of ``call`` in the cache (fetched if need be), and the file or directory it imports."""
    repo, parts, version = Repo.parse(call.repo), check_path(call.path), Version.parse(call.version)
    tree, commit = RepoCache(root, repo).tree(version)
    target = tree.joinpath(*parts)
    if not target.exists():
        raise VersionedImportError(f"{repo} version {version}: no file or directory {call.path!r} in it")
    return known.get((repo, commit)) or Fetched(repo, commit, str(version), tree), target

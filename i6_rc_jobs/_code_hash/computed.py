"""``by_content(..., computation=Inputs.of(...))``: the hash of what a model computes instead of how its code is
spelled. The build captures the model (:mod:`i6_rc_jobs._computation`) and watches which lines of the setup's code
construction and the forward run. What the capture vouches for counts by its computation: the functions whose every
statement ran, and construction, as far as its effect is the parameters' start and the graph. What could run through
the model without having run keeps counting by its code (deny by default): a method of the model's classes that
never ran (``recognize``), a function the forward ran in part (a branch for another argument, another config), the
functions that never ran which those may call, and then construction too (what it sets may be read there); always,
the rest of each module's top-level code, the libraries' identities, the files, environment variables and config
options read. Where the capture is refused, the code hash counts, and the log says why in one line."""

from __future__ import annotations

import ast
import hashlib
import json
import os
from typing import Any, Callable, Iterator, NamedTuple, Union

from i6_rc_jobs._code_hash.fingerprint import CONSTRUCTION, CodeFingerprint, ComputedCode
from i6_rc_jobs._code_hash.normalize import definition_digests
from i6_rc_jobs._computation.fingerprint import ComputationFingerprint, NotCaptured, computation_fingerprint
from i6_rc_jobs._computation.inputs import Inputs

#: What the digest is made of; another format is another hash.
FORMAT = "computation 1"
#: Methods that only say what a module is (its printed form): never run by a forward, never part of what it computes.
DESCRIBING = frozenset({"extra_repr", "__repr__", "__str__"})


def captured(make: Callable[[], Any], inputs: Inputs, files: frozenset[str]) -> Union[ComputationFingerprint, str]:
    """The computation fingerprint of ``make()`` with ``inputs``, watching the lines the setup's ``files`` run; or
    why the capture was refused."""
    try:
        return computation_fingerprint(make, inputs, watched=files)
    except NotCaptured as e:
        return str(e)


def judged(
    capture: Union[ComputationFingerprint, str], fingerprint: CodeFingerprint, sources: dict[str, bytes]
) -> ComputedCode:
    """How the marker hashes, from its capture and its code (``fingerprint``, with the setup modules' ``sources``)."""
    if isinstance(capture, str):
        return ComputedCode(None, capture)
    files = {name: os.path.realpath(module["file"]) for name, module in fingerprint.modules.items()}
    definitions = {name: definition_digests(sources[name], files[name]) for name in sorted(files)}
    by_code = _by_code(capture, files, sources)
    kept = {
        name: {key: definitions[name][key] for key in ["<module>", *_keys(by_code, name, definitions[name])]}
        for name in sorted(files)
    }
    what = {
        "format": FORMAT,
        "computation": capture.digest,
        "modules": kept,
        **{key: value for key, value in fingerprint.to_json().items() if key not in ("modules", "digest")},
    }
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    return ComputedCode(capture, None, by_code, digest)


def _keys(by_code: dict[str, str], module: str, definitions: dict[str, str]) -> list[str]:
    """The keys of the module's definition digests that stand for its definitions counted by code: a method's own
    (``Model.recognize``), else the top-level definition that holds it."""
    keys = set()
    for name in by_code:
        owner, _, qualname = name.partition(":")
        if owner == module:
            parts = [part for part in qualname.split(".") if part != "<locals>"]
            keys.add(next(".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in definitions))
    return sorted(keys)


class _Function(NamedTuple):
    statements: frozenset[tuple[int, int]]  # the lines (first, last) of each statement that runs when it runs
    names: set[str]  # the identifiers and identifier-like strings it holds: what it may call


def _by_code(capture: ComputationFingerprint, files: dict[str, str], sources: dict[str, bytes]) -> dict[str, str]:
    """The setup's functions that count by their code, and why: the methods of the model's classes (its modules',
    and their bases') that did not run, the functions the forward ran with a line that did not run, the functions
    that never ran which those may call (by name, in any setup module: the capture vouches for a function whose
    every line ran), and then construction. A function that neither the model's classes hold nor such code may
    call cannot run through the model: it does not count (the code hash counts it, for code that imports it)."""
    forward_lines, construction_lines = capture.lines.get("forward", {}), capture.lines.get("construction", {})
    classes = set(capture.classes)
    functions: dict[str, _Function] = {}
    found: dict[str, str] = {}
    construction: list[str] = []
    never_ran: set[str] = set()
    top_level: set[str] = set()  # the names the modules' top-level code (run at import, not watched) holds
    for module, path in sorted(files.items()):
        forward, built = set(forward_lines.get(path, ())), set(construction_lines.get(path, ()))
        tree = ast.parse(sources[module], path)
        for statement in tree.body:
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                top_level |= _names(statement)
        for qualname, function in _functions(tree):
            name = f"{module}:{qualname}"
            if qualname.rpartition(".")[2] in DESCRIBING:
                continue
            functions[name] = function
            missed = sorted(span for span in function.statements if not _ran(span, forward | built))
            ran = len(missed) < len(function.statements)
            in_forward = any(_ran(span, forward) for span in function.statements)
            if not ran:
                never_ran.add(name)
            if not ran and name.rpartition(".")[0] in classes:
                found[name] = "not run by the capture"
            elif in_forward and missed:
                more = f", and {len(missed) - 1} more" if len(missed) > 1 else ""
                found[name] = f"line {missed[0][0]} not run by the capture{more}"
            elif ran and not in_forward:
                construction.append(name)
    pending: list[tuple[str, set[str]]] = [(name, functions[name].names) for name in found]
    if found:  # what import ran may be read by code that counts
        pending.append(("top-level code", top_level))
    while pending:
        caller, names = pending.pop()
        for name in sorted(never_ran - set(found)):
            if name.rpartition(".")[2].rpartition(":")[2] in names:
                found[name] = f"may be called by {caller}"
                pending.append((name, functions[name].names))
    if found:  # what construction sets may be read where the capture did not look
        found.update({name: CONSTRUCTION for name in construction if name not in found})
    return found


def _functions(tree: ast.Module) -> Iterator[tuple[str, _Function]]:
    """Each function of the module, by qualified name as Python gives it, with the lines of its statements that run
    when it runs (not its docstring, nor a ``raise``: a branch that only raises fails the job where it runs, it
    computes nothing else) and the names it holds."""
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _inner(statement, "")


def _inner(node: ast.AST, prefix: str) -> Iterator[tuple[str, _Function]]:
    if isinstance(node, ast.ClassDef):
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _inner(statement, f"{prefix}{node.name}.")
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        qualname = f"{prefix}{node.name}"
        statements: set[tuple[int, int]] = set()
        nested: list[ast.AST] = []
        _statements(node.body, statements, nested)
        yield qualname, _Function(frozenset(statements), _names(node))
        for inner in nested:
            yield from _inner(inner, f"{qualname}.<locals>.")


def _ran(span: tuple[int, int], lines: set[int]) -> bool:
    """Whether a statement ran: any of its lines did (Python reports a statement that spans lines at the line of
    its first instruction, which formatting moves)."""
    return any(line in lines for line in range(span[0], span[1] + 1))


def _span(statement: ast.stmt) -> tuple[int, int]:
    """A statement's lines, without the statements it holds: a compound statement's header (a decorated
    definition's from its first decorator)."""
    decorators = getattr(statement, "decorator_list", [])
    first = min([statement.lineno, *(d.lineno for d in decorators)])
    body = getattr(statement, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        return first, max(first, body[0].lineno - 1)
    return first, statement.end_lineno or statement.lineno


def _statements(body: list[ast.stmt], lines: set[tuple[int, int]], nested: list[ast.AST]) -> None:
    for index, statement in enumerate(body):
        if index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            if isinstance(statement.value.value, str):
                continue  # a docstring: no code
        if isinstance(statement, (ast.Raise, ast.Global, ast.Nonlocal)):
            continue
        lines.add(_span(statement))
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            nested.append(statement)
            continue
        for name in ("body", "orelse", "finalbody"):
            _statements(getattr(statement, name, []), lines, nested)
        for handler in getattr(statement, "handlers", []):
            _statements(handler.body, lines, nested)
        for case in getattr(statement, "cases", []):
            _statements(case.body, lines, nested)


def _names(node: ast.AST) -> set[str]:
    """The identifiers a function's code holds (names, attributes, and strings that are identifiers: ``getattr(self,
    "search")``), nested functions included."""
    found = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            found.add(inner.id)
        elif isinstance(inner, ast.Attribute):
            found.add(inner.attr)
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.isidentifier():
            found.add(inner.value)
    return found

"""``by_content(..., computation=Inputs.of(...))``: the hash of what a model computes instead of how its code is
spelled. The build captures the model (:mod:`i6_rc_jobs._computation`) and watches which lines of the setup's code
construction and the forward run. What the capture vouches for counts by its computation: the functions whose every
line ran in the forward, and construction, as far as its effect is the parameters' start and the graph. Everything
else the code hash counts keeps counting by its code (deny by default): a method the forward never calls
(``recognize``), a function with a branch the capture did not take (another argument, another config), and then
construction too (what it sets may be read there); the rest of each module's top-level code, the libraries'
identities, the files, environment variables and config options read. Where the capture is refused, the code hash
counts, and the log says why in one line."""

from __future__ import annotations

import ast
import hashlib
import json
import os
from typing import Any, Callable, Iterator, Optional, Union

from i6_rc_jobs._code_hash.fingerprint import CONSTRUCTION, CodeFingerprint, ComputedCode
from i6_rc_jobs._code_hash.normalize import ModuleCode
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
    capture: Union[ComputationFingerprint, str], fingerprint: CodeFingerprint, code: dict[str, ModuleCode]
) -> ComputedCode:
    """How the marker hashes, from its capture and its code (``fingerprint``, with each module's code as counted in
    ``code``)."""
    if isinstance(capture, str):
        return ComputedCode(None, capture)
    files = {name: os.path.realpath(module["file"]) for name, module in fingerprint.modules.items()}
    by_code = _by_code(capture.lines, files, code)
    kept = {
        name: {key: code[name].definitions[key] for key in ["<module>", *_keys(by_code, name, code[name])]}
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


def _keys(by_code: dict[str, str], module: str, code: ModuleCode) -> list[str]:
    """The keys of the module's definition digests that stand for its definitions counted by code: a method's own
    (``Model.recognize``), else the top-level definition that holds it."""
    keys = set()
    for name in by_code:
        owner, _, qualname = name.partition(":")
        if owner != module:
            continue
        parts = [part for part in qualname.split(".") if part != "<locals>"]
        key = next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in code.definitions))
        keys.add(key)
    return sorted(keys)


def _by_code(lines: dict[str, dict[str, list[int]]], files: dict[str, str], code: dict[str, ModuleCode]) -> dict:
    """The setup's functions that count by their code, and why."""
    forward_lines = lines.get("forward", {})
    construction_lines = lines.get("construction", {})
    found: dict[str, str] = {}
    construction: list[str] = []
    for module, path in sorted(files.items()):
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        counted = code[module].counted
        forward, built = set(forward_lines.get(path, ())), set(construction_lines.get(path, ()))
        for qualname, statements in _functions(tree, counted):
            name = f"{module}:{qualname}"
            if qualname.rpartition(".")[2] in DESCRIBING:
                continue
            if not statements & (forward | built):
                found[name] = "not run by the capture"
            elif statements & forward and statements - forward - built:
                missed = sorted(statements - forward - built)
                found[name] = f"line {missed[0]} not run by the capture" + (
                    f", and {len(missed) - 1} more" if len(missed) > 1 else ""
                )
            elif not statements & forward:
                construction.append(name)
    if found:  # what construction sets may be read where the capture did not look
        found.update({name: CONSTRUCTION for name in construction})
    return found


def _functions(tree: ast.Module, counted: Optional[list[str]]) -> Iterator[tuple[str, set[int]]]:
    """Each function of the counted top-level definitions (all where ``counted`` is None), by qualified name as
    Python gives it, with the lines of its statements that run when it runs (not its docstring, nor a ``raise``:
    a branch that only raises fails the job where it runs, it computes nothing else)."""
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if counted is None or statement.name in counted:
                yield from _inner(statement, "")


def _inner(node: ast.AST, prefix: str) -> Iterator[tuple[str, set[int]]]:
    if isinstance(node, ast.ClassDef):
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _inner(statement, f"{prefix}{node.name}.")
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        qualname = f"{prefix}{node.name}"
        statements: set[int] = set()
        nested: list[ast.AST] = []
        _statements(node.body, statements, nested)
        yield qualname, statements
        for inner in nested:
            yield from _inner(inner, f"{qualname}.<locals>.")


def _statements(body: list[ast.stmt], lines: set[int], nested: list[ast.AST]) -> None:
    for index, statement in enumerate(body):
        if index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            if isinstance(statement.value.value, str):
                continue  # a docstring: no code
        if isinstance(statement, (ast.Raise, ast.Global, ast.Nonlocal)):
            continue
        lines.add(statement.lineno)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            nested.append(statement)
            continue
        for name in ("body", "orelse", "finalbody"):
            _statements(getattr(statement, name, []), lines, nested)
        for handler in getattr(statement, "handlers", []):
            _statements(handler.body, lines, nested)
        for case in getattr(statement, "cases", []):
            _statements(case.body, lines, nested)

"""The builder that records a model's code, run in a build process (:mod:`i6_rc_jobs._builds`): it imports the
reference, constructs the model on torch's ``meta`` device (no memory, no computation), and fingerprints what was
loaded. The build records every file it read, so that the cache serves the fingerprint until one of them changes."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import os
import sys
import sysconfig
from typing import Any, Optional

from i6_rc_jobs._builds import record as build_record
from i6_rc_jobs._util.loaded_modules import module_file
from i6_rc_jobs._code_hash.fingerprint import DEFAULT_LIBRARIES, TOOLS, CodeFingerprint, RecordedCode
from i6_rc_jobs._code_hash.normalize import code_digest, definition_digests

#: What a code build's server imports before it forks builds: torch and this builder (RETURNN, imported by a model
#: that needs it, takes a tenth of a second: preloaded, it would be in every model's fingerprint).
PRELOAD = ("torch", "i6_rc_jobs._code_hash.record")


def resolve(module: str, qualname: str) -> Any:
    """The object ``module.qualname`` names (importing the module)."""
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise AttributeError(f"module {module!r} has no {qualname!r}: by_content names a missing object") from None
    return found


def recorded_code(
    module: str,
    qualname: str,
    args: tuple,
    kwargs: dict[str, Any],
    construct: Optional[bool],
    libraries: tuple[str, ...] = DEFAULT_LIBRARIES,
) -> RecordedCode:
    """The fingerprint of ``module.qualname``, with the sources it was made of: constructed with ``args`` and
    ``kwargs`` on the ``meta`` device if ``construct`` (None: if it is a class or arguments are given), else only
    imported; then every module that the setup's code imports inside a function (or anywhere) is imported too, as
    running the code would, and what does not import is recorded as absent."""
    opened_before = set(build_record.opened())
    target = resolve(module, qualname)
    if construct is None:
        construct = isinstance(target, type) or bool(args or kwargs)
    if construct:
        _construct(functools.partial(target, *args, **kwargs))
    absent = _import_what_the_code_imports(libraries)
    setup, loaded = _split(libraries)
    files = _files_read(set(build_record.opened()) - opened_before, set(setup.values()), loaded)
    modules, sources = {}, {}
    for name in sorted(setup):
        path = setup[name]
        with open(path, "rb") as f:
            source = f.read()
        sources[name] = source
        modules[name] = {
            "file": path,
            "digest": code_digest(source, path),
            "defs": definition_digests(source, path),
            "sha256": hashlib.sha256(source).hexdigest(),
            "package": hasattr(sys.modules[name], "__path__"),
        }
    identities = {name: identity(sys.modules[name]) for name in sorted(loaded)}
    fingerprint = CodeFingerprint(
        f"{module}.{qualname}", construct, modules, identities, absent=tuple(absent), files=files
    )
    return RecordedCode(fingerprint, sources)


def _files_read(opened: set[str], modules: set[str], libraries: set[str]) -> dict[str, str]:
    """The files that importing and constructing read besides code (a JSON of sizes, priors read with
    ``numpy.loadtxt``), with the SHA-256 of each: not the setup's modules (hashed as code), nor what lies in the
    installed packages, the libraries and the tools (counted by their identity, or not at all). Seen where the build
    records what it reads (a build process: :mod:`i6_rc_jobs._builds.record`)."""
    outside = _installed() + _roots(libraries)
    inputs, _ = build_record.looked_at()
    read = {}
    for path in sorted(opened & set(inputs)):
        if path not in modules and not os.path.realpath(path).startswith(outside):
            with open(path, "rb") as f:
                read[path] = hashlib.sha256(f.read()).hexdigest()
    return read


def _import_what_the_code_imports(libraries: tuple[str, ...]) -> list[str]:
    """Imports every module that the setup's loaded code imports anywhere (a function's body, a ``try``), until the
    setup's modules import nothing new: what the job may run counts, not only what importing ran. Returns the names
    that did not import (a module that exists only on some machines; the build's is the one the hash names)."""
    absent: set[str] = set()
    done: set[str] = set()
    while True:
        setup, _ = _split(libraries)
        todo = sorted(set(setup) - done)
        if not todo:
            return sorted(absent)
        for name in todo:
            done.add(name)
            with open(setup[name], "rb") as f:
                tree = ast.parse(f.read(), setup[name])
            package = name if hasattr(sys.modules[name], "__path__") else name.rpartition(".")[0]
            for imported in _imports_of(tree, package):
                if imported not in sys.modules and imported not in absent and not _try_import(imported):
                    absent.add(imported)


def _imports_of(tree: ast.Module, package: str) -> list[str]:
    """The modules the code imports, by absolute name: ``import a.b`` is ``a.b``; ``from a import b`` is ``a`` and,
    if ``b`` is a module, ``a.b``. Not what only type checkers read (``if TYPE_CHECKING:``), nor ``__future__``."""
    found: list[str] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _only_for_type_checkers(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
        stack.extend(ast.iter_child_nodes(node))
    return found


def _only_for_type_checkers(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _try_import(name: str) -> bool:
    """Whether ``name`` imports (``from a import b`` names ``a.b`` also where ``b`` is a function: that is no
    absence)."""
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        parent, _, attribute = name.rpartition(".")
        return bool(parent) and parent in sys.modules and hasattr(sys.modules[parent], attribute)
    except Exception:  # it exists, and fails as the job would where it imports it: no snapshot of it
        return False


def _construct(call: functools.partial) -> None:
    import torch

    if "returnn.frontend" in sys.modules:  # an rf model creates its parameters through the selected backend
        import returnn.frontend as rf

        rf.select_backend_torch()
    with torch.device("meta"):
        call()


def _installed() -> tuple[str, ...]:
    """The directories of the Python's installed packages (stdlib, site-packages)."""
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[name]) for name in ("stdlib", "platstdlib", "purelib", "platlib") if name in paths}
    return tuple(root + os.sep for root in sorted(roots))


def _package_root(module: Any) -> Optional[str]:
    path = module_file(module)
    return os.path.dirname(os.path.realpath(path)) + os.sep if path else None


def _roots(libraries: set[str]) -> tuple[str, ...]:
    """The directories of the loaded libraries and tools, whose files are not the setup's."""
    roots = [_package_root(sys.modules[name]) for name in [*libraries, *TOOLS] if name in sys.modules]
    return tuple(sorted(root for root in roots if root))


def _split(libraries: tuple[str, ...]) -> tuple[dict[str, str], set[str]]:
    """The setup's modules loaded (name -> the real path of its source) and the pinned libraries loaded (top-level
    names). A module whose file lies in a library, a tool or an installed package is not the setup's, whatever its
    name (RETURNN registers its modules under old names, too)."""
    modules = dict(sys.modules)
    loaded = {name for name in libraries if name in modules}
    outside = _installed() + _roots(loaded)
    setup: dict[str, str] = {}
    for name, module in modules.items():
        path = module_file(module)
        if name.partition(".")[0] in (*libraries, *TOOLS) or not path or not path.endswith(".py"):
            continue  # a library's or a tool's; built in, frozen, an extension, a namespace package
        path = os.path.realpath(path)
        if not path.startswith(outside):
            setup[name] = path
    return setup, loaded


def identity(module: Any) -> str:
    """A library's identity: the commit its git checkout is at, else (installed, or no checkout) its version."""
    root = _package_root(module)
    if root and not root.startswith(_installed()):
        commit = _git_commit(os.path.dirname(root.rstrip(os.sep)))
        if commit:
            return f"git {commit}"
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return f"version {version}"
    from importlib import metadata

    try:
        return f"version {metadata.version(module.__name__)}"
    except metadata.PackageNotFoundError:
        return "unknown"


def _git_commit(directory: str) -> Optional[str]:
    """The commit HEAD names in the git checkout whose top is ``directory`` (a worktree's too), or None."""
    dot_git = os.path.join(directory, ".git")
    if os.path.isdir(dot_git):
        return _head(dot_git, dot_git)
    if not os.path.isfile(dot_git):
        return None
    with open(dot_git) as f:
        git_dir = os.path.join(directory, f.read().strip().removeprefix("gitdir: "))
    common = os.path.join(git_dir, "commondir")
    if os.path.isfile(common):
        with open(common) as f:
            return _head(git_dir, os.path.join(git_dir, f.read().strip()))
    return _head(git_dir, git_dir)


def _head(git_dir: str, common_dir: str) -> Optional[str]:
    with open(os.path.join(git_dir, "HEAD")) as f:
        head = f.read().strip()
    if not head.startswith("ref: "):
        return head
    ref = head.removeprefix("ref: ")
    for base in (git_dir, common_dir):
        loose = os.path.join(base, ref)
        if os.path.isfile(loose):
            with open(loose) as f:
                return f.read().strip()
    packed = os.path.join(common_dir, "packed-refs")
    if os.path.isfile(packed):
        with open(packed) as f:
            for line in f:
                commit, _, name = line.strip().partition(" ")
                if name == ref:
                    return commit
    return None

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
from typing import Any, Optional, Union

from i6_rc_jobs._builds import record as build_record
from i6_rc_jobs._code_hash.libraries import identity, loaded_files, package_root
from i6_rc_jobs._code_hash import computed, config_reads, machine_queries
from i6_rc_jobs._serialization.job_config import canonical
from i6_rc_jobs._util.loaded_modules import module_file
from i6_rc_jobs._code_hash.fingerprint import DEFAULT_LIBRARIES, NOT_SET, TOOLS, CodeFingerprint, RecordedCode
from i6_rc_jobs._code_hash.normalize import setup_code
from i6_rc_jobs._computation.fingerprint import ComputationFingerprint
from i6_rc_jobs._computation.inputs import Inputs

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
    config: Optional[str] = None,
    computation: Optional[Inputs] = None,
) -> RecordedCode:
    """The fingerprint of ``module.qualname``, with the sources it was made of: constructed with ``args`` and
    ``kwargs`` on the ``meta`` device if ``construct`` (None: if it is a class or arguments are given), else only
    imported; then every module that the setup's code imports inside a function (or anywhere) is imported too, as
    running the code would, and what does not import is recorded as absent. RETURNN's ``get_global_config()``
    gives the options of the job's ``config`` (:func:`.config_reads.options_text`; none if not given), and the
    options looked up count. With ``computation`` (the inputs of its forward), the model is also constructed on CPU
    and captured (:mod:`.computed`), with the options of the job's config as construction reads them."""
    opened_before = set(build_record.opened())
    options, unavailable = config_reads.given(config)
    with (
        machine_queries.refused(functools.partial(_is_setup_file, libraries)) as asked,
        config_reads.job_config(options, unavailable) as looked_up,
    ):
        target = resolve(module, qualname)
        if construct is None:
            construct = isinstance(target, type) or bool(args or kwargs)
        call = functools.partial(target, *args, **kwargs)
        if construct:
            _construct(call)
        absent = _import_what_the_code_imports(libraries)
        capture: Union[ComputationFingerprint, str, None] = None
        if computation is not None:
            capture = (
                computed.captured(_on_cpu(call), computation, frozenset(_split(libraries)[0].values()))
                if construct
                else "the marker is only imported, not constructed: there is no model to capture"
            )
    if asked:  # (the code caught the refusal)
        raise RuntimeError(f"{asked[0]} while the model code is recorded; choose in the config")
    setup, loaded, native = _split(libraries)
    files = _files_read(set(build_record.opened()) - opened_before, set(setup.values()), loaded)
    files.update({path: _sha256(path) for path in sorted(native)})  # its bytes are its code
    modules, sources = {}, {}
    for name in sorted(setup):
        with open(setup[name], "rb") as f:
            sources[name] = f.read()
    packages = {name for name in setup if hasattr(sys.modules[name], "__path__")}
    code = setup_code(sources, setup, packages, module, qualname)
    for name in sorted(setup):
        modules[name] = {
            "file": setup[name],
            "digest": code[name].digest,
            "defs": code[name].definitions,
            "counted": code[name].counted,
            "sha256": hashlib.sha256(sources[name]).hexdigest(),
            "package": name in packages,
        }
    library_files = {name: loaded_files(name) for name in sorted(loaded)}
    identities = {name: identity(name, library_files[name], _installed()) for name in sorted(loaded)}
    checked = {name: library_files[name] for name in identities if not identities[name].startswith("version ")}
    fingerprint = CodeFingerprint(
        f"{module}.{qualname}",
        construct,
        modules,
        identities,
        absent=tuple(absent),
        files=files,
        env=_environment_read(set(setup.values())),
        library_files=checked,
        config_read={key: canonical(options[key]) if key in options else NOT_SET for key in looked_up},
    )
    return RecordedCode(
        fingerprint, sources, None if capture is None else computed.judged(capture, fingerprint, sources)
    )


def _environment_read(files: set[str]) -> dict[str, Optional[str]]:
    """The environment variables that code in ``files`` (the setup's) read, with the SHA-256 of the value read
    (None: not set); what the libraries read is theirs (their identity covers it)."""
    environment = build_record.environment()
    return {
        name: environment[name]
        for name, readers in sorted(build_record.environment_readers().items())
        if any(os.path.realpath(file) in files for file, _ in readers if not file.startswith("<"))
    }


def _is_setup_file(libraries: tuple[str, ...], path: str) -> bool:
    """Whether code in ``path`` is the setup's (not Python's, an installed package's, a library's or a tool's)."""
    loaded = {name for name in libraries if name in sys.modules}
    return not path.startswith("<") and not os.path.realpath(path).startswith(_installed() + _roots(loaded))


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
            read[path] = _sha256(path)
    return read


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _import_what_the_code_imports(libraries: tuple[str, ...]) -> list[str]:
    """Imports every module that the setup's loaded code imports anywhere (a function's body, a ``try``), until the
    setup's modules import nothing new: what the job may run counts, not only what importing ran. Returns the names
    that did not import (a module that exists only on some machines; the build's is the one the hash names)."""
    absent: set[str] = set()
    done: set[str] = set()
    while True:
        setup, _, _ = _split(libraries)
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


def _on_cpu(call: functools.partial) -> functools.partial:
    """The construction as a job makes it (real tensors on CPU), for the capture."""
    return functools.partial(_construct_on_cpu, call)


def _construct_on_cpu(call: functools.partial) -> Any:
    if "returnn.frontend" in sys.modules:
        import returnn.frontend as rf

        rf.select_backend_torch()
    return call()


def _installed() -> tuple[str, ...]:
    """The directories of the Python's installed packages (stdlib, site-packages)."""
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[name]) for name in ("stdlib", "platstdlib", "purelib", "platlib") if name in paths}
    return tuple(root + os.sep for root in sorted(roots))


def _roots(libraries: set[str]) -> tuple[str, ...]:
    """The directories of the loaded libraries and tools, whose files are not the setup's."""
    roots = [package_root(sys.modules[name]) for name in [*libraries, *TOOLS] if name in sys.modules]
    return tuple(sorted(root for root in roots if root))


def _split(libraries: tuple[str, ...]) -> tuple[dict[str, str], set[str], set[str]]:
    """The setup's modules loaded (name -> the real path of its source), the pinned libraries loaded (top-level
    names), and the files of the setup's modules that have no source (an extension, bytecode only). A module whose file lies in a library, a tool or an installed package is not the setup's,
    whatever its name (RETURNN registers its modules under old names, too)."""
    modules = dict(sys.modules)
    loaded = {name for name in libraries if name in modules}
    outside = _installed() + _roots(loaded)
    setup: dict[str, str] = {}
    native: set[str] = set()
    for name, module in modules.items():
        path = module_file(module)
        if name.partition(".")[0] in (*libraries, *TOOLS) or not path:
            continue  # a library's or a tool's; built in, frozen, a namespace package
        path = os.path.realpath(path)
        if path.startswith(outside):
            continue
        if path.endswith(".py"):
            setup[name] = path
        else:
            native.add(path)
    return setup, loaded, native

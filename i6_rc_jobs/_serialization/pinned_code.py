"""The lines a written config starts with where its values name model code pinned by content (``by_content``): they
make Python import each module of that code from the snapshot of what was hashed, checked by its SHA-256, never
from the live setup, keep absent what was absent, and check that the other files the code read then are unchanged.
The code is self-contained (Python's standard library only), so that a config written today loads the same code in
any process, with any i6_rc_jobs or none."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from i6_rc_jobs._serialization.errors import SerializationError

#: A pinned module: its snapshot file, the SHA-256 of its source, whether it is a package, its file in the setup (its
#: ``__file__``, as for code run live: data read relative to it is read where it was).
Pin = tuple[str, str, bool, str]


@dataclass
class CodePins:
    """What one value's code pins: ``modules`` (name -> :data:`Pin`), the modules kept ``absent``, the ``files`` it
    read (path -> SHA-256), the ``env`` variables it read (name -> SHA-256 of the value, None: not set), and the
    files of the ``libraries`` it loaded (top-level package -> its relative path -> SHA-256)."""

    modules: dict[str, Pin] = field(default_factory=dict)
    absent: set[str] = field(default_factory=set)
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, Optional[str]] = field(default_factory=dict)
    libraries: dict[str, dict[str, str]] = field(default_factory=dict)


#: Defines, runs and deletes one function: the config keeps no name of it. ``{modules}``, ``{absent}``, ``{files}``,
#: ``{env}`` and ``{libraries}`` are filled in; the finder is first on ``sys.meta_path``, so that a pinned module is
#: found there before any path.
_TEMPLATE = '''\
def _pin_model_code(modules, absent, files, env, libraries):
    """Model code pinned by content (i6_rc_jobs by_content): each module is run from its snapshot (checked by its
    SHA-256) under the path it had in the setup; what was absent stays absent; the files and environment variables
    the code read, and the files of the libraries it loaded, are checked."""
    import hashlib
    import importlib.abc
    import importlib.util
    import os
    import sys

    def same(path, sha256, what):
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as e:
            raise ImportError(f"{{path}}: {{what}} cannot be read ({{e.strerror}})") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ImportError(f"{{path}}: {{what}}, changed since it was hashed (its SHA-256 differs)")
        return data

    class Loader(importlib.abc.SourceLoader):
        def __init__(self, origin, snapshot, sha256):
            self.origin, self.snapshot, self.sha256 = origin, snapshot, sha256

        def get_filename(self, fullname):
            return self.origin

        def get_data(self, path):
            return same(self.snapshot, self.sha256, "the snapshot of the model code")

    class PinnedModelCode(importlib.abc.MetaPathFinder):
        pinned, kept_absent = modules, absent

        def find_spec(self, fullname, path, target=None):
            parent = fullname.rpartition(".")[0]
            if fullname in self.kept_absent:
                raise ImportError(f"{{fullname}} was absent where the model code was hashed, so it is here too")
            if fullname not in self.pinned and parent in self.pinned:
                raise ImportError(f"{{fullname}} is no part of the model code that was hashed (imported by a computed name?)")
            if fullname not in self.pinned:
                return None
            snapshot, sha256, package, origin = self.pinned[fullname]
            loader = Loader(origin, snapshot, sha256)
            return importlib.util.spec_from_file_location(
                fullname, origin, loader=loader, submodule_search_locations=[] if package else None
            )

    for finder in sys.meta_path:
        for name in set(getattr(finder, "pinned", ())) & set(modules):
            if finder.pinned[name][1] != modules[name][1]:
                raise ImportError(f"{{name}} is pinned at two versions: {{finder.pinned[name][0]}}, {{modules[name][0]}}")
    for path, sha256 in files.items():
        same(path, sha256, "read by the model code when it was hashed")
    for name, sha256 in env.items():
        value = os.environ.get(name)
        found = None if value is None else hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
        if found != sha256:
            was = "not set" if sha256 is None else "set otherwise"
            raise ImportError(f"environment variable {{name}}: {{was}} where the model code was hashed, which reads it")
    for library, read in libraries.items():
        loaded = sys.modules.get(library)
        spec = None if loaded is not None else importlib.util.find_spec(library)
        origin = getattr(loaded, "__file__", None) if loaded is not None else spec and spec.origin
        if not origin:
            raise ImportError(f"{{library}} cannot be found, which the model code loaded when it was hashed")
        root = os.path.dirname(os.path.realpath(origin))
        for path, sha256 in read.items():
            same(os.path.join(root, path), sha256, f"a file of {{library}} the model code loaded when it was hashed")
    for name, (snapshot, sha256, package, origin) in modules.items():
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(getattr(loaded, "__loader__", None), "sha256", None) != sha256:
            raise ImportError(f"{{name}} was imported before the pinned model code, from {{loaded.__file__}}")
    sys.meta_path.insert(0, PinnedModelCode())


_pin_model_code(
    {modules},
    {absent},
    {files},
    {env},
    {libraries},
)
del _pin_model_code'''


class _Code(str):
    """Code that is written as it is (its repr is itself)."""

    def __repr__(self) -> str:
        return str(self)


def _dict_lines(entries: dict[str, Any], indent: str = "        ") -> str:
    """A dict literal of ``entries``, an entry a line, in sorted order."""
    if not entries:
        return "{}"
    return "{" + "".join(f"\n{indent}{key!r}: {entries[key]!r}," for key in sorted(entries)) + f"\n{indent[:-4]}}}"


def pin_lines(pins: CodePins) -> list[str]:
    """The lines that pin ``pins``' modules, keep its absent modules absent and check the rest."""
    libraries = {name: _Code(_dict_lines(files, " " * 12)) for name, files in pins.libraries.items()}
    return [
        _TEMPLATE.format(
            modules=_dict_lines(pins.modules) if pins.modules else "{\n    }",
            absent=repr(frozenset(sorted(pins.absent))) if pins.absent else "frozenset()",
            files=_dict_lines(pins.files),
            env=_dict_lines(pins.env),
            libraries=_dict_lines(libraries),
        ),
        "",
    ]


class Pins:
    """What the values of one config pin, together (:class:`CodePins`)."""

    def __init__(self) -> None:
        self.pins = CodePins()

    def __bool__(self) -> bool:
        return bool(self.pins.modules or self.pins.absent or self.pins.files or self.pins.env or self.pins.libraries)

    def add(self, owner: Any, pins: CodePins) -> None:
        """Adds the pins of ``owner`` (its ``pins()``); refuses a module pinned at two versions, a module pinned by
        one value and absent for another, or a file, variable or library file read with two contents."""
        for name, pin in pins.modules.items():
            if self.pins.modules.setdefault(name, pin) != pin:
                raise SerializationError(
                    f"{owner!r} pins {name} at {pin[0]}, another value of the config at {self.pins.modules[name][0]}: "
                    "make both markers in one manager start (an edit came between them)"
                )
        for path, sha256 in pins.files.items():
            if self.pins.files.setdefault(path, sha256) != sha256:
                raise SerializationError(f"{owner!r} read {path} with other content than another value of the config")
        for name, digest in pins.env.items():
            if self.pins.env.setdefault(name, digest) != digest:
                raise SerializationError(f"{owner!r} read ${name} with another value than another value of the config")
        for library, files in pins.libraries.items():
            for path, sha256 in files.items():
                if self.pins.libraries.setdefault(library, {}).setdefault(path, sha256) != sha256:
                    raise SerializationError(
                        f"{owner!r} loaded {library}'s {path} with other content than another value"
                    )
        self.pins.absent.update(pins.absent)
        both = self.pins.absent & set(self.pins.modules)
        if both:
            raise SerializationError(
                f"{owner!r}: {sorted(both)} are pinned by one value of the config, absent for another"
            )

    def lines(self) -> list[str]:
        return pin_lines(self.pins) if self else []

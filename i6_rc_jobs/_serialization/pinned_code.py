"""The lines a written config starts with where its values name model code pinned by content (``by_content``): they
make Python import each module of that code from the snapshot of what was hashed, checked by its SHA-256, never
from the live setup, keep absent what was absent, and check that the other files the code read then are unchanged.
The code is self-contained (Python's standard library only), so that a config written today loads the same code in
any process, with any i6_rc_jobs or none."""

from __future__ import annotations

from typing import Any

from i6_rc_jobs._serialization.errors import SerializationError

#: A pinned module: its snapshot file, the SHA-256 of its source, whether it is a package, its file in the setup (its
#: ``__file__``, as for code run live: data read relative to it is read where it was).
Pin = tuple[str, str, bool, str]

#: Defines, runs and deletes one function: the config keeps no name of it. ``{modules}``, ``{absent}`` and ``{files}``
#: are filled in; the finder is first on ``sys.meta_path``, so that a pinned module is found there before any path.
_TEMPLATE = '''\
def _pin_model_code(modules, absent, files):
    """Model code pinned by content (i6_rc_jobs by_content): each module is run from its snapshot (checked by its
    SHA-256) under the path it had in the setup; what was absent stays absent; the files the code read are checked."""
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
    for name, (snapshot, sha256, package, origin) in modules.items():
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(getattr(loaded, "__loader__", None), "sha256", None) != sha256:
            raise ImportError(f"{{name}} was imported before the pinned model code, from {{loaded.__file__}}")
    sys.meta_path.insert(0, PinnedModelCode())


_pin_model_code(
    {modules},
    {absent},
    {files},
)
del _pin_model_code'''


def pin_lines(pins: dict[str, Pin], absent: set[str], files: dict[str, str]) -> list[str]:
    """The lines that pin ``pins`` (module -> (snapshot file, SHA-256, package, its file in the setup)), keep
    ``absent`` absent and check ``files`` (path -> SHA-256)."""
    modules = "{" + "".join(f"\n        {name!r}: {pins[name]!r}," for name in sorted(pins)) + "\n    }"
    read = (
        "{" + "".join(f"\n        {path!r}: {files[path]!r}," for path in sorted(files)) + ("\n    }" if files else "}")
    )
    kept_absent = repr(frozenset(sorted(absent))) if absent else "frozenset()"
    return [_TEMPLATE.format(modules=modules, absent=kept_absent, files=read), ""]


class Pins:
    """What the values of one config pin: module -> (snapshot file, SHA-256, package, its file in the setup), the
    modules kept absent, the files checked (path -> SHA-256)."""

    def __init__(self) -> None:
        self.modules: dict[str, Pin] = {}
        self.absent: set[str] = set()
        self.files: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.modules or self.absent or self.files)

    def add(self, owner: Any, pins: tuple[dict[str, Pin], tuple[str, ...], dict[str, str]]) -> None:
        """Adds the pins of ``owner`` (its ``pins()``); refuses a module pinned at two versions, a module pinned by
        one value and absent for another, or a file read with two contents."""
        modules, absent, files = pins
        for name, pin in modules.items():
            if self.modules.setdefault(name, pin) != pin:
                raise SerializationError(
                    f"{owner!r} pins {name} at {pin[0]}, another value of the config at {self.modules[name][0]}: make "
                    "both markers in one manager start (an edit came between them)"
                )
        for path, sha256 in files.items():
            if self.files.setdefault(path, sha256) != sha256:
                raise SerializationError(f"{owner!r} read {path} with other content than another value of the config")
        self.absent.update(absent)
        both = self.absent & set(self.modules)
        if both:
            raise SerializationError(
                f"{owner!r}: {sorted(both)} are pinned by one value of the config, absent for another"
            )

    def lines(self) -> list[str]:
        return pin_lines(self.modules, self.absent, self.files) if self else []

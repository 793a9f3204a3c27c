"""The lines a written config starts with where its values name model code pinned by content (``by_content``): they
make Python import each module of that code from the snapshot of what was hashed, checked by its SHA-256, never
from the live setup, and keep absent what was absent. The code is self-contained (Python's standard library only),
so that a config written today loads the same code in any process, with any i6_rc_jobs or none."""

from __future__ import annotations

from typing import Any

from i6_rc_jobs._serialization.errors import SerializationError

#: Defines, runs and deletes one function: the config keeps no name of it. ``{modules}`` and ``{absent}`` are filled
#: in; the finder is first on ``sys.meta_path``, so that a pinned module is found there before any path.
_TEMPLATE = '''\
def _pin_model_code(modules, absent):
    """Model code pinned by content (i6_rc_jobs by_content): module -> (snapshot file, SHA-256, package)."""
    import hashlib
    import importlib.abc
    import importlib.util
    import os
    import sys

    class Loader(importlib.abc.SourceLoader):
        def __init__(self, path, sha256):
            self.path, self.sha256 = path, sha256

        def get_filename(self, fullname):
            return self.path

        def get_data(self, path):
            with open(path, "rb") as file:
                data = file.read()
            if hashlib.sha256(data).hexdigest() != self.sha256:
                raise ImportError(f"{{path}}: not the model code that was hashed (its SHA-256 differs)")
            return data

    class PinnedModelCode(importlib.abc.MetaPathFinder):
        pinned, kept_absent = modules, absent

        def find_spec(self, fullname, path, target=None):
            if fullname in self.kept_absent:
                raise ImportError(f"{{fullname}} was absent where the model code was hashed, so it is here too")
            if fullname not in self.pinned:
                return None
            file, sha256, package = self.pinned[fullname]
            if not os.path.isfile(file):
                raise ImportError(f"{{file}}: the snapshot of {{fullname}} is missing (I6_RC_SNAPSHOTS moved?)")
            return importlib.util.spec_from_file_location(
                fullname, file, loader=Loader(file, sha256), submodule_search_locations=[] if package else None
            )

    for finder in sys.meta_path:
        for name in set(getattr(finder, "pinned", ())) & set(modules):
            if finder.pinned[name][1] != modules[name][1]:
                raise ImportError(f"{{name}} is pinned at two versions in this config: {{finder.pinned[name][0]}}, "
                                  f"{{modules[name][0]}}")
    for name, (file, sha256, package) in modules.items():
        loaded = getattr(sys.modules.get(name), "__file__", file)
        if loaded != file:
            raise ImportError(f"{{name}} was imported from {{loaded}} before the pinned model code: it must be {{file}}")
    sys.meta_path.insert(0, PinnedModelCode())


_pin_model_code(
    {modules},
    {absent},
)
del _pin_model_code'''


def pin_lines(pins: dict[str, tuple[str, str, bool]], absent: set[str]) -> list[str]:
    """The lines that pin ``pins`` (module -> (snapshot file, SHA-256, package)) and keep ``absent`` absent."""
    modules = "{" + "".join(f"\n        {name!r}: {pins[name]!r}," for name in sorted(pins)) + "\n    }"
    return [_TEMPLATE.format(modules=modules, absent=repr(frozenset(sorted(absent))) if absent else "frozenset()"), ""]


def merge_pins(
    into: dict[str, tuple[str, str, bool]],
    absent: set[str],
    owner: Any,
    pins: tuple[dict[str, tuple[str, str, bool]], tuple[str, ...]],
) -> None:
    """Adds the pins of ``owner`` (its ``pins()``: module -> (snapshot file, SHA-256, package), and the modules kept
    absent); refuses a module pinned at two versions, or pinned by one value and absent for another."""
    modules, its_absent = pins
    for name, pin in modules.items():
        if into.setdefault(name, pin) != pin:
            raise SerializationError(
                f"{owner!r} pins {name} at {pin[0]}, another value of the config at {into[name][0]}: make both "
                "markers in one manager start (an edit came between them)"
            )
    absent.update(its_absent)
    both = absent & set(into)
    if both:
        raise SerializationError(f"{owner!r}: {sorted(both)} are pinned by one value of the config, absent for another")

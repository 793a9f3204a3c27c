"""Finding a package the way a Sisyphus setup directory holds it, for commands run from there."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Iterable, Optional


def importable(package: str, places: Iterable[Optional[str]]) -> bool:
    """Whether ``package`` can be imported: installed, or found in one of ``places`` (directories holding it, e.g.
    ``tools/returnn``), which is then put first on ``sys.path``."""
    if importlib.util.find_spec(package) is not None:
        return True
    for place in places:
        if place is not None and os.path.isfile(os.path.join(place, package, "__init__.py")):
            sys.path.insert(0, os.path.abspath(place))
            return True
    return False

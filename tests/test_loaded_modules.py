"""Going through the loaded modules imports none: RETURNN registers its old module names (``TFNetwork``,
``SprintCache``, ...) as lazy loaders that import on attribute access. What a build records, and what the code hash
splits into setup and libraries, must not import them (a build would pay for about 40 of RETURNN's modules and
depend on them), in a fresh interpreter as a build server is."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
import returnn.util.basic  # registers RETURNN's old module names as lazy loaders
from returnn.__old_mod_loader__ import _LazyLoader
from i6_rc_jobs._builds import record
from i6_rc_jobs._code_hash.record import recorded_code

def lazy():
    return sorted(name for name, module in sys.modules.items() if isinstance(module, _LazyLoader))

before = lazy()
files = record.module_files()
record.looked_at()
recorded_code("json", "dumps", (), {}, False)
print(json.dumps({"lazy": before, "still lazy": lazy(), "files": files}))
"""


def test_reading_the_loaded_modules_imports_none_of_returnns_lazy_old_names():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    found = json.loads(proc.stdout.splitlines()[-1])
    assert "TFNetwork" in found["lazy"] and "SprintCache" in found["lazy"]  # the premise: they are there, not loaded
    assert found["still lazy"] == found["lazy"]  # none loaded (a loaded one replaces its entry in sys.modules)
    assert any(path.endswith("returnn/util/basic.py") for path in found["files"])  # loaded modules are still listed

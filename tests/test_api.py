"""The public surface: ``i6_rc_jobs.__all__`` is the API, exactly what docs/reference/api.md documents; everything
else is private by name; importing the package changes nothing outside it; and what 0.6 wrote (pickled jobs, imports
of its public modules) still works, with equal hashes."""

from __future__ import annotations

import json
import os
import pickle
import pickletools
import re
import subprocess
import sys
from pathlib import Path

import pytest

import i6_rc_jobs
from i6_rc_jobs._compat.moved_modules import MOVED
from tests.support.golden import code_file

REPO = Path(__file__).resolve().parents[1]
#: The parts that are public by their module paths: Sisyphus names a job's directory after its module
#: (``i6_rc_jobs/jobs/create_config/CreateConfigJob.<hash>``), and versioned modules live under ``versioned``.
PUBLIC_PATHS = {"__init__", "__main__", "serializers", "jobs", "versioned", "py"}
#: Pickled by the 0.6.0 release (tests/golden/pickles/make_0.6.0.py, run at that release): every kind of value a job
#: holds that names a module of ours, with each one's Sisyphus hash then.
OLD_PICKLE = REPO / "tests" / "golden" / "pickles" / "0.6.0.pickle"


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_reference_documents_exactly_the_public_names():
    page = (REPO / "docs" / "reference" / "api.md").read_text()
    documented = set(re.findall(r"^### `i6_rc_jobs\.(\w+)`$", page, re.M))
    assert documented == set(i6_rc_jobs.__all__)


@pytest.mark.parametrize("name", i6_rc_jobs.__all__)
def test_every_public_name_imports_and_says_what_it_is_for(name):
    value = getattr(i6_rc_jobs, name)
    assert value is not None
    if callable(value) or isinstance(value, type(i6_rc_jobs)):
        assert (value.__doc__ or "").strip(), f"i6_rc_jobs.{name} has no docstring"


def test_an_unknown_name_is_refused_naming_it():
    with pytest.raises(AttributeError, match="has no attribute 'serializer'"):
        i6_rc_jobs.serializer  # noqa: B018


def test_what_is_not_public_is_private_by_name():
    parts = {p.name.split(".")[0] for p in (REPO / "i6_rc_jobs").iterdir() if p.name != "__pycache__"}
    assert {part for part in parts if not part.startswith("_")} <= PUBLIC_PATHS - {"__init__", "__main__"}
    assert {part for part in parts if part.startswith("_") and not part.startswith("__")}, "no private part left"


def test_importing_the_package_changes_nothing_outside_it():
    """No hook replaced, no library imported: the hints are opt-in, and the public names load when first used."""
    out = _python(
        "import sys; hook, path = sys.excepthook, list(sys.meta_path); before = set(sys.modules)\n"
        "import i6_rc_jobs\n"
        "new = sorted(m for m in set(sys.modules) - before if not m.startswith('i6_rc_jobs'))\n"
        "added = [type(f).__name__ for f in sys.meta_path if f not in path]\n"
        "print(sys.excepthook is hook, added, [m for m in new if m.split('.')[0] in "
        "('sisyphus', 'i6_core', 'returnn', 'returnn_common', 'tensorflow', 'torch', 'numpy')])\n"
        "i6_rc_jobs.install_failure_hints(); first = sys.excepthook; i6_rc_jobs.install_failure_hints()\n"
        "print(first is not hook, sys.excepthook is first)"
    )
    assert out.splitlines() == ["True ['_MovedFinder'] []", "True True"]


def test_a_job_pickled_by_0_6_loads_with_its_hashes_and_its_code():
    """In a fresh process, as a Sisyphus worker unpickles a job: the 0.6 module paths resolve to today's classes, each
    value hashes as it did then, and the serializers write the golden code."""
    cases = [path.stem for path in sorted((REPO / "tests" / "golden").glob("*.config"))]
    out = _python(
        "import json, pickle, sys\n"
        "sys.path.insert(0, 'recipe_examples/recipe')\n"
        "from sisyphus.hash import short_hash\n"
        f"data = pickle.load(open({str(OLD_PICKLE)!r}, 'rb'))\n"
        "kept = data['kept']\n"
        "values = {**kept['serializers'], 'checked': kept['checked']}\n"
        "print(json.dumps({\n"
        "    'hashes': {name: [data['hashes'][name], short_hash(value)] for name, value in values.items()},\n"
        "    'types': sorted({type(v).__module__ + '.' + type(v).__qualname__ for v in values.values()}),\n"
        "    'again': pickle.dumps(kept).hex(),\n"
        "    'code': {name: value.get() for name, value in kept['serializers'].items()},\n"
        "}))"
    )
    found = json.loads(out)
    assert found["hashes"] and all(then == now for then, now in found["hashes"].values()), found["hashes"]
    assert found["types"] == [
        "i6_rc_jobs.jobs.config_file.CheckedReturnnConfig",
        "i6_rc_jobs.serializers.ReturnnCommonSerializer",
        "i6_rc_jobs.serializers.ReturnnConfigSerializer",
    ]
    again = _modules_named(bytes.fromhex(found["again"]))
    assert "i6_rc_jobs._code_hash.marker" in again and not again & set(MOVED), again
    for name in cases:
        assert found["code"][name] == code_file(name).read_text(), name


def test_a_pickle_made_today_names_no_module_of_0_6():
    serializer = i6_rc_jobs.ReturnnConfigSerializer({"x": 1, "f": json.dumps})
    data = pickle.dumps(i6_rc_jobs.CheckedReturnnConfig({"backend": "torch"}, python_prolog=[serializer]))
    assert _modules_named(data) == {"i6_rc_jobs.jobs.config_file", "i6_rc_jobs.serializers"}


def _modules_named(data: bytes) -> set[str]:
    """The modules of ours a pickle names (for its classes)."""
    return {arg for _, arg, _ in pickletools.genops(data) if isinstance(arg, str) and arg.startswith("i6_rc_jobs.")}


@pytest.mark.parametrize(
    "code",
    [
        "from i6_rc_jobs.imports import import_, VersionedImportError",
        "from i6_rc_jobs.builds import build, build_many, depend_on",
        "from i6_rc_jobs.code_hash import by_content, watch_code",
        "from i6_rc_jobs.rc_compat import apply",
        "from i6_rc_jobs.returnn_check import construct_networks",
        "from i6_rc_jobs.serialization.config_file import write_config_file, CheckedReturnnConfig",
    ],
)
def test_a_setup_written_for_0_6_still_imports(code):
    """The public modules of 0.6 hand out today's objects."""
    names = code.split(" import ")[1].split(", ")
    out = _python(
        f"{code}\nimport i6_rc_jobs\nprint(all(getattr(i6_rc_jobs, n, None) is v or "
        f"getattr(i6_rc_jobs.rc_compat, n, None) is v for n, v in zip({names!r}, [{', '.join(names)}])))"
    )
    assert out.strip() == "True"


def test_no_other_old_path_is_answered():
    with pytest.raises(ModuleNotFoundError):
        __import__("i6_rc_jobs.serialization.pycode")
    with pytest.raises(ModuleNotFoundError):
        __import__("i6_rc_jobs.hashing")

"""What a build looked for and did not find, how names resolved, and what it only probed or listed: each is a
dependency of its entry, and an entry is never served after one of them changed. Real build servers (preloading only
a tiny module) and tiny builders that return what they saw (tests/support/probe_recipes.py)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from i6_rc_jobs import Builds, stop_servers
from tests.support import probe_recipes

pytestmark = pytest.mark.slow  # each starts or replaces a build server that imports TensorFlow
#: What the build server imports: pbase (a library a test edits) and what makes a serializer, so that a build
#: imports only the builders.
PRELOAD = ("pbase", "i6_rc_jobs._serialization.capture", "i6_rc_jobs._serialization.convert", "tensorflow")
#: Every file a test writes is older than this when it builds (see tests/test_builds.py).
SETTLE_S = 0.05


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """The builders' two sys.path directories (first before second), on sys.path for the whole module."""
    first, second = probe_recipes.make(tmp_path_factory.mktemp("probes"))
    sys.path[:0] = [str(first), str(second)]
    yield first, second
    stop_servers()
    for directory in (first, second):
        sys.path.remove(str(directory))
    for name in ("pbuilders", "pbase", "plib", "pnew"):
        sys.modules.pop(name, None)


@pytest.fixture
def setup(dirs, tmp_path, monkeypatch):
    """Fresh data and modules, an empty cache: (first, second, Builds, pbuilders)."""
    first, second = dirs
    for path in [*second.iterdir(), first / "plib.py", first / "pnew.py"]:
        path.unlink(missing_ok=True)
    for path in sorted((first / "data").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    probe_recipes.make(first.parent)
    monkeypatch.delenv("PROBES_VALUE", raising=False)
    time.sleep(SETTLE_S)
    import pbuilders

    return first, second, Builds(cache=tmp_path / "cache", workers=1, preload=PRELOAD), pbuilders


def _edit(path: Path, text: str) -> None:
    path.write_text(text)
    time.sleep(SETTLE_S)


def _saw(builds: Builds, builder, *args) -> str:
    return probe_recipes.saw(builds.build(builder, *args))


def test_a_file_that_appears_after_the_build_looked_for_it_rebuilds(setup):
    first, _, builds, pbuilders = setup
    assert _saw(builds, pbuilders.optional_file) == "None"
    _edit(first / "data" / "optional.txt", "here")
    assert _saw(builds, pbuilders.optional_file) == "'here'"


def test_a_module_that_appears_after_the_build_tried_to_import_it_rebuilds(setup):
    first, second, builds, pbuilders = setup
    assert _saw(builds, pbuilders.optional_module) == "None"
    _edit(second / "pnew.py", "VALUE = 'new'\n")
    assert _saw(builds, pbuilders.optional_module) == "'new'"


@pytest.mark.parametrize("how", ["exists", "stat", "isdir", "listdir", "scandir", "glob"])
def test_a_probed_or_listed_flag_that_appears_rebuilds(setup, how):
    first, _, builds, pbuilders = setup
    before = _saw(builds, pbuilders.probed, how)
    (first / "data" / "flag").mkdir() if how == "isdir" else _edit(first / "data" / "flag", "on")
    (first / "data" / "flag.txt").write_text("")
    time.sleep(SETTLE_S)
    after = _saw(builds, pbuilders.probed, how)
    assert after != before
    assert after == probe_recipes.saw(
        Builds(cache=first.parent / f"empty-{how}", preload=PRELOAD).build(pbuilders.probed, how)
    )


def test_a_module_copied_earlier_on_the_path_shadows_the_one_the_build_imported(setup):
    """The i6 way to pin a library: a copy in recipe/ (earlier on sys.path) than the installed one."""
    first, second, builds, pbuilders = setup
    _edit(second / "plib.py", "VALUE = 'installed'\n")
    assert _saw(builds, pbuilders.shadowed) == "'installed'"
    _edit(first / "plib.py", "VALUE = 'pinned'\n")
    assert _saw(builds, pbuilders.shadowed) == "'pinned'"


@pytest.mark.parametrize("how", ["environb", "getenvb"])
def test_a_variable_read_as_bytes_is_a_dependency(setup, monkeypatch, how):
    _, _, builds, pbuilders = setup
    monkeypatch.setenv("PROBES_VALUE", "1")
    assert _saw(builds, pbuilders.environ_bytes, how) == "b'1'"
    monkeypatch.setenv("PROBES_VALUE", "2")
    assert _saw(builds, pbuilders.environ_bytes, how) == "b'2'"


def test_a_file_opened_read_write_and_only_read_is_an_input(setup):
    """numpy's memmap opens "r+" by default."""
    first, _, builds, pbuilders = setup
    (first / "data" / "array.bin").write_bytes(bytes([1, 2]))
    time.sleep(SETTLE_S)
    assert _saw(builds, pbuilders.read_write) == "[1, 2]"
    (first / "data" / "array.bin").write_bytes(bytes([3, 4]))
    time.sleep(SETTLE_S)
    assert _saw(builds, pbuilders.read_write) == "[3, 4]"


def test_a_library_the_server_loaded_is_rebuilt_with_its_new_code(setup):
    """The server imported pbase before it forked the build: after an edit, a fresh server builds the new entry."""
    first, _, builds, pbuilders = setup
    assert _saw(builds, pbuilders.preloaded) == "0"
    _edit(first / "pbase.py", "VALUE = 1\n")
    assert _saw(builds, pbuilders.preloaded) == "1"


def test_a_declared_file_that_c_code_reads_is_a_dependency(setup):
    """sqlite3 reads its database in C: the builder declares it with depend_on."""
    first, _, builds, pbuilders = setup
    database = first / "data" / "db.sqlite"
    for value in (1, 2):
        with sqlite3.connect(database) as connection:
            connection.execute("create table if not exists t (value)")
            connection.execute("delete from t")
            connection.execute("insert into t values (?)", (value,))
        connection.close()
        time.sleep(SETTLE_S)
        assert _saw(builds, pbuilders.from_sqlite, True) == str(value)


_EDITS = st.one_of(
    st.tuples(st.just("read"), st.integers(0, 3)),
    st.tuples(st.just("flag"), st.booleans()),
    st.tuples(st.just("listed"), st.sampled_from("abc"), st.booleans()),
    st.tuples(st.just("optional"), st.none() | st.integers(0, 3)),
    st.tuples(st.just("module"), st.sampled_from(["first", "second"]), st.none() | st.integers(0, 3)),
    st.tuples(st.just("env"), st.none() | st.integers(0, 3)),
    st.just(("build",)),
)


def _apply(first: Path, second: Path, edit: tuple, state: dict) -> None:
    """Makes ``edit`` on disk or in the environment, and in ``state`` (what the builder should see)."""
    data = first / "data"
    kind, *values = edit
    if kind == "read":
        (data / "read.txt").write_text(str(values[0]))
        state["read"] = str(values[0])
    elif kind == "flag":
        (data / "flag").write_text("") if values[0] else (data / "flag").unlink(missing_ok=True)
        state["probed"] = values[0]
    elif kind == "listed":
        name, present = values
        (data / "listed" / name).write_text("") if present else (data / "listed" / name).unlink(missing_ok=True)
        state["listed"] = sorted({*state["listed"], name} if present else set(state["listed"]) - {name})
    elif kind == "optional":
        (
            (data / "optional.txt").write_text(str(values[0]))
            if values[0] is not None
            else (data / "optional.txt").unlink(missing_ok=True)
        )
        state["optional"] = None if values[0] is None else str(values[0])
    elif kind == "module":
        where, value = values
        path = (first if where == "first" else second) / "plib.py"
        path.write_text(f"VALUE = {value}\n") if value is not None else path.unlink(missing_ok=True)
        state[f"module_{where}"] = value
    elif kind == "env":
        if values[0] is None:
            os.environ.pop("PROBES_VALUE", None)
        else:
            os.environ["PROBES_VALUE"] = str(values[0])
        state["env"] = None if values[0] is None else str(values[0])


def _expected(state: dict) -> str:
    """What ``pbuilders.everything`` returns for ``state``."""
    module = state["module_first"] if state["module_first"] is not None else state["module_second"]
    keys = ("read", "probed", "listed", "optional")
    return repr({**{key: state[key] for key in keys}, "module": module, "env": state["env"], "base": 0})


_STEPS = 20
_EXAMPLES = 25  # 500 steps


@settings(max_examples=_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_EDITS, min_size=_STEPS, max_size=_STEPS))
def test_a_cached_build_is_never_stale_after_any_edits(dirs, edits):
    """Random edits of every kind of dependency, and builds: each result is what a build into an empty cache gives,
    and what the builder sees."""
    first, second = dirs
    for path in [first / "plib.py", second / "plib.py", *(first / "data" / "listed").iterdir()]:
        path.unlink(missing_ok=True)
    for name in ("flag", "optional.txt"):
        (first / "data" / name).unlink(missing_ok=True)
    (first / "data" / "read.txt").write_text("0")
    (first / "pbase.py").write_text("VALUE = 0\n")
    environ = os.environ.pop("PROBES_VALUE", None)
    state = {"read": "0", "probed": False, "listed": [], "optional": None, "module_first": None}
    state.update(module_second=None, env=None)
    root = Path(tempfile.mkdtemp(dir=first.parent))
    import pbuilders

    try:
        builds = Builds(cache=root / "cache", workers=1, preload=PRELOAD)
        for step, edit in enumerate([*edits, ("build",)]):
            if edit[0] != "build":
                _apply(first, second, edit, state)
                time.sleep(0.03)
                continue
            cached = probe_recipes.saw(builds.build(pbuilders.everything))
            empty = Builds(cache=root / f"empty-{step}", workers=1, preload=PRELOAD)
            assert cached == probe_recipes.saw(empty.build(pbuilders.everything)) == _expected(state), edits[:step]
    finally:
        shutil.rmtree(root)
        if environ is not None:
            os.environ["PROBES_VALUE"] = environ

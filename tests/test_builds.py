"""``i6_rc_jobs.build``/``build_many``: real returnn_common models built in build processes forked from a real build
server, cached by what they depended on; each kind of dependency edited, faults, foreign entries, the command."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import pickle
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from i6_rc_jobs import BuildError, Builds, stop_servers
from i6_rc_jobs._builds import fingerprint, lookup, probes
from i6_rc_jobs._builds.builds import DEFAULT_PRELOAD
from i6_rc_jobs._builds.fingerprint import RACY_NS
from i6_rc_jobs._builds.store import Store, UnsafeCacheError
from tests import rc_serializers
from tests.support import build_recipes, golden
from tests.support.sisyphus_setup import REPO

pytestmark = pytest.mark.slow  # each forks build servers that import TensorFlow and RETURNN
#: Every file a test writes is older than this when it builds: a dependency changed within 20 ms before a build is
#: not stored (it may have changed while the build read it).
SETTLE_S = 0.05


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    """The builders' directory, on sys.path for the whole module (one build server serves all its tests)."""
    directory = tmp_path_factory.mktemp("recipe")
    sys.path.insert(0, str(directory))
    yield directory
    sys.path.remove(str(directory))
    for name in ("bmodels", "bhelper", "bcompiled"):
        sys.modules.pop(name, None)


@pytest.fixture
def setup(recipe, tmp_path, monkeypatch):
    """Fresh builder files and an empty cache: (recipe directory, Builds, bmodels)."""
    for path in recipe.iterdir():
        path.unlink()
    build_recipes.make(recipe)
    monkeypatch.delenv("BMODELS_HIDDEN", raising=False)
    time.sleep(SETTLE_S)
    import bmodels

    return recipe, Builds(cache=tmp_path / "cache", workers=2), bmodels


def _variants(builds: Builds) -> list[Path]:
    return list(Store(builds.cache).all_variants())


def _entry_files(builds: Builds, variant: Path) -> dict:
    """The files an entry depended on beyond its base (kept by digest, in ``deps/``)."""
    deps = Store(builds.cache).deps(json.loads((variant / "entry.json").read_text())["deps"])
    assert deps is not None
    return deps["files"]


def _edit(path: Path, text: str) -> None:
    path.write_text(text)
    time.sleep(SETTLE_S)


def _hash(serializer) -> str:
    return serializer._sis_hash().decode()


def _lstm(builds, recipe, bmodels):
    return builds.build(bmodels.lstm, str(recipe / "layers.txt"))


def test_serializers_built_out_of_the_manager_hash_as_the_golden_files(tmp_path):
    """Every real model of the golden files, built by build_many in both hash schemes: the pinned hashes."""
    pinned = json.loads(golden.HASHES.read_text())["hashes"]
    pinned_graph = json.loads(golden.GRAPH_HASHES.read_text())["hashes"]
    names = sorted(name[len("rc_") :] for name in golden.rc_cases())
    calls = [functools.partial(rc_serializers.model, name, scheme) for scheme in ("dict", "graph") for name in names]
    built = Builds(cache=tmp_path / "cache", workers=2).build_many(calls)
    hashes = {(call.args[1], call.args[0]): _hash(result) for call, result in zip(calls, built)}
    assert {name: hashes["dict", name] for name in names} == {
        name: pinned[f"rc_{name}"]["serializer"] for name in names
    }
    assert {name: hashes["graph", name] for name in names} == {name: pinned_graph[f"rc_{name}"] for name in names}


def test_a_cached_build_runs_no_builder_and_gives_the_same_serializer(setup):
    recipe, builds, bmodels = setup
    first = _lstm(builds, recipe, bmodels)
    (variant,) = _variants(builds)
    second = _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 1 and _variants(builds) == [variant]
    assert _hash(first) == _hash(second) and first.get() == second.get()


def test_calls_of_one_sisyphus_hash_get_their_own_results(setup):
    """Dicts in another order hash alike in Sisyphus but are other calls: each gets its own model, in one build_many
    too, and both stay cached."""
    recipe, builds, bmodels = setup
    ab, ba = {"a": 16, "b": 32}, {"b": 32, "a": 16}
    from sisyphus.hash import sis_hash_helper

    assert sis_hash_helper(ab) == sis_hash_helper(ba)  # the premise
    together = builds.build_many([(bmodels.first_size, (ab,), {}), (bmodels.first_size, (ba,), {})])
    assert _hash(together[0]) != _hash(together[1]) and build_recipes.builds(recipe) == 2
    alone = [builds.build(bmodels.first_size, sizes) for sizes in (ba, ab)]
    assert [_hash(s) for s in alone] == [_hash(together[1]), _hash(together[0])] and build_recipes.builds(recipe) == 2


def test_an_entry_copied_under_another_call_is_refused(setup):
    """An entry is signed for its call: copied into another call's place (with its own call.pickle or the other's),
    it is not loaded, and the other call is built."""
    recipe, builds, bmodels = setup
    (recipe / "layers2.txt").write_text("2")
    time.sleep(SETTLE_S)
    one = _lstm(builds, recipe, bmodels)
    (source,) = _variants(builds)
    two = builds.build(bmodels.lstm, str(recipe / "layers2.txt"))
    (target,) = [variant for variant in _variants(builds) if variant != source]
    own_call = (target / "call.pickle").read_bytes()
    for call in (None, own_call):
        shutil.rmtree(target)
        shutil.copytree(source, target)
        if call is not None:
            (target / "call.pickle").write_bytes(call)
        again = builds.build(bmodels.lstm, str(recipe / "layers2.txt"))
        assert _hash(again) == _hash(two) != _hash(one)
        target = max(target.parent.iterdir())
    assert build_recipes.builds(recipe) == 4


@pytest.mark.parametrize(
    "edit, rebuilds",
    [
        ("module", True),  # bhelper, which bmodels imports
        ("bytecode", True),  # bcompiled.pyc, a module without source, which bmodels imports
        ("unrelated module", False),  # bunrelated, in the same directory, never imported
        ("data file", True),  # layers.txt, opened by the builder
        ("unrelated data file", False),  # other.txt
        ("env", True),  # BMODELS_HIDDEN, read by the builder
        ("unrelated env", False),
        ("same size and mtime", True),  # bhelper edited, its size and mtime kept
        ("touched, same content", False),  # bhelper's mtime moved, its content kept
        ("python", True),  # another Python runs the build (a link to the same one: the same model)
    ],
)
def test_an_edit_of_a_dependency_rebuilds_an_unrelated_one_does_not(setup, monkeypatch, edit, rebuilds):
    recipe, builds, bmodels = setup
    if edit in ("same size and mtime", "touched, same content"):
        time.sleep(RACY_NS / 1e9)  # so that the stat of the files is trusted: only the ctime can tell the edit
    before = _lstm(builds, recipe, bmodels)
    helper = recipe / "bhelper.py"
    if edit == "module":
        _edit(helper, "FACTOR = 2\n")
    elif edit == "bytecode":
        build_recipes.compiled(recipe, 2)
        time.sleep(SETTLE_S)
    elif edit == "unrelated module":
        _edit(recipe / "bunrelated.py", "FACTOR = 2\n")
    elif edit == "data file":
        _edit(recipe / "layers.txt", "2")
    elif edit == "unrelated data file":
        _edit(recipe / "other.txt", "2")
    elif edit == "env":
        monkeypatch.setenv("BMODELS_HIDDEN", "32")
    elif edit == "unrelated env":
        monkeypatch.setenv("BMODELS_UNRELATED", "32")
    elif edit == "same size and mtime":
        st = helper.stat()
        helper.write_text("FACTOR = 3\n")
        os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert helper.stat().st_size == st.st_size and helper.stat().st_mtime_ns == st.st_mtime_ns
        time.sleep(SETTLE_S)
    elif edit == "touched, same content":
        os.utime(helper, ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))
    else:
        (recipe / "python").symlink_to(sys.executable)
        builds = Builds(python=str(recipe / "python"), cache=builds.cache, workers=2)
    after = _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == (2 if rebuilds else 1)
    assert (_hash(after) != _hash(before)) == (rebuilds and edit != "python")  # each edited input changes the model
    assert len(_variants(builds)) == (2 if rebuilds else 1)  # the stale variant is kept: it may hold elsewhere
    again = _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == (2 if rebuilds else 1) and _hash(again) == _hash(after)


def test_a_rebuild_logs_its_reason_once(setup, caplog):
    """The stale entry is looked up twice (before and under the lock): the reason it is built again is told once."""
    recipe, builds, bmodels = setup
    _lstm(builds, recipe, bmodels)
    _edit(recipe / "bhelper.py", "FACTOR = 2\n")
    with caplog.at_level("INFO"):
        _lstm(builds, recipe, bmodels)
    reasons = [record.getMessage() for record in caplog.records if "is built again" in record.getMessage()]
    assert len(reasons) == 1 and reasons[0].endswith(f"{recipe / 'bhelper.py'} changed")
    assert build_recipes.builds(recipe) == 2


def _counting(monkeypatch, module, name: str) -> list:
    """Wraps ``module.name`` so that each call's first argument is noted in the list returned."""
    calls: list = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_lookups_of_one_process_share_what_they_proved(setup, monkeypatch):
    """A file read by a lookup (its stat moved since the build) is not read again by the next lookup, nor is a module
    name it resolved looked up again: each is only stat'ed."""
    recipe, builds, bmodels = setup
    before = _lstm(builds, recipe, bmodels)
    helper = recipe / "bhelper.py"
    os.utime(helper, ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))  # its content kept, its ctime moved
    time.sleep(RACY_NS / 1e9)
    reads = _counting(monkeypatch, fingerprint, "digest")
    resolved = _counting(monkeypatch, probes, "resolve")
    first = _lstm(builds, recipe, bmodels)
    assert str(helper) in reads and resolved  # proven in this lookup
    reads.clear()
    resolved.clear()
    second = _lstm(builds, recipe, bmodels)
    assert (reads, resolved) == ([], [])
    assert build_recipes.builds(recipe) == 1 and _hash(first) == _hash(second) == _hash(before)


@pytest.mark.parametrize("edit", ["same size and mtime", "a package of the module's name"])
def test_an_edit_between_two_lookups_of_one_process_is_seen(setup, edit):
    """What a lookup proved holds only while the stats it rests on do: the ctime of an edit that kept the size and
    mtime, the names of a directory searched for a module."""
    recipe, builds, bmodels = setup
    before = _lstm(builds, recipe, bmodels)
    helper = recipe / "bhelper.py"
    os.utime(helper, ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))  # read by the lookup: its proof kept
    time.sleep(RACY_NS / 1e9)
    _lstm(builds, recipe, bmodels)
    time.sleep(RACY_NS / 1e9)  # the proofs are old enough to be trusted
    if edit == "same size and mtime":
        st = helper.stat()
        helper.write_text("FACTOR = 3\n")
        os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:  # a package is found before a module of its name
        (recipe / "bhelper").mkdir()
        (recipe / "bhelper" / "__init__.py").write_text("FACTOR = 5\n")
    time.sleep(SETTLE_S)
    try:
        after = _lstm(builds, recipe, bmodels)
    finally:
        shutil.rmtree(recipe / "bhelper", ignore_errors=True)
    assert build_recipes.builds(recipe) == 2 and _hash(after) != _hash(before)


def test_a_failing_builder_leaves_no_entry_and_fails_each_time_with_its_error(setup):
    recipe, builds, bmodels = setup
    for attempt in (1, 2):
        with pytest.raises(BuildError) as e:
            builds.build(bmodels.failing, 42)
        message = str(e.value)
        assert "bmodels.failing(42) failed" in message and "ValueError: boom 42" in message
        assert "output before the failure" in message and 'bmodels.py", line' in message  # the traceback
        assert build_recipes.builds(recipe) == attempt and _variants(builds) == []
    with pytest.raises(BuildError, match="returned a dict, not a ReturnnCommonSerializer"):
        builds.build(bmodels.not_a_serializer)
    assert _variants(builds) == []


def test_a_build_failing_in_an_nn_without_rc_compat_ends_in_the_fix(setup):
    """A Conformer of an ``nn`` that ``rc_compat.apply`` was not applied to fails deep inside returnn_common; the
    failure's last line names the fix (a failure elsewhere, as boom above, gets no such line)."""
    _, builds, bmodels = setup
    with pytest.raises(BuildError) as e:
        builds.build(bmodels.conformer_without_rc_compat)
    last = str(e.value).rstrip().splitlines()[-1]
    assert last.startswith("hint: returnn_common.nn was not made to build with this RETURNN (") and last.endswith(
        "call nn = rc_compat.apply(nn) (from i6_rc_jobs import rc_compat) before building the model"
    ), last
    with pytest.raises(BuildError) as e:
        builds.build(bmodels.failing, 43)
    assert "rc_compat" not in str(e.value)


def test_a_builder_must_be_importable_by_name(setup):
    _, builds, _ = setup

    def local():
        pass

    with pytest.raises(BuildError, match="module-level function .* move it there"):
        builds.build(local)


def test_a_corrupt_entry_is_never_loaded(setup):
    recipe, builds, bmodels = setup
    good = _lstm(builds, recipe, bmodels)
    (variant,) = _variants(builds)
    data = bytearray((variant / "result.pickle").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (variant / "result.pickle").write_bytes(bytes(data))
    again = _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 2 and _hash(again) == _hash(good)
    (entry,) = [v for v in _variants(builds) if v != variant]
    (entry / "entry.json").write_text((entry / "entry.json").read_text().replace('"recorded_ns": ', '"recorded_ns": 1'))
    _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 3


class _Payload:
    """A pickle that runs code when loaded: what a foreign entry could hold."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_foreign_entry_is_never_loaded(setup, tmp_path):
    """An entry made with another cache's key (another user who could write into the cache), holding a pickle that
    would run code, is not loaded: the build runs instead."""
    recipe, builds, bmodels = setup
    good = _lstm(builds, recipe, bmodels)
    (variant,) = _variants(builds)
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Payload(marker))
    entry = json.loads((variant / "entry.json").read_text())
    import hashlib

    entry["result_sha256"] = hashlib.sha256(payload).hexdigest()
    foreign = Store(tmp_path / "foreign-cache")
    data = json.dumps(entry, sort_keys=True).encode()
    forged = variant.parent / "99999999999999999999-forged"
    forged.mkdir()
    for name, content in [("entry.json", data), ("entry.sig", foreign.sign(data)), ("result.pickle", payload)]:
        (forged / name).write_bytes(content)
    assert Store(builds.cache).entry(forged) is None
    again = _lstm(builds, recipe, bmodels)
    assert not marker.exists() and _hash(again) == _hash(good) and build_recipes.builds(recipe) == 1
    pickle.loads(payload)  # the premise: loading it would have run the code
    assert marker.exists()


@pytest.mark.parametrize("how", ["group-writable", "world-readable", "another owner"])
def test_a_key_others_could_read_or_replace_is_refused(setup, how):
    recipe, builds, bmodels = setup
    _lstm(builds, recipe, bmodels)
    key = Path(builds.cache) / "key"
    if how == "group-writable":
        key.chmod(0o660)
    elif how == "world-readable":
        key.chmod(0o644)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a file another user's needs root")
        os.chown(key, 65534, 65534)
    with pytest.raises(UnsafeCacheError, match=str(key)):
        _lstm(builds, recipe, bmodels)


@pytest.fixture
def shared_root():
    """A cache root in /tmp that every user may write, with the sticky bit (as /tmp), where the user nobody works."""
    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root")
    root = Path(tempfile.mkdtemp(dir="/tmp"))
    root.chmod(0o1777)
    yield root
    shutil.rmtree(root)


def _as_nobody(*command: str) -> None:
    subprocess.run(["runuser", "-u", "nobody", "--", *command], check=True)


@pytest.mark.parametrize("directory", ["tmp", "entries", "locks"])
def test_a_directory_another_user_owns_in_a_shared_cache_is_refused(setup, shared_root, directory):
    """Another user who owns tmp/ could swap a build's directory and have the manager sign and unpickle their
    pickle (entries/, locks/: replace entries, hold locks): refused before anything is built, naming it."""
    recipe, _, bmodels = setup
    _as_nobody("mkdir", "-m", "0755", str(shared_root / directory))
    builds = Builds(cache=shared_root, workers=2)
    with pytest.raises(UnsafeCacheError, match=rf"{shared_root / directory} .*owner uid 65534.*rm -r"):
        _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 0


@pytest.mark.parametrize("owner", ["this user", "a user of this user's group"])
def test_a_shared_cache_of_this_user_or_its_group_is_used(setup, shared_root, owner):
    """The sticky root's sharing: directories of this user, or of another user of a group this user is in (who
    shares the key), are used."""
    recipe, _, bmodels = setup
    builds = Builds(cache=shared_root, workers=2)
    _lstm(builds, recipe, bmodels)
    if owner != "this user":
        for path in [shared_root / name for name in ("tmp", "entries", "locks", "bases")]:
            os.chown(path, 65534, os.getegid())
            path.chmod(0o2770)
    _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 1


def test_a_build_runs_in_a_directory_closed_to_everyone_else(setup, tmp_path):
    recipe, builds, bmodels = setup
    report = tmp_path / "report.json"
    builds.build(bmodels.reporting_directory, str(report))
    assert json.loads(report.read_text()) == {"uid": os.geteuid(), "mode": 0o700}


def test_a_result_file_that_is_not_what_the_build_process_made_is_never_loaded(setup):
    """The manager signs and unpickles only the bytes whose digest the build process sent it over its pipe."""
    recipe, builds, bmodels = setup
    with pytest.raises(BuildError, match=r"result\.pickle that is not the one its build process wrote"):
        builds.build(bmodels.swapped_result)
    assert _variants(builds) == []


def test_a_server_start_takes_the_fingerprints_it_kept_where_their_stat_proves_them(setup, tmp_path, monkeypatch):
    """A new server (with a new cache) does not read again a file it fingerprinted at an earlier start, if its stat
    is unchanged: the kept digest, altered here, is what its base records. Kept fingerprints that others could write
    are not used."""
    recipe, _, bmodels = setup
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    kept = tmp_path / "home" / ".cache" / "i6_rc_jobs" / f"fingerprints-{os.geteuid()}.json"
    library = recipe / "bpreloaded.py"
    library.write_text("X = 1\n")
    time.sleep(RACY_NS / 1e9 + 0.1)  # older than the racy margin when it is fingerprinted
    real = hashlib.sha256(library.read_bytes()).hexdigest()

    def recorded(cache: str) -> str:
        monkeypatch.setattr(lookup, "_bases", {})  # as in a new manager: no verified base to take fingerprints from
        builds = Builds(cache=tmp_path / cache, workers=2, preload=(*DEFAULT_PRELOAD, "bpreloaded"))
        _lstm(builds, recipe, bmodels)
        stop_servers()
        return Store(tmp_path / cache).newest_base()["files"][str(library)][0]

    assert recorded("first") == real
    data = json.loads(kept.read_text())
    data["files"][str(library)][0] = "f" * 64
    kept.write_text(json.dumps(data))
    assert recorded("second") == "f" * 64
    kept.chmod(0o666)
    assert recorded("third") == real


def test_a_build_depends_on_nothing_its_server_did_after_its_base(setup, tmp_path, monkeypatch):
    """Once its base is taken, the server keeps its fingerprints, pruning those of files that are gone (it looks at
    every kept path: other setups' libraries, thousands of them): none of that is a dependency of its builds, which
    record only what they add."""
    recipe, _, bmodels = setup
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    kept = tmp_path / "home" / ".cache" / "i6_rc_jobs" / f"fingerprints-{os.geteuid()}.json"
    kept.parent.mkdir(parents=True, mode=0o700)
    other = tmp_path / "other-setup" / "library.py"
    other.parent.mkdir()
    other.write_text("Y = 2\n")
    kept.write_text(json.dumps({"format": 1, "files": {str(other): ["0" * 64, 0, 0, 0, 0, 0, 0]}}))
    kept.chmod(0o600)
    stop_servers()
    monkeypatch.setattr(lookup, "_bases", {})
    builds = Builds(cache=tmp_path / "cache", workers=2)
    _lstm(builds, recipe, bmodels)
    stop_servers()
    [variant] = _variants(builds)
    files = _entry_files(builds, variant)
    assert str(recipe / "bmodels.py") in files and str(other) not in files, sorted(files)
    assert str(other) in json.loads(kept.read_text())["files"]  # kept: it is still there


def test_the_server_loads_no_keras_and_a_build_that_uses_it_depends_on_it(setup):
    """TensorFlow's eager import of Keras is skipped in the build server (a model build needs none of it); a builder
    that uses ``tf.keras`` gets it all the same, and its entry depends on Keras' files, not the base."""
    _, builds, bmodels = setup
    plain = builds.build(bmodels.first_size, {"a": 8})
    with_keras = builds.build(bmodels.with_keras)
    assert _hash(with_keras) == _hash(plain)  # the Dense layer's 8 units
    base = Store(builds.cache).newest_base()
    assert base is not None and not [path for path in base["files"] if "/site-packages/keras/" in path]
    keras = {
        json.loads((variant / "entry.json").read_text())["builder"]: [
            path for path in _entry_files(builds, variant) if "/site-packages/keras/" in path
        ]
        for variant in _variants(builds)
    }
    assert keras["bmodels.with_keras"] and not keras["bmodels.first_size"]


@pytest.mark.parametrize("workers", [1, 2])
def test_no_more_builds_run_at_once_than_workers(setup, tmp_path, workers):
    """The manager sends builds ahead of their turn; the server still runs at most ``workers`` at once."""
    _, _, bmodels = setup
    report = tmp_path / "report"
    builds = Builds(cache=tmp_path / "cache", workers=workers)
    builds.build_many([(bmodels.timed, (str(report), index), {}) for index in range(2 * workers + 1)])
    spans = [tuple(map(float, line.split())) for line in report.read_text().splitlines()]
    at_once = max(sum(begun <= moment < ended for begun, ended in spans) for moment, _ in spans)
    assert len(spans) == 2 * workers + 1 and at_once <= workers, spans


MANAGER = textwrap.dedent("""
    import json, os, sys
    sys.path[:0] = [{recipe!r}, {repo!r}]
    from i6_rc_jobs import Builds
    import bmodels
    builds = Builds(cache={cache!r}, workers=2)
    results = builds.build_many([(bmodels.lstm, (path,), {{}}) for path in json.loads(sys.argv[1])])
    print(json.dumps([r._sis_hash().decode() for r in results]), flush=True)
    """)


def _manager(recipe: Path, cache: Path, paths: list[str]) -> subprocess.Popen:
    code = MANAGER.format(recipe=str(recipe), repo=str(REPO), cache=str(cache))
    return subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(paths)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_concurrent_managers_build_each_entry_once(setup, tmp_path):
    """Three managers at once, with the same two builds in different orders: one build each, the same hashes."""
    recipe, builds, _ = setup
    (recipe / "layers2.txt").write_text("2")
    time.sleep(SETTLE_S)
    one, two = str(recipe / "layers.txt"), str(recipe / "layers2.txt")
    managers = [_manager(recipe, builds.cache, order) for order in ([one, two], [two, one], [one, two])]
    outputs = []
    for manager in managers:
        out, err = manager.communicate(timeout=600)
        assert manager.returncode == 0, err[-3000:]
        outputs.append(json.loads(out.splitlines()[-1]))
    assert outputs[0] == outputs[1][::-1] == outputs[2] and outputs[0][0] != outputs[0][1]
    assert build_recipes.builds(recipe) == 2 and len(_variants(builds)) == 2


def _wait_for(predicate, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_a_killed_build_process_leaves_nothing(setup):
    """SIGKILL of the build process while it builds: the manager says so, no entry; the next build works."""
    recipe, builds, bmodels = setup
    (recipe / "pause").touch()
    import threading

    errors = []

    def manager():
        try:
            _lstm(builds, recipe, bmodels)
        except BuildError as e:
            errors.append(str(e))

    thread = threading.Thread(target=manager)
    thread.start()
    _wait_for(lambda: build_recipes.builds(recipe) == 1)
    pid = int((recipe / "counter").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    thread.join(120)
    (recipe / "pause").unlink()
    assert len(errors) == 1 and "was killed by signal 9" in errors[0]
    assert _variants(builds) == []
    _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 2 and len(_variants(builds)) == 1


@pytest.mark.parametrize("delay", [0.0, 0.3, 1.0, 3.0, "building", "just after"])
def test_a_manager_killed_at_any_point_leaves_nothing_that_is_used(setup, delay):
    """SIGKILL of a manager at points from its start to its end: whatever it left is a complete, verified entry or
    nothing, its build process and server end, and the next manager gets the right result."""
    recipe, builds, bmodels = setup
    expected = _lstm(Builds(cache=builds.cache.with_name("reference")), recipe, bmodels)
    (recipe / "counter").unlink()
    if delay == "building":
        (recipe / "pause").touch()
    manager = _manager(recipe, builds.cache, [str(recipe / "layers.txt")])
    if delay == "building":
        _wait_for(lambda: build_recipes.builds(recipe) == 1)
    elif delay == "just after":
        _wait_for(lambda: build_recipes.builds(recipe) == 1)
        time.sleep(0.5)
    else:
        time.sleep(delay)
    manager.kill()
    manager.communicate()
    (recipe / "pause").unlink(missing_ok=True)
    if build_recipes.builds(recipe):
        child = int((recipe / "counter").read_text().split()[0])
        _wait_for(lambda: not _alive(child), timeout=30)
    store = Store(builds.cache)
    for variant in _variants(builds):
        entry = store.entry(variant)
        assert entry is not None and store.result_bytes(variant, entry) is not None, variant
    assert _hash(_lstm(builds, recipe, bmodels)) == _hash(expected)


def _cli(*args: str, cache: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", "builds", *args],
        env={**os.environ, "I6_RC_BUILD_CACHE": str(cache), **(env or {})},
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )


def test_the_builds_command_lists_verifies_and_prunes(setup):
    recipe, builds, bmodels = setup
    built = _lstm(builds, recipe, bmodels)
    listing = _cli(cache=builds.cache)
    assert listing.returncode == 0, listing.stderr
    (line,) = [line for line in listing.stdout.splitlines() if line.startswith("bmodels.lstm")]
    assert repr(str(recipe / "layers.txt"))[:30] in line and _hash(built)[:0] in line
    entry = Store(builds.cache).entry(_variants(builds)[0])
    assert entry["sis_hash"][:12] in line

    same = _cli("--verify", cache=builds.cache)
    assert same.returncode == 0 and "same hash" in same.stdout, same.stdout + same.stderr
    differs = _cli("--verify", cache=builds.cache, env={"BMODELS_HIDDEN": "8"})
    assert differs.returncode == 1 and "DIFFERS" in differs.stdout, differs.stdout + differs.stderr

    assert _cli("--prune", "1d", cache=builds.cache).returncode == 0 and len(_variants(builds)) == 1
    assert _cli("--prune", "0s", cache=builds.cache).returncode == 0 and _variants(builds) == []
    assert "no duration" in _cli("--prune", "soon", cache=builds.cache).stderr


def test_an_interrupted_build_many_leaves_later_builds_working(setup):
    """KeyboardInterrupt while two builds run: their server ends with them, and the next build gets its own result."""
    recipe, builds, bmodels = setup
    (recipe / "layers2.txt").write_text("2")
    (recipe / "pause").touch()
    time.sleep(SETTLE_S)
    paths = [str(recipe / "layers.txt"), str(recipe / "layers2.txt")]

    def interrupt():
        _wait_for(lambda: build_recipes.builds(recipe) == 2)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    with pytest.raises(KeyboardInterrupt):
        builds.build_many([(bmodels.lstm, (path,), {}) for path in paths])
    thread.join()
    (recipe / "pause").unlink()
    for pid in (recipe / "counter").read_text().split():
        _wait_for(lambda pid=int(pid): not _alive(pid), timeout=30)
    reference = _lstm(Builds(cache=builds.cache.with_name("reference")), recipe, bmodels)
    assert _hash(_lstm(builds, recipe, bmodels)) == _hash(reference) and len(_variants(builds)) == 1


def test_a_build_that_exits_without_a_result_says_so(setup):
    _, builds, bmodels = setup
    with pytest.raises(BuildError) as e:
        builds.build(bmodels.exits)
    message = str(e.value)
    assert "the build of bmodels.exits() ended with exit status 0 but wrote no result" in message
    assert len(message.splitlines()) == 1 and _variants(builds) == []


def test_a_server_that_does_not_start_shows_its_output(setup, tmp_path):
    recipe, builds, bmodels = setup
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nread setup\necho 'this Python cannot run the build server' >&2\nexit 3\n")
    python.chmod(0o755)
    with pytest.raises(BuildError, match="did not start; its output:\nthis Python cannot run the build server"):
        _lstm(Builds(python=str(python), cache=builds.cache), recipe, bmodels)


def test_a_cache_that_cannot_be_written_builds_without_it_and_says_so_once(setup, tmp_path, caplog):
    recipe, _, bmodels = setup
    (tmp_path / "file").write_text("")
    builds = Builds(cache=tmp_path / "file" / "cache", workers=2)
    with caplog.at_level("WARNING"):
        first, second = _lstm(builds, recipe, bmodels), _lstm(builds, recipe, bmodels)
    (warning,) = [record.getMessage() for record in caplog.records if "cannot be written" in record.getMessage()]
    assert warning.startswith(f"build cache: {builds.cache} cannot be written (Not a directory: {tmp_path / 'file'}")
    assert warning.endswith("building without caching")
    assert _hash(first) == _hash(second) and build_recipes.builds(recipe) == 2


def test_builds_from_several_threads(setup):
    """Three threads build at once in one process, sharing the build server it started before: each gets its own
    result."""
    recipe, builds, bmodels = setup
    _lstm(builds, recipe, bmodels)
    paths = []
    for layers in (2, 3, 4):
        (recipe / f"layers{layers}.txt").write_text(str(layers))
        paths.append(str(recipe / f"layers{layers}.txt"))
    time.sleep(SETTLE_S)
    results: dict[str, str] = {}

    def build(path: str) -> None:
        results[path] = _hash(builds.build(bmodels.lstm, path))

    threads = [threading.Thread(target=build, args=(path,), daemon=True) for path in paths]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 180
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert sorted(results) == sorted(paths) and len(set(results.values())) == 3
    assert build_recipes.builds(recipe) == 4
    assert [_hash(builds.build(bmodels.lstm, path)) for path in paths] == [results[path] for path in paths]


def _lock_messages(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if "the lock" in record.getMessage()]


def test_a_stopped_manager_holding_a_lock_is_waited_for_a_bounded_time_and_named(setup, caplog):
    recipe, builds, bmodels = setup
    (recipe / "pause").touch()
    manager = _manager(recipe, builds.cache, [str(recipe / "layers.txt")])
    try:
        _wait_for(lambda: build_recipes.builds(recipe) == 1)
        os.kill(manager.pid, signal.SIGSTOP)
        (recipe / "pause").unlink()
        started = time.monotonic()
        with caplog.at_level("WARNING"):
            _lstm(Builds(cache=builds.cache, lock_timeout=4), recipe, bmodels)
        assert 4 <= time.monotonic() - started < 60
    finally:
        os.kill(manager.pid, signal.SIGCONT)
        manager.kill()
        manager.communicate()
    waiting, gave_up = _lock_messages(caplog)
    holder = f"held by pid {manager.pid} on {socket.gethostname()} since "
    assert "waiting (at most 4 s) for the lock" in waiting and "bmodels.lstm(" in waiting and holder in waiting
    assert "built without it" in gave_up and holder in gave_up
    assert build_recipes.builds(recipe) == 2


def test_a_lock_held_for_a_dead_process_is_taken_over(setup, caplog):
    recipe, builds, bmodels = setup
    from i6_rc_jobs._builds.call import Call

    ended = subprocess.Popen(["true"])
    ended.wait()
    lock = Store(builds.cache).lock(Call(bmodels.lstm, (str(recipe / "layers.txt"),), {}).key)
    with open(lock, "a") as f:  # held by a process the dead one started, say
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(f"{ended.pid} {pwd.getpwuid(os.getuid()).pw_name} {socket.gethostname()} {time.time()}\n")
        f.flush()
        with caplog.at_level("WARNING"):
            thread = threading.Thread(target=_lstm, args=(builds, recipe, bmodels), daemon=True)
            thread.start()
            thread.join(120)
        assert not thread.is_alive(), "still waiting for the lock"
    (message,) = _lock_messages(caplog)
    assert f"held by pid {ended.pid} on {socket.gethostname()}" in message and message.endswith("taken over")
    assert len(_variants(builds)) == 1


def test_a_process_a_builder_starts_ends_with_its_build(setup, tmp_path):
    _, builds, bmodels = setup
    pid_file = tmp_path / "pid"
    builds.build(bmodels.spawning, str(pid_file))
    pid = int(pid_file.read_text())
    try:
        _wait_for(lambda: not _alive(pid), timeout=30)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_builds_command_reports_stray_and_broken_items_in_one_line_each(setup, tmp_path):
    """A stray file among the entries and in an entry's place, a signature without its entry, and an entry whose
    setup directory is gone: listed, verified and pruned with a line each."""
    recipe, builds, bmodels = setup
    (recipe / "layers2.txt").write_text("2")
    time.sleep(SETTLE_S)
    _lstm(builds, recipe, bmodels)
    gone = tmp_path / "setup"
    gone.mkdir()
    Builds(cache=builds.cache, cwd=str(gone)).build(bmodels.lstm, str(recipe / "layers2.txt"))
    shutil.rmtree(gone)
    entries = Path(builds.cache) / "entries"
    key = sorted(entries.iterdir())[0]
    (entries / "stray").write_text("")
    (key / "stray").write_text("")
    (key / "signature-only").mkdir()
    (key / "signature-only" / "entry.sig").write_text("0" * 64)
    (Path(builds.cache) / "bases" / "dangling.sig").symlink_to(tmp_path / "nothing")
    listing = _cli(cache=builds.cache)
    assert listing.returncode == 0 and not listing.stderr, listing.stderr
    for item in (entries / "stray", key / "stray", key / "signature-only"):
        (line,) = [line for line in listing.stdout.splitlines() if line.startswith(f"{item}:")]
        assert line.endswith(
            "signed with this cache's key (a stray file, or corrupt, foreign or of an older format): never used"
        )
    verified = _cli("--verify", cache=builds.cache)
    assert verified.returncode == 1 and "Traceback" not in verified.stderr, verified.stderr
    lines = verified.stdout.splitlines()
    assert (
        f"its setup directory {gone} is gone: not verified" in lines[0]
        or f"its setup directory {gone} is gone: not verified" in lines[1]
    )
    assert sum("same hash" in line for line in lines) == 1 and len(lines) == 2
    pruned = _cli("--prune", "0s", cache=builds.cache)
    assert pruned.returncode == 0 and not pruned.stderr, pruned.stderr
    assert _variants(builds) == [] and not list((Path(builds.cache) / "bases").iterdir())


def test_the_cache_keeps_digests_of_environment_values_and_is_closed_to_others(setup, monkeypatch):
    """A builder that reads a token (among every variable): no file of the cache holds it, none is readable by
    others, and a new token still rebuilds."""
    recipe, builds, bmodels = setup
    token = f"token-{secrets.token_hex(8)}"
    monkeypatch.setenv("BMODELS_TOKEN", token)
    builds.build(bmodels.copies_environ)
    builds.build(bmodels.copies_environ)
    cache = Path(builds.cache)
    files = [path for path in cache.rglob("*") if path.is_file() and "locks" not in path.parts]
    assert len(files) >= 8 and [path for path in files if token.encode() in path.read_bytes()] == []
    assert [path for path in files if path.stat().st_mode & 0o007] == []
    (variant,) = _variants(builds)
    assert variant.stat().st_mode & 0o007 == 0 and build_recipes.builds(recipe) == 1
    monkeypatch.setenv("BMODELS_TOKEN", token + "x")
    builds.build(bmodels.copies_environ)
    assert build_recipes.builds(recipe) == 2


def test_managers_that_load_the_same_libraries_store_one_base(setup):
    """Each manager start runs a new build server: the base it records is the one stored before, not a new file."""
    recipe, builds, _ = setup
    (recipe / "layers2.txt").write_text("2")
    time.sleep(SETTLE_S)
    for name in ("layers.txt", "layers2.txt"):
        manager = _manager(recipe, builds.cache, [str(recipe / name)])
        _, err = manager.communicate(timeout=600)
        assert manager.returncode == 0, err[-3000:]
    assert len(list((Path(builds.cache) / "bases").glob("*.json"))) == 1
    assert build_recipes.builds(recipe) == 2 and len(_variants(builds)) == 2


def test_two_setups_with_the_same_call_keep_their_own_entries(setup, tmp_path):
    """The same builder and arguments in two setup directories: each builds once, and neither evicts the other."""
    recipe, builds, bmodels = setup
    setups = [tmp_path / "one", tmp_path / "two"]
    for directory in setups:
        directory.mkdir()
    for directory in setups + setups:
        Builds(cache=builds.cache, cwd=str(directory), workers=2).build(bmodels.lstm, str(recipe / "layers.txt"))
    assert build_recipes.builds(recipe) == 2 and len(_variants(builds)) == 2


def test_a_job_output_in_a_build_hashes_as_in_the_manager(setup):
    """Sisyphus pickles a tk.Path without its creator (the job), which its hash holds: a job's output passed into a
    build and held by its result hashes as when built in the manager, built and from the cache."""
    _, builds, bmodels = setup
    from tests.support.jobs import MakeCheckpoint

    checkpoint = MakeCheckpoint("a job output in a build").out
    other = MakeCheckpoint("another job").out
    in_manager = _hash(bmodels.with_checkpoint(checkpoint))
    assert pickle.loads(pickle.dumps(checkpoint)).creator is None  # the premise
    assert _hash(bmodels.with_checkpoint(other)) != in_manager
    built = builds.build(bmodels.with_checkpoint, checkpoint)
    assert _hash(built) == in_manager and _hash(builds.build(bmodels.with_checkpoint, checkpoint)) == in_manager
    assert _hash(builds.build(bmodels.with_checkpoint, other)) == _hash(bmodels.with_checkpoint(other))


PROOFS_MANAGER = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [{recipe!r}, {repo!r}]
    from i6_rc_jobs import Builds
    from i6_rc_jobs._builds import fingerprint, probes, proofs
    resolved, read, proofs_read = [], [], []
    real = probes.resolve, fingerprint.digest, proofs.load
    probes.resolve = lambda name, path: resolved.append(name) or real[0](name, path)
    fingerprint.digest = lambda path: read.append(path) or real[1](path)
    proofs.load = lambda path: proofs_read.append(path) or real[2](path)
    import bmodels
    result = Builds(cache={cache!r}, workers=2).build(bmodels.lstm, {layers!r})
    print(json.dumps([result._sis_hash().decode(), len(resolved), len(read), len(proofs_read)]), flush=True)
    """)


def _starts(setup, home: Path, verdicts: bool = True):
    """A manager's start in a process of its own, as a function: (the result's hash, names resolved, files read,
    module proofs read), each start after the stats it would trust are old enough; without ``verdicts``, each start
    finds none kept (it proves its records item by item)."""
    recipe, builds, _ = setup
    environ = dict(os.environ, HOME=str(home))
    code = PROOFS_MANAGER.format(
        recipe=str(recipe), repo=str(REPO), cache=str(builds.cache), layers=str(recipe / "layers.txt")
    )

    def manager() -> tuple[str, int, int, int]:
        time.sleep(RACY_NS / 1e9)
        if not verdicts:
            for kept in (home / ".cache" / "i6_rc_jobs").glob("verdicts-*"):
                shutil.rmtree(kept)
        done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        found, resolved, read, proofs_read = json.loads(done.stdout.splitlines()[-1])
        return found, resolved, read, proofs_read

    return manager


def test_a_second_process_takes_the_module_proofs_the_first_kept_and_a_change_still_shows(setup, tmp_path):
    """A manager's start resolves the module names its entries looked for and keeps the proofs: the next start
    resolves none, unless a directory they rest on changed (then those names again, once); a kept proof never hides a
    module that now shadows another, nor is a file of kept proofs that others could write used. (A change elsewhere
    on this machine to a directory on sys.path makes a start resolve names again: the test's are its own. No start
    here finds a verdict kept, which would spare it the proofs.)"""
    recipe, builds, bmodels = setup
    before = _hash(_lstm(builds, recipe, bmodels))
    manager = _starts(setup, tmp_path / "home", verdicts=False)
    first, resolved_first, *_ = manager()
    second, resolved_second, *_ = manager()
    assert (first, second) == (before, before) and resolved_first > 0 and resolved_second == 0
    (kept,) = (tmp_path / "home" / ".cache" / "i6_rc_jobs").glob("module-proofs-*.marshal")
    os.chmod(kept, 0o622)
    assert manager()[1] > 0  # not used: others could have written it
    _edit(recipe / "bnew.py", "FACTOR = 2\n")  # a name added to a directory on sys.path
    unrelated, resolved_again, *_ = manager()  # (the entry may be rebuilt: a build lists the directory)
    assert unrelated == before and 0 < resolved_again < resolved_first
    manager()  # (resolves the names of the rebuilt entry's record, new to a manager)
    assert manager()[1] == 0  # the names of the changed directory are proven again: kept from then on
    built = build_recipes.builds(recipe)
    (recipe / "bhelper").mkdir()  # a package is found before the module of its name
    (recipe / "bhelper" / "__init__.py").write_text("FACTOR = 5\n")
    try:
        shadowed, *_ = manager()
    finally:
        shutil.rmtree(recipe / "bhelper", ignore_errors=True)
    assert shadowed != before and build_recipes.builds(recipe) == built + 1


@pytest.mark.parametrize("edit", ["same size and mtime", "a package of the module's name", "env", "foreign verdicts"])
def test_a_later_start_takes_the_kept_verdict_and_an_edit_still_shows(setup, tmp_path, monkeypatch, edit):
    """Once a start proved the records item by item, the next takes their kept verdicts: it reads no file, resolves
    no name and reads no module proofs, and serves the same result. An edit of anything a verdict rests on is still
    seen (an edit that kept size and mtime, a package that now shadows a module, a variable the builder read), and
    verdicts others could have written are not taken."""
    recipe, builds, bmodels = setup
    before = _hash(_lstm(builds, recipe, bmodels))
    manager = _starts(setup, tmp_path / "home")
    manager()  # resolves the names and keeps the proofs
    manager()  # proves the records with them and keeps the verdicts
    assert manager() == (before, 0, 0, 0)
    helper, built = recipe / "bhelper.py", build_recipes.builds(recipe)
    if edit == "same size and mtime":
        st = helper.stat()
        helper.write_text("FACTOR = 3\n")
        os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif edit == "env":
        monkeypatch.setenv("BMODELS_HIDDEN", "32")
    elif edit == "foreign verdicts":
        for kept in (tmp_path / "home" / ".cache" / "i6_rc_jobs").glob("verdicts-*/*"):
            os.chmod(kept, 0o622)
    else:
        (recipe / "bhelper").mkdir()
        (recipe / "bhelper" / "__init__.py").write_text("FACTOR = 5\n")
    try:
        after, resolved, read, proofs_read = _starts(setup, tmp_path / "home")()
    finally:
        shutil.rmtree(recipe / "bhelper", ignore_errors=True)
    if edit == "foreign verdicts":
        assert (after, proofs_read) == (before, 1) and build_recipes.builds(recipe) == built
    else:
        assert after != before and build_recipes.builds(recipe) == built + 1


@pytest.mark.parametrize("touched", [False, True])
def test_a_verdict_is_kept_only_if_nothing_it_rests_on_moved_while_proving(setup, tmp_path, monkeypatch, touched):
    """A lookup that proves a record item by item keeps its verdict only if every stat it rests on was the same
    before and after the proof: a file touched meanwhile (its content kept: the record holds) leaves none."""
    recipe, builds, bmodels = setup
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # (a variable builds read)
    _lstm(builds, recipe, bmodels)
    time.sleep(RACY_NS / 1e9)
    for verdict in (tmp_path / "home" / ".cache" / "i6_rc_jobs").glob("verdicts-*/*.marshal"):
        verdict.unlink()
    monkeypatch.setattr(lookup, "_verdicts", {})
    monkeypatch.setattr(lookup, "_residuals", {})
    real = lookup.Recheck.changed

    def changed(self, record):
        if touched and str(recipe / "bhelper.py") in record["files"]:
            os.utime(recipe / "bhelper.py")  # after the stats were taken, before they are taken again
        return real(self, record)

    monkeypatch.setattr(lookup.Recheck, "changed", changed)
    _lstm(builds, recipe, bmodels)
    kept = list((tmp_path / "home" / ".cache" / "i6_rc_jobs").glob("verdicts-*/*.marshal"))
    assert build_recipes.builds(recipe) == 1
    assert len(kept) == (1 if touched else 2)  # the base's (it does not rest on bhelper.py), and the build's


def test_setups_that_share_a_cache_and_a_directory_both_stay_warm(setup, monkeypatch):
    """The same call in two setups whose entries cannot both hold (here another value of a variable the builder
    reads; as well another Python or sys.path): each keeps its variant and is served it at every start; of the
    variants that do not hold, the ``KEEP_STALE`` used last are kept."""
    recipe, builds, bmodels = setup
    hashes = {}
    for hidden in ("16", "32", "16", "32"):
        monkeypatch.setenv("BMODELS_HIDDEN", hidden)
        hashes.setdefault(hidden, set()).add(_hash(_lstm(builds, recipe, bmodels)))
    assert build_recipes.builds(recipe) == 2 and len(_variants(builds)) == 2
    assert all(len(found) == 1 for found in hashes.values()) and hashes["16"] != hashes["32"]
    for hidden in ("8", "24", "40", "48"):
        monkeypatch.setenv("BMODELS_HIDDEN", hidden)
        _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 6 and len(_variants(builds)) == 1 + lookup.KEEP_STALE
    monkeypatch.setenv("BMODELS_HIDDEN", "40")
    _lstm(builds, recipe, bmodels)
    assert build_recipes.builds(recipe) == 6  # one of those used last


BYTECODE = textwrap.dedent("""
    import importlib._bootstrap_external as external, json, sys
    sys.path[:0] = [{recipe!r}, {repo!r}]
    from i6_rc_jobs._builds import server
    compiled = []
    real = external.SourceLoader.source_to_code
    def counted(self, data, path, *, _optimize=-1):
        compiled.append(path)
        return real(self, data, path, _optimize=_optimize)
    external.SourceLoader.source_to_code = counted
    server._bytecode_of_installed_only({nowhere!r})
    import colorsys, bstale
    print(json.dumps([compiled, colorsys.__cached__, bstale.VALUE]))
    """)


def test_a_build_takes_the_bytecode_of_installed_modules_and_compiles_the_setups_from_source(tmp_path):
    """A build imports the standard library and the installed packages from their ``__pycache__`` (librosa takes
    three times as long compiled from source), and the setup's modules from their source, never from a ``.pyc`` of an
    edit that kept the size and mtime; it writes no bytecode."""
    recipe, nowhere = tmp_path / "recipe", tmp_path / "no-bytecode"
    recipe.mkdir()
    source = recipe / "bstale.py"
    source.write_text("VALUE = 2\n")
    import py_compile

    py_compile.compile(str(source), doraise=True)  # the bytecode of an earlier edit of the same size and mtime
    st = source.stat()
    source.write_text("VALUE = 1\n")
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    code = BYTECODE.format(recipe=str(recipe), repo=str(REPO), nowhere=str(nowhere))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled, colorsys_cached, value = json.loads(done.stdout.splitlines()[-1])
    import colorsys
    import importlib.util

    assert value == 1 and compiled == [str(source)]
    assert colorsys_cached == importlib.util.cache_from_source(colorsys.__file__)
    assert not nowhere.exists() or not any(path.is_file() for path in nowhere.rglob("*"))

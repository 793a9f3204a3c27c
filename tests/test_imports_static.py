"""Finding versioned imports without running them: ``prefetch`` puts a setup's whole import graph into the cache for
nodes without network access, and ``ide-paths`` lays the versions out for a real static analyzer (jedi), with real
git repositories made here (as in tests/test_imports.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jedi
import pytest

from i6_rc_jobs import import_
from i6_rc_jobs._imports.cache import TREES
from i6_rc_jobs._imports.static import Call, Unresolved, find
from tests import test_imports
from tests.support.pins import version as pinned_version
from tests.support.sisyphus_setup import REPO as PROJECT
from tests.test_imports import REPO, Origin, _git

origin = test_imports.origin  # the fixture, for the tests here too

LIB = "example.org/test/lib"


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "i6_rc_jobs", *args], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True
    )


@pytest.fixture
def setup(origin, tmp_path, monkeypatch) -> Path:
    """A Sisyphus setup directory whose config imports, from a version of the origin, a package that imports a
    version of a second repository (``example.org/test/lib``) in a module of its own, and a ``.config`` file that
    imports another version of it; and that calls import_ once in a way no reading of the source can resolve."""
    lib = Origin(tmp_path / "lib", origin.cache, [])
    lib.path.mkdir()
    _git(lib.path, "init", "-q", "-b", "main")
    lib.commit({"lib.py": "VALUE = 'lib'\n"}, "2024-05-06T07:08:09+01:00")
    lib.commit({"lib.py": "VALUE = 'lib 2'\n"}, "2024-05-07T07:08:09+01:00")
    uses = "from i6_rc_jobs import import_\n\n"
    origin.commit(
        {
            "app/__init__.py": "from .uses_lib import VALUE\n",
            "app/uses_lib.py": f"{uses}LIB = {lib.version(0)!r}\nVALUE = import_({LIB!r}, 'lib.py', LIB).VALUE\n",
            "settings.config": f"{uses}VALUE = import_({LIB!r}, 'lib.py', {lib.version(1)!r}).VALUE\n",
        },
        "2024-06-07T08:09:10+01:00",
    )
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    monkeypatch.setenv("GIT_CONFIG_KEY_1", f"url.{lib.path}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", f"https://{LIB}")
    setup = tmp_path / "setup"
    (setup / "config").mkdir(parents=True)
    (setup / "config" / "main.py").write_text(textwrap.dedent(f"""\
            from i6_rc_jobs import import_

            VERSION = {origin.version(2)!r}


            def py():
                app = import_({REPO!r}, "app", VERSION)
                return [app.VALUE, import_({REPO!r}, "settings.config", VERSION).VALUE]
            """))
    (setup / "config" / "other.py").write_text(
        f"from i6_rc_jobs import import_\n\n\ndef py(version):\n    return import_({REPO!r}, 'pkg', version)\n"
    )
    return setup


def test_prefetch_fetches_the_whole_import_graph_and_a_process_without_network_imports_from_the_cache(
    origin, setup, tmp_path
):
    done = _run(setup, "prefetch")
    assert done.returncode == 1, done.stderr  # one call not resolved statically
    tree = origin.cache / TREES / "example.org" / "test" / "origin" / origin.commits[2]
    lib = Origin(
        tmp_path / "lib", origin.cache, [_git(tmp_path / "lib", "rev-parse", f"HEAD~{i}").strip() for i in (1, 0)]
    )
    lib_versions = [lib.version(0), lib.version(1)]
    assert done.stdout.splitlines() == [
        f"config/main.py:7: {REPO} app {origin.version(2)}",
        f"config/main.py:8: {REPO} settings.config {origin.version(2)}",
        f"{tree}/app/uses_lib.py:4: {LIB} lib.py {lib_versions[0]}",
        f"{tree}/settings.config:3: {LIB} lib.py {lib_versions[1]}",
        "config/other.py:5: not resolved statically: version version: not a string literal, nor a name or item of a "
        "string (or tuple of them) assigned once at module level",
        f"4 calls of import_, 3 versions in the cache {origin.cache}, 1 not resolved statically, 0 errors",
    ]
    shutil.move(origin.path, tmp_path / "moved-away")  # the network is gone: neither repository can be reached
    shutil.move(tmp_path / "lib", tmp_path / "moved-away-lib")
    code = "import sys; sys.path.insert(0, 'config'); import main; print(main.py())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=setup, env={**os.environ, "PATH": "/nonexistent"}, capture_output=True
    )
    assert (done.returncode, done.stdout) == (0, b"['lib', 'lib 2']\n"), done.stderr


def test_prefetch_exits_0_when_all_is_fetched_and_2_naming_the_call_of_a_path_not_in_its_version(origin, setup):
    (setup / "config" / "other.py").unlink()
    assert _run(setup, "prefetch").returncode == 0
    (setup / "config" / "wrong.py").write_text(
        f"from i6_rc_jobs import import_\n\nimport_({REPO!r}, 'nope.py', {origin.version(0)!r})\n"
    )
    done = _run(setup, "prefetch", "config/wrong.py", "config/missing")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: config/missing: no such file or directory",
        f"error: config/wrong.py:3: {REPO} version {origin.version(0)}: no file or directory 'nope.py' in it",
    ]


def test_prefetch_of_the_examples_recipe_resolves_its_pinned_tuple_and_exits_0(tmp_path):
    """The example pins returnn_common as ``RETURNN_COMMON = repo, version``, unpacked where it calls import_;
    returnn_common's GitHub URL is mapped to the checkout of it here (git's insteadOf)."""
    checkout = PROJECT / ".deps" / "src" / "returnn_common"
    mirror = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{checkout}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/rwth-i6/returnn_common",
        "I6_RC_IMPORTS_CACHE": str(tmp_path / "cache"),
    }
    done = _run(PROJECT, "prefetch", "recipe_examples/recipe", **mirror)
    version = pinned_version("returnn_common")
    assert done.stdout.splitlines() == [
        f"recipe_examples/recipe/task12ax_model.py:20: github.com/rwth-i6/returnn_common nn {version}",
        f"1 calls of import_, 1 versions in the cache {tmp_path / 'cache'}, 0 not resolved statically, 0 errors",
    ], done.stderr
    assert done.returncode == 0


def test_import_calls_are_found_through_any_import_of_import__and_resolved_only_from_the_source(tmp_path):
    file = tmp_path / "config.py"
    file.write_text(textwrap.dedent("""\
            import i6_rc_jobs.imports
            import i6_rc_jobs as loader
            from i6_rc_jobs import *
            from i6_rc_jobs import import_ as versioned
            from returnn.import_ import import_ as returnn_import

            REPO = "example.org/test/origin"
            PATH: str = "pkg"
            TWICE = "20240102-abcdef1"
            TWICE = "20240103-abcdef1"
            SHADOWED = "20240102-abcdef1"

            a = import_(REPO, PATH, "20240102-abcdef1")
            b = i6_rc_jobs.imports.import_(version="20240102-abcdef1", repo=REPO, path="x.config")
            c = loader.import_(REPO, "pkg", TWICE)
            d = versioned(REPO, "pkg", None)
            e = versioned(REPO, *["pkg", "20240102-abcdef1"])
            f = [versioned]
            g = returnn_import("github.com/rwth-i6/returnn_common", "nn", "20221031-3bd01ac8d7b2")
            h = versioned(REPO, "pkg", f"20240102-{REPO}")


            def later(SHADOWED):
                return versioned(REPO, "pkg", SHADOWED)


            PINNED = REPO, ("20240102-abcdef1")
            UNPACKED_TWICE = PINNED


            def pinned():
                repo, version = PINNED
                return versioned(repo, "pkg", version), versioned(PINNED[0], "pkg", PINNED[-1])


            def not_known():
                one, two, three = PINNED
                a, b = UNPACKED_TWICE
                a, b = UNPACKED_TWICE
                return versioned(REPO, "pkg", three), versioned(REPO, "pkg", b), versioned(*PINNED[:1], "pkg", "x")
            """))
    constant = "not a string literal, nor a name or item of a string (or tuple of them) assigned once at module level"
    assert find(file) == [
        Call(file, 13, REPO, "pkg", "20240102-abcdef1"),
        Call(file, 14, REPO, "x.config", "20240102-abcdef1"),
        Unresolved(file, 15, f"version TWICE: {constant}"),
        Unresolved(file, 16, "version None: development mode imports a working copy, no version"),
        Unresolved(file, 17, "not import_(repo, path, version): versioned(REPO, *['pkg', '20240102-abcdef1'])"),
        Unresolved(file, 18, "import_ is used other than called: calls through it are not found"),
        Unresolved(file, 20, f"version f'20240102-{{REPO}}': {constant}"),
        Unresolved(file, 24, f"version SHADOWED: {constant}"),
        Call(file, 33, REPO, "pkg", "20240102-abcdef1"),
        Call(file, 33, REPO, "pkg", "20240102-abcdef1"),
        Unresolved(file, 40, f"version three: {constant}"),
        Unresolved(file, 40, f"version b: {constant}"),
        Unresolved(file, 40, "not import_(repo, path, version): versioned(*PINNED[:1], 'pkg', 'x')"),
    ]
    file.write_text("import_(\n")
    assert find(file) == [Unresolved(file, 1, "cannot be parsed: '(' was never closed")]


def test_ide_paths_lets_jedi_resolve_names_of_a_versioned_module_to_the_versions_file(origin, setup, tmp_path):
    ide = tmp_path / "ide"
    done = _run(setup, "ide-paths", str(ide), "config")
    assert done.returncode == 1, done.stderr  # prefetch's status: config/other.py
    package = import_(REPO, "pkg", origin.version(1)).__name__.removesuffix(".pkg")
    assert f"{REPO} {origin.version(1)}: {package}" not in done.stdout  # not used by the config
    done = _run(setup, "ide-paths", str(ide))  # again, now with every version in the cache
    assert done.returncode == 0 and f"{REPO} {origin.version(1)}: {package}\n" in done.stdout, done.stderr
    source = f"from {package}.pkg import helper\nfrom i6_rc_jobs import import_\nhelper.value()\nimport_\n"
    edited = setup / "config" / "edit.py"

    def script(*paths: Path) -> jedi.Script:
        # In this process: jedi's default environment starts a subprocess that would outlive the test.
        project = jedi.Project(setup, sys_path=[*map(str, paths), *sys.path])
        return jedi.Script(source, path=edited, project=project, environment=jedi.InterpreterEnvironment())

    assert script().goto(3, 8) == []  # nothing on disk carries the name
    definition = script(ide).goto(3, 8)[0]
    helper = ide.joinpath(*package.split("."), "pkg", "helper.py")
    assert (definition.module_path, definition.line, definition.name) == (helper, 4, "value")
    assert helper.resolve() == origin.cache / TREES / "example.org" / "test" / "origin" / origin.commits[1] / (
        "pkg/helper.py"
    )
    assert [value.name for value in script(ide).infer(3, 13)] == ["int"]
    loader = Path(import_.__code__.co_filename)
    assert [definition.module_path.resolve() for definition in script(ide).goto(4, 2, follow_imports=True)] == [loader]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("")
    done = _run(setup, "ide-paths", str(tmp_path / "mine"))
    assert done.returncode == 2 and "is not empty and was not made by ide-paths" in done.stderr

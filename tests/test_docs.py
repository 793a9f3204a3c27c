"""The documentation builds without a warning (a broken link or reference fails), the reference pages are what the
code generates, every code example in it runs as written, every command line's output on it is what a real run
prints, and a new user finds each task's page from the README."""

from __future__ import annotations

import html
import importlib
import importlib.util
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from i6_rc_jobs.__main__ import COMMANDS
from tests.support.console import examples, mismatch, update
from tests.support.console_scenarios import SCENARIOS
from tests.support.markdown import RUN, RUNNER, blocks, continued, pages, program, runner_input, unmarked
from tests.support.sisyphus_setup import REPO

#: The pages with python examples, each run after the pages it continues; a page that another one continues runs
#: as the start of that one (one TensorFlow process less).
WITH_EXAMPLES = [p for p in pages() if p.name != "README.md" and any(b.language == RUN for b in blocks(p))]
RUNNABLE = [p for p in WITH_EXAMPLES if not any(p in continued(other) for other in WITH_EXAMPLES)]
ENV = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
CONSOLE = [example for page in pages() for example in examples(page)[0]]

#: What a new user looks for, the page that answers it and the heading there: each one link from the README, or two.
TOPICS = {
    "make training wait for the check": ("docs/guide/model-in-setup.md", "Training it: without a GPU, after the check"),
    "what the graph hash ignores": ("docs/guide/hash-schemes.md", "What the graph hash ignores"),
    "run on Slurm": ("docs/guide/slurm.md", "Run on a Slurm cluster"),
    "which RETURNN versions are supported": (
        "docs/guide/versions.md",
        "Supported versions of RETURNN and returnn_common",
    ),
    "debug a changed hash": ("docs/guide/debugging-hashes.md", "hash-diff"),
    "versioned imports for a team": ("docs/guide/versioned-imports.md", "Versioned imports for a team"),
    "the command line": ("docs/reference/cli.md", "Command line"),
    "building models out of the manager": ("docs/guide/builds.md", "Builds out of the manager"),
    "hash model code by content": ("docs/guide/code-hash.md", "Hash model code by content"),
    "PyTorch and RETURNN-frontend configs": ("docs/guide/rf-torch.md", "RETURNN-frontend and PyTorch configs"),
    "moving a ReturnnConfigV2 setup": ("docs/guide/rf-torch.md", "Moving a setup onto it"),
}


def test_sphinx_builds_the_docs_warning_free(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(tmp_path / "html")],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    api = (tmp_path / "html" / "reference" / "api.html").read_text()
    assert '<section id="close">' in api and "i6_rc_jobs._imports.import_" in api  # the generated page, rendered
    cli = html.unescape((tmp_path / "html" / "reference" / "cli.html").read_text())
    for name, module in ((name, importlib.import_module(path)) for name, path in COMMANDS.items()):
        said = [f'id="{name}"', module.EXAMPLE, *(status.meaning for status in module.Exit)]
        said += [option for action in module.parser()._actions for option in action.option_strings]
        assert [text for text in said if text not in cli] == [], name


def test_the_reference_pages_are_what_the_docstrings_and_commands_generate():
    """api.md and cli.md are Markdown, written from the code, so that they read anywhere (a repository's web view)."""
    spec = importlib.util.spec_from_file_location("reference_pages", REPO / "docs" / "_ext" / "reference_pages.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    stale = [str(path.relative_to(REPO)) for path, make in generator.PAGES.items() if path.read_text() != make()]
    assert not stale, f"{', '.join(stale)}: not what the code generates: run {generator.COMMAND}"


def test_every_code_block_says_whether_it_runs():
    assert [line for page in pages() for line in unmarked(page)] == []


def test_the_readme_links_to_files_that_exist():
    """Sphinx checks the links between pages; the README is read on its own (e.g. on the repository's web page)."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert local and [link for link in local if not (REPO / link).exists()] == []


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(REPO / "docs")) for p in RUNNABLE])
def test_the_examples_of_a_page_run_as_written(page, tmp_path):
    env = dict(ENV, I6_RC_IMPORTS_CACHE=str(tmp_path / "import-cache"))
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=runner_input(program(page)),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.endswith("examples ran\n"), done.stdout[-3000:]


def test_the_newest_release_in_the_changelog_is_the_package_version():
    """``i6_rc_jobs.__version__`` is what the CHANGELOG's first release heading names, and what pip builds."""
    import i6_rc_jobs
    from setuptools.config.pyprojecttoml import read_configuration

    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (REPO / "CHANGELOG.md").read_text(), re.M)
    built = read_configuration(REPO / "pyproject.toml")["project"]["version"]
    assert releases[0] == i6_rc_jobs.__version__ == built, releases
    assert releases == sorted(releases, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_commands_example_is_a_valid_command_line(name):
    """The example that ``--help`` and the reference show parses; a wrong one exits (SystemExit) here."""
    module = importlib.import_module(COMMANDS[name])
    assert module.parser().parse_args(shlex.split(module.EXAMPLE)) is not None


def test_every_console_block_names_the_real_run_that_makes_it():
    assert [line for page in pages() for line in examples(page)[1]] == []
    assert [f"{e.where}: no scenario {e.scenario!r}" for e in CONSOLE if e.scenario not in SCENARIOS] == []
    assert [e.where for e in CONSOLE if not e.commands] == []


@pytest.mark.parametrize("example", CONSOLE, ids=[e.where for e in CONSOLE])
def test_a_console_example_is_what_a_real_run_prints(example, tmp_path):
    """Each command of the block runs as a user types it, on inputs the scenario makes; ``DOCS_UPDATE=1`` writes
    the real output into the page instead of comparing."""
    directory = SCENARIOS[example.scenario](tmp_path)
    outputs, statuses = [], []
    for command in example.commands:
        argv = shlex.split(command.line)
        assert argv[:3] == ["python", "-m", "i6_rc_jobs"], f"{example.where}: {command.line}"
        done = subprocess.run([sys.executable, *argv[1:]], cwd=directory, env=ENV, capture_output=True, text=True)
        outputs.append(done.stdout)
        statuses.append(done.returncode)
        assert done.returncode in (0, 1), f"{example.where}: {command.line}: {done.stderr[-3000:]}"
    said = f"{example.where}: exit status {statuses[-1]}, the page says {example.status}"
    assert statuses[-1] == example.status, said
    if os.environ.get("DOCS_UPDATE") == "1":
        update(example, outputs)
        return
    for command, real in zip(example.commands, outputs):
        assert real == command.output, mismatch(example, command, real)


def _links(page: pathlib.Path) -> set[pathlib.Path]:
    """The local pages that a page's Markdown links lead to (as read on the repository's web page)."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text())
    return {(page.parent / target).resolve() for target in targets if "://" not in target}


@pytest.mark.parametrize("topic", TOPICS)
def test_a_new_user_finds_each_task_from_the_readme_in_one_or_two_clicks(topic):
    page, heading = TOPICS[topic]
    assert re.search(rf"^#+ {re.escape(heading)}$", (REPO / page).read_text(), re.M), f"{page}: no heading {heading!r}"
    first = _links(REPO / "README.md")
    second = {target for linked in first if linked.suffix == ".md" and linked.is_file() for target in _links(linked)}
    assert (REPO / page).resolve() in first | second, f"{page} is not linked from the README nor from a page it links"


def test_every_command_the_pages_name_exists():
    """A renamed or removed command cannot linger in the prose (its options and statuses are on the generated page)."""
    named = {
        f"{page.relative_to(REPO)}: {name}"
        for page in pages()
        for name in re.findall(r"python (?:-m |recipe/)i6_rc_jobs ([\w-]+)", page.read_text())
        if name not in COMMANDS
    }
    assert named == set()


def test_the_builds_guide_names_every_kind_of_dependency_a_build_records_and_checks():
    """A kind of dependency added to the code (``record.ENTRY_KINDS``, ``record.BASE_KINDS``) without a row in the
    guide's table of what is recorded, and a place in its list of what is checked, fails here."""
    from i6_rc_jobs._builds import record

    guide = (REPO / "docs" / "guide" / "builds.md").read_text()
    recorded = guide.split("## What a build may depend on", 1)[1].split("\n## ", 1)[0]
    checked = guide.split("## How the cache verifies itself", 1)[1].split("\n## ", 1)[0]
    kept_as = {
        kind
        for row in recorded.splitlines()
        if row.startswith("| ")
        for kind in re.findall(r"`(\w+)`", row.rsplit("|", 2)[1])
    }
    for kind in {*record.ENTRY_KINDS, *record.BASE_KINDS}:
        assert kind in kept_as, f"docs/guide/builds.md: no row of the table of what a build records keeps `{kind}`"
        assert f"`{kind}`" in checked, f"docs/guide/builds.md: the list of what is checked does not name `{kind}`"

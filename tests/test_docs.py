"""The documentation builds without a warning (a broken link or reference, a docstring autodoc cannot import or read,
fails), and every code example in it runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.markdown import RUN, RUNNER, blocks, continued, pages, program, runner_input, unmarked
from tests.support.sisyphus_setup import REPO

#: The pages with python examples, each run after the pages it continues; a page that another one continues runs
#: as the start of that one (one TensorFlow process less).
WITH_EXAMPLES = [p for p in pages() if p.name != "README.md" and any(b.language == RUN for b in blocks(p))]
RUNNABLE = [p for p in WITH_EXAMPLES if not any(p in continued(other) for other in WITH_EXAMPLES)]
ENV = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")


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
    assert "ReturnnCommonSerializer.close" in api and "import_" in api  # autodoc imported the modules


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
    """``i6_rc_jobs.__version__`` is what the CHANGELOG's first release heading names, and what setup.py builds."""
    import i6_rc_jobs

    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (REPO / "CHANGELOG.md").read_text(), re.M)
    built = subprocess.run([sys.executable, "setup.py", "--version"], cwd=REPO, capture_output=True, text=True)
    assert releases[0] == i6_rc_jobs.__version__ == built.stdout.strip(), (releases, built.stderr[-2000:])
    assert releases == sorted(releases, key=lambda v: tuple(map(int, v.split("."))), reverse=True)

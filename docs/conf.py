"""Sphinx configuration: Markdown pages (myst-parser) and a reference generated from the docstrings (autodoc).

Built warning-free by ``tests/test_docs.py`` (``sphinx-build -W``), so that a broken reference fails the tests."""

import pathlib
import sys

import i6_rc_jobs

sys.path.insert(0, str(pathlib.Path(__file__).parent / "_ext"))  # cli_reference: the command-line page

project = "i6_rc_jobs"
release = version = i6_rc_jobs.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "cli_reference"]
source_suffix = {".md": "markdown"}
smartquotes = False  # command lines as typed: --trust, not an en dash
exclude_patterns = ["_build", "_ext"]
myst_heading_anchors = 3  # links to sections: [hash-diff](debugging-hashes.md#hash-diff)

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True}

html_theme = "alabaster"

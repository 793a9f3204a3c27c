"""Sphinx configuration: Markdown pages (myst-parser) and a reference generated from the docstrings (autodoc).

Built warning-free by ``tests/test_docs.py`` (``sphinx-build -W``), so that a broken reference fails the tests."""

import i6_rc_jobs

project = "i6_rc_jobs"
release = version = i6_rc_jobs.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # links to sections: [hash-diff](debugging-hashes.md#hash-diff)

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True}

html_theme = "alabaster"

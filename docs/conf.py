"""Sphinx configuration: Markdown pages (myst-parser); the reference pages are Markdown too, written from the
docstrings and the commands by ``_ext/reference_pages.py``.

Built warning-free by ``tests/test_docs.py`` (``sphinx-build -W``), so that a broken link fails the tests."""

import i6_rc_jobs

project = "i6_rc_jobs"
release = version = i6_rc_jobs.__version__

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
smartquotes = False  # command lines as typed: --trust, not an en dash
exclude_patterns = ["_build", "_ext"]
myst_heading_anchors = 3  # links to sections: [hash-diff](debugging-hashes.md#hash-diff)

html_theme = "alabaster"

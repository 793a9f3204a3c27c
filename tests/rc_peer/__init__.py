"""returnn_common's own test suite, unmodified, as a peer test of ours: see ``run.py`` (the target) and ``plugin.py``."""

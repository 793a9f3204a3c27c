"""Python modules imported from git repositories at explicit, immutable versions (``<date>-<commit>``), through a
shared local cache: ``import_("github.com/rwth-i6/returnn_common", "nn/base.py", "20221031-3bd01ac8d7b2")``."""

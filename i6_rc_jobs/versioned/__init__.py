"""The package of versioned modules (see :mod:`i6_rc_jobs._imports`), ``i6_rc_jobs.versioned.<host>.<owner>.<name>
.c<commit>...``. Importing it lets Python find them in the import cache by name, in any process (a Sisyphus worker
unpickling its job imports it by that name), and keeps two copies of one function apart (see
:mod:`i6_rc_jobs._compat.code_identity`). It lives inside i6_rc_jobs, so that a setup adds one package, not two."""

from i6_rc_jobs._compat import code_identity
from i6_rc_jobs._imports.finder import install

install()
code_identity.install()

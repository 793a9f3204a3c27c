"""The package of versioned modules (see :mod:`i6_rc_jobs.imports`). Importing it lets Python find them in the
import cache by name, in any process, and keeps two copies of one function apart (see
:mod:`i6_rc_jobs.imports.code_identity`)."""

from i6_rc_jobs.imports import code_identity
from i6_rc_jobs.imports.finder import install

install()
code_identity.install()

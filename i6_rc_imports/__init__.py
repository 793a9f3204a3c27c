"""The package of versioned modules (see :mod:`i6_rc_jobs.imports`). Importing it lets Python find them in the
import cache by name, in any process."""

from i6_rc_jobs.imports.finder import install

install()

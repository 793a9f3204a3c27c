"""The former name of :mod:`i6_rc_jobs.versioned`, installed by pip beside it and needed by nothing else: job
pickles written before the move name versioned modules ``i6_rc_imports.<host>.<owner>.<name>.c<commit>...``, and
importing such a name still finds that version in the import cache, as it did then."""

import i6_rc_jobs.versioned  # noqa: F401: installs the finder, which takes both names

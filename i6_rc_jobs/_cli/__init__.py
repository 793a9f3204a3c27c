"""Command line: python -m i6_rc_jobs <command>."""

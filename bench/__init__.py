"""Benchmarks of i6_rc_jobs against the alternatives i6 recipes use; run ``python -m bench.compare``."""

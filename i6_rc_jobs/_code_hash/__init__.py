"""Hashes of what model code computes: ``by_content(get_model)`` hashes a config value by the code it runs, and
``watch_code(job, get_model)`` keeps the name hash and says at a manager start when a job's model code changed since
it was made. See docs/guide/code-hash.md."""

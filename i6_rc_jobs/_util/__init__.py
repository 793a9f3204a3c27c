"""Utilities every other part may use and that use none: atomic file writes, locks, what modules are loaded."""

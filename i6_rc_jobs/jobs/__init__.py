"""Sisyphus jobs."""

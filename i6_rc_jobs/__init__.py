"""Sisyphus jobs and helpers for i6_core recipes that build RETURNN models with returnn_common."""

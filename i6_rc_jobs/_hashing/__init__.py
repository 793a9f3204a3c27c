"""Hashing: the canonical form of serializers and their Sisyphus hash."""

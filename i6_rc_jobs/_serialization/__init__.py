"""Serialization: RETURNN dims in dicts -> plain-data DimRefs, and those dicts -> config code."""

"""Module-level functions and a class that net dicts hold in the tests (an eval layer's function), in a module that
imports nothing, so written configs and other processes can import them; some named like what the written code
binds, so that it must import them under other names."""


def double(source, **_kwargs):
    """An eval layer's function (RETURNN calls it with ``source``): twice its input."""
    return source(0) * 2


def halve(source, **_kwargs):
    """Another eval function, for hashes that must differ."""
    return source(0) / 2


def network():
    """Named like the dict the written config defines."""


def float():  # noqa: A001 (named like a builtin the written code calls, on purpose)
    """Named like a builtin the written code calls."""


class Scale:
    """A class as a value."""

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


def time_axis(source, **_kwargs):
    """An eval function that reads a description: its output is the index of the axis ``stag:time`` finds."""
    return source(0) * 0.0 + source(0, as_data=True).get_axis_from_description("stag:time")


TIME_AXIS = "stag:" + "time"  # the whole axis string is in no source text


def time_axis_by_default(source, axis=TIME_AXIS, **_kwargs):
    """As :func:`time_axis`, the axis string a default argument."""
    return source(0) * 0.0 + source(0, as_data=True).get_axis_from_description(axis)


def time_axis_by_global(source, **_kwargs):
    """As :func:`time_axis`, the axis string a module global."""
    return time_axis_by_default(source, TIME_AXIS)


exec("def without_source(source, **_kwargs):\n    return source(0)\n")  # inspect cannot find its source


def _reading(axis):
    """A decorator whose wrapper hands ``axis``, from its closure, to the function it wraps."""

    def decorate(function):
        def wrapper(source, **_kwargs):
            return function(source, axis)

        wrapper.__qualname__ = wrapper.__name__ = function.__name__  # importable by the function's name
        return wrapper

    return decorate


@_reading("stag:" + "time")
def time_axis_by_closure(source, axis):
    """As :func:`time_axis`, the axis string in the closure of its decorator's wrapper."""
    return source(0) * 0.0 + source(0, as_data=True).get_axis_from_description(axis)

"""Another namedtuple class named Pair (beside records.Pair), and classes named like what the written config imports,
defines or calls, for the tests of import names."""

import collections

Pair = collections.namedtuple("Pair", ["first", "second"])
Dim = collections.namedtuple("Dim", ["a", "b"])
time_dim = collections.namedtuple("time_dim", ["a"])
network = collections.namedtuple("network", ["a"])
ImplicitSparseDim = collections.namedtuple("ImplicitSparseDim", ["a"])
complex = collections.namedtuple("complex", ["a"])  # noqa: A001 (the name the written code calls for complex numbers)


class Doubling(collections.namedtuple("Doubling", ["a"])):
    """Its own __new__ changes the item: rebuilding a value from its items doubles it again."""

    __slots__ = ()

    def __new__(cls, a):
        return super().__new__(cls, a * 2)


class Short(collections.namedtuple("Short", ["a", "b"])):
    """Fewer _fields than items."""

    __slots__ = ()
    _fields = ("a",)


class WithAttributes(collections.namedtuple("WithAttributes", ["a"])):
    """No __slots__: its values may carry instance attributes besides their items."""


class WithMethod(collections.namedtuple("WithMethod", ["a", "b"])):
    """A subclass that only adds a method: rebuilt faithfully."""

    __slots__ = ()

    def total(self):
        return self.a + self.b


epoch = collections.namedtuple("epoch", ["a"])  # get_network's parameters, which its body would see instead
kwargs = collections.namedtuple("kwargs", ["a"])

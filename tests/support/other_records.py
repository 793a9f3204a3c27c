"""Another namedtuple class named Pair (beside records.Pair), and classes named like what the written config imports,
defines or calls, for the tests of import names."""

import collections

Pair = collections.namedtuple("Pair", ["first", "second"])
Dim = collections.namedtuple("Dim", ["a", "b"])
time_dim = collections.namedtuple("time_dim", ["a"])
network = collections.namedtuple("network", ["a"])
ImplicitSparseDim = collections.namedtuple("ImplicitSparseDim", ["a"])
complex = collections.namedtuple("complex", ["a"])  # noqa: A001 (the name the written code calls for complex numbers)

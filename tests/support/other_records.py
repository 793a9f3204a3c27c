"""Another namedtuple class named Pair (beside records.Pair), and classes whose names the written config uses for
other things, for the tests of import names."""

import collections

Pair = collections.namedtuple("Pair", ["first", "second"])
Dim = collections.namedtuple("Dim", ["a", "b"])
time_dim = collections.namedtuple("time_dim", ["a"])
network = collections.namedtuple("network", ["a"])
ImplicitSparseDim = collections.namedtuple("ImplicitSparseDim", ["a"])

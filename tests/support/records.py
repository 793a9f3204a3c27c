"""A namedtuple for the tests, in a module that imports nothing, so written configs and unpickling processes can
import it without RETURNN."""

import collections

Pair = collections.namedtuple("Pair", ["first", "second"])

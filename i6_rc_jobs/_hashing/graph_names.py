"""How RETURNN finds a layer by a name read in a scope (``base:``, ``prev:``, sub-layers, "data"), as the graph hash
resolves names: to the token that numbers the layer, or to what else the name finds."""

from __future__ import annotations

import re
from typing import Any, Optional

from i6_rc_jobs._hashing.graph_scopes import MAX_DEPTH, Layer, Net, same_out_shape
from i6_rc_jobs._hashing.tokens import Tagged, Token

_UNSEEN = object()  # a name not looked up yet (None is what a name that finds nothing finds)
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.]+")  # a name that code holds as a word: split at anything else
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9_]+")
_DOTTED_SPLIT = re.compile(r"[^A-Za-z0-9_.]+")


class NameResolver:
    """The names of a parsed net dict: what each finds, and the numbering of the layers reached (a layer is numbered
    on first use, which makes it a node of the graph)."""

    _root: Net
    _order: list[Layer]
    _layers: list[Layer]
    _namespaces: list[str]  # the names of the flattened subnetworks
    names: list[str]
    _all_names: Optional[tuple[frozenset[str], list[str]]]
    _names: Optional[dict[str, list[tuple[str, Layer]]]]
    _odd_names: list[tuple[str, Layer]]
    _tied: dict[str, list[tuple[str, Token]]]
    _seeded: bool  # whether a layer draws from a random generator (see graph_scopes.draws_random)

    def _ties(self, text: str) -> list[tuple[str, Token]]:
        """Every layer whose name occurs in ``text``: as a word (split at what no plain name holds), or for names
        with other characters, anywhere; by name and path (numbers in that order). Once per string (a model holds
        the same eval code many times); the layers are indexed by name only once a string holds a name."""
        ties = self._tied.get(text)
        if ties is None:
            ties = self._tied[text] = self._find_ties(text)
        return ties

    def _find_ties(self, text: str) -> list[tuple[str, Token]]:
        words = set(_WORD_SPLIT.split(text)) | set(_DOTTED_SPLIT.split(text))
        names = self._names
        if names is None:
            if self._all_names is None:
                every = frozenset(layer.name for layer in self._layers).union(self._namespaces)
                self._all_names = every, [name for name in every if not _PLAIN_WORD.fullmatch(name)]
            every, odd = self._all_names
            if every.isdisjoint(words) and not any(name in text for name in odd):
                return []
            names = self._names = {}
            self._index(self._root, names)
        found = [(name, layer.path, layer) for word in words for name, layer in names.get(word, ())]
        found.extend((name, layer.path, layer) for name, layer in self._odd_names if name in text)
        return [(name, self._token(layer)) for name, _, layer in sorted(found, key=lambda f: f[:2])]

    def _index(self, net: Net, names: dict[str, list[tuple[str, Layer]]]) -> None:
        """Every layer by its name, into ``names`` if a plain name, for the strings that may name it (:meth:`_ties`);
        a namespace by its output."""
        for name, item in net.layers.items():
            if isinstance(item, Net):
                self._index(item, names)
                found = self._lookup("output", item)
                if found is None or type(found) is Tagged:
                    continue
                layer = found[0]
            else:
                layer = item
                if item.unit is not None:
                    self._index(item.unit, names)
            if _PLAIN_WORD.fullmatch(name):
                names.setdefault(name, []).append((name, layer))
            else:
                self._odd_names.append((name, layer))

    # Resolving names.

    def _resolve(self, text: str, net: Net, aliases: bool = True) -> Any:
        """What the name ``text`` read in ``net`` refers to: a token (a layer's number, marked prev/stacked/loop
        input) or an extern_data key (Tagged), or None if it finds nothing. Without ``aliases``, a copy alias is the
        copy layer itself (for readers of more than its output: reuse_params reads a layer's variables)."""
        target = self._lookup(text, net) if aliases else self._find(text, net, 0, aliases=False)
        if target is None or isinstance(target, Tagged):
            return target
        layer, stacked, sub, prev = target
        token = layer.token or self._token(layer)
        if prev or stacked:
            token = Token(f"{prev or 'stacked'}:{token.text}")
        return token if not sub else Tagged(("@sub-layer", token, sub))

    def _lookup(self, text: str, net: Net) -> Any:
        """:meth:`_find` of a name read in ``net``, once per name and scope (a name is looked up for its layer's
        node, for the strings that may name it and for scalar operands): a name finds the same each time."""
        found = net.found.get(text, _UNSEEN)
        if found is _UNSEEN:
            found = net.found[text] = self._find(text, net, 0)
        return found

    def _find(self, text: str, net: Net, hops: int, prev: str = "", aliases: bool = True) -> Any:
        """(layer, stacked, sub-layer path, prev mark) or a Tagged (extern data, a loop's or subnetwork's input) for
        ``text`` in ``net``, as RETURNN's get_layer finds it: ``base:`` and ``prev:`` in any order (one ``prev:``),
        then a layer of that name (also one named "data"), then "data"/"data:key", following namespaces and
        aliases. A path into a layer that is no namespace nor loop (``split/0``) is that layer's sub-layer. The
        previous frame of a copy alias or a namespace is their own (their initial output), not their source's."""
        if hops > MAX_DEPTH:
            return None  # a cycle of aliases: RETURNN cannot build it either; the name stays as it is
        if ":" not in text and "/" not in text:  # most names: a layer here, no alias
            item = net.layers.get(text)
            if type(item) is Layer and (item.alias_of is None or not aliases):
                return self._prev(item, False, "", prev)
        while True:
            if text.startswith("base:"):
                if net.parent is None:
                    return None
                net, text = net.parent, text[len("base:") :]
            elif text.startswith("prev:"):
                if prev:
                    return None  # RETURNN: multiple 'prev:' prefixes are not allowed
                prev, text = "prev", text[len("prev:") :]
            else:
                break
        head, _, rest = text.partition("/")
        item = net.layers.get(head)
        if item is None and (text == "data" or text.startswith("data:")):
            return self._data(text, net, hops, prev)
        stacked = False
        while rest and item is not None:
            if isinstance(item, Net):
                head, _, rest = rest.partition("/")
                item = item.layers.get(head)
            elif item.unit is None:
                return self._prev(item, stacked, rest, prev)
            else:
                head, _, rest = rest.partition("/")
                stacked = stacked or item.unit.kind == "loop"
                item = item.unit.layers.get(head)
        if isinstance(item, Net):  # rule "subnetwork-namespace": the subnetwork's output
            found = self._find("output", item, hops + 1)
            if found is None or type(found) is Tagged or found[3]:
                return None
            return self._prev(found[0], found[1] or stacked, found[2], "prev-of-subnetwork" if prev else "")
        if item is None:
            return None
        if item.alias_of is not None and not prev and aliases:  # rule "copy-alias"
            found = self._find(item.alias_of, item.net, hops + 1)
            checked = "out_shape" in item.desc  # rule "out-shape": the alias checks what its source checks, or none
            if found is not None and type(found) is not Tagged:
                if not checked or (not found[1] and not found[2] and same_out_shape(item.desc, found[0].desc)):
                    return found[0], found[1] or stacked, found[2], found[3]
            elif found is not None and not stacked and not checked:
                return found
        return self._prev(item, stacked, "", prev)

    def _plain(self, text: str, net: Net) -> Optional[Layer]:
        """The layer the name ``text`` read in ``net`` finds, if it is the layer itself (no ``prev:``, no frames of a
        loop stacked, no sub-layer path), else None."""
        found = self._lookup(text, net)
        if found is None or type(found) is Tagged or found[1] or found[2] or found[3]:
            return None
        return found[0]

    @staticmethod
    def _prev(layer: Layer, stacked: bool, sub: str, prev: str) -> Optional[tuple[Layer, bool, str, str]]:
        """The target, if ``prev`` can apply to it (a layer in the loop the name is read in)."""
        if prev and (stacked or layer.net.loop is None):
            return None
        return layer, stacked, sub, prev

    def _data(self, text: str, net: Net, hops: int, prev: str) -> Any:
        """ "data" or "data:key" read in ``net`` (where no layer has that name), as RETURNN's Subnetwork.get_data
        and the rec cell resolve it."""
        key = "data" if text == "data" else text[len("data:") :]
        if net.kind == "sub":  # rule "subnetwork-namespace": "data" is the input; other keys are the parent's
            assert net.parent is not None  # every scope but the root has a parent
            if key == "data":
                return self._find(net.sources[0], net.parent, hops + 1, prev) if net.sources else None
            return self._data(text, net.parent, hops, prev)
        if net.kind == "loop":  # rule "loops": "data:source" is the per-frame input, other keys extern data's frame
            assert net.owner is not None  # a loop body has its layer
            loop = self._token(net.owner)
            if key == "source":
                return Tagged(("@prev-loop-input" if prev else "@loop-input", loop))
            return Tagged(("@prev-loop-data" if prev else "@loop-data", loop, key))
        if net.kind == "subnet":
            return self._subnetwork_data(key, text, net, hops, prev)
        if net.kind == "nested" or prev:
            return None
        return Tagged(("@data", key))

    def _subnetwork_data(self, key: str, text: str, net: Net, hops: int, prev: str) -> Any:
        """Subnetwork.get_data: with concat_sources (the default) "data" is the owner's sources concatenated; without,
        "data:<i>", "data:<source name>" and "data" (the first) are that source, as the owner's i-th "from" (which
        its node hashes); any other key is the parent's. A concat_sources whose truth this cannot tell ties both."""
        if prev:
            return None
        assert net.owner is not None  # a subnetwork with options has its layer
        owner = self._token(net.owner)
        concat = net.owner.desc.get("concat_sources", True)
        sources = net.owner.desc.get("from", "data")
        sources = list(sources) if type(sources) in (list, tuple) else [sources]
        if type(concat) not in (bool, int, float, str, type(None)):
            return Tagged(
                (
                    "@either",
                    self._subnetwork_data_as(True, key, text, net, hops, owner, sources),
                    self._subnetwork_data_as(False, key, text, net, hops, owner, sources),
                )
            )
        return self._subnetwork_data_as(bool(concat), key, text, net, hops, owner, sources)

    def _subnetwork_data_as(
        self, concat: bool, key: str, text: str, net: Net, hops: int, owner: Token, sources: list
    ) -> Any:
        if concat and key == "data":
            return Tagged(("@subnetwork-input", owner))
        if not concat:
            for i, source in enumerate(sources):
                if key == source or key == str(i) or (key == "data" and i == 0):
                    return Tagged(("@subnetwork-input", owner, i))
        assert net.parent is not None  # every scope but the root has a parent
        return self._data(text, net.parent, hops, "")

    def _token(self, layer: Layer) -> Token:
        """The token of a reference to the layer, one for all its references (thousands in a model); it numbers the
        layer on first use, which makes it a node of the graph. Rule "subnetwork-namespace": in a net whose layers
        draw seeds, a layer of a subnetwork says which (numbered first), whose generator it draws from."""
        if layer.token is None:
            net = layer.net
            owner = net.owner if self._seeded and net.kind == "subnet" else None
            inside = "" if owner is None else f" in {(owner.token or self._token(owner)).text}"
            layer.token = Token(f"layer#{len(self._order)}{inside}")
            self._order.append(layer)
            self.names.append(layer.path)
        return layer.token

    # Roots.

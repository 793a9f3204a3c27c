"""Why two objects hash differently in Sisyphus, as paths and values: hash-diff's engine.

It descends only where Sisyphus's own hash bytes differ, so what it reports is exactly what makes the hashes
differ; inside a ReturnnCommonSerializer or a ReturnnConfigSerializer it compares canonical forms, so dims show as
``dim#7 feature 2048``, a partial's parts as ``.keywords['model_dim']``, and a by_content marker the code that
changed."""

from __future__ import annotations

import ast
import re
from typing import Any, Callable, Iterator, NamedTuple, Optional

from i6_core.returnn.config import ReturnnConfig
from sisyphus import tools
from sisyphus.hash import sis_hash_helper
from sisyphus.job import Job
from sisyphus.job_path import AbstractPath

from i6_rc_jobs._code_hash.marker import ByContent, code_diff
from i6_rc_jobs._serialization.config_values import SerializedConfig
from i6_rc_jobs._serialization.refs import DimRef
from i6_rc_jobs._serialization.serialized_code import SerializedCode
from i6_rc_jobs._hashing.canonical import Canonicalizer
from i6_rc_jobs._hashing.tokens import DimToken, Tagged, Token
from i6_rc_jobs._hashing.walks import content_owners, dims_in
from i6_rc_jobs._hashing.sis_hash import canonical_form, layer_graphs


def explain(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Lines ``path: value in A -> value in B`` for each smallest part whose hash differs; nothing if equal."""
    if sis_hash_helper(a) == sis_hash_helper(b):
        return
    if type(a) is not type(b):
        yield _line(path, a, b)
    elif isinstance(a, SerializedCode) and a.hash_value is not None and b.hash_value is not None:
        yield from explain(a.hash_value, b.hash_value, _join(path, "hash_value."))
    elif isinstance(a, SerializedCode) and (a.hash_value is not None or b.hash_value is not None):
        how = ("its dicts", "hash_value") if a.hash_value is None else ("hash_value", "its dicts")
        yield f"{_join(path, 'hash_value')}: {a.hash_value!r} -> {b.hash_value!r} (hashed by {how[0]} -> by {how[1]})"
    elif isinstance(a, SerializedCode) and a.hash_scheme != b.hash_scheme:
        yield f"{_join(path, 'hash_scheme')}: {a.hash_scheme!r} -> {b.hash_scheme!r}"
    elif isinstance(a, SerializedCode):
        if a.unhashed != b.unhashed:
            yield f"{_join(path, 'unhashed')}: {sorted(a.unhashed)} -> {sorted(b.unhashed)}"
        yield from _net_lines(_Side(a, path), _Side(b, path))
    elif isinstance(a, ByContent):
        for name in ("module", "qualname", "args", "kwargs"):
            yield from explain(getattr(a, name), getattr(b, name), _join(path, name))
        for change in a.changes(b):
            yield f"{_join(path, 'code')}: {change}"
        yield from (f"    {line}" for line in code_diff(a, b))
    elif isinstance(a, ReturnnConfig):
        parts_a, parts_b = _config_hash_parts(a), _config_hash_parts(b)
        for name in sorted(set(parts_a) | set(parts_b)):
            yield from explain(parts_a.get(name), parts_b.get(name), f"{path}{name}")
    elif isinstance(a, Job):
        yield from explain(type(a).__qualname__, type(b).__qualname__, f"{path}<job class>")
        args_a, args_b = _job_hash_args(a), _job_hash_args(b)
        for name in sorted(set(args_a) | set(args_b)):
            yield from explain(args_a.get(name), args_b.get(name), f"{path}{type(a).__name__}.{name}.")
    elif isinstance(a, AbstractPath) and a.creator is not None and b.creator is not None:
        yield from explain(a.path, b.path, _join(path, "path"))
        yield from explain(a.creator, b.creator, _join(path, "creator."))
    elif isinstance(a, dict):
        yield from _diff_dicts(a, b, path, lambda x, y, p: explain(x, y, p))
    elif isinstance(a, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from explain(x, y, f"{path.rstrip('.')}[{i}].")
    else:
        yield _line(path, a, b)


def _line(path: str, a: Any, b: Any) -> str:
    return f"{path.rstrip('.')}: {_short(a)} -> {_short(b)}"


def _join(path: str, name: str) -> str:
    """``name`` inside ``path``: ``a.b.name``, or ``name`` at the top."""
    return f"{path.rstrip('.')}.{name}" if path else name


def _config_hash_parts(config: ReturnnConfig) -> dict[str, Any]:
    """What i6_core's ReturnnConfig._sis_hash hashes, under the same names."""
    parts = {
        "returnn_config": config.config,
        "python_epilog_hash": config.python_epilog_hash,
        "python_prolog_hash": config.python_prolog_hash,
    }
    if config.staged_network_dict:
        parts["returnn_networks"] = config.staged_network_dict
    return parts


def _job_hash_args(job: Job) -> dict[str, Any]:
    """The job's arguments as its hash sees them: what its class's ``hash()`` hands to Sisyphus's ``sis_hash``
    (i6_core jobs pick their own, e.g. ReturnnTrainingJob leaves out its requirements; ``__sis_hash_exclude__``,
    ``__sis_hash_overwrite__`` and ``__sis_version__`` applied), or, if ``hash()`` hashes otherwise, the arguments
    without the excluded ones."""
    hashed: list[Any] = []  # the outermost call's argument (a value's own _sis_hash may call sis_hash, too)
    depth = 0
    real = tools.sis_hash

    def recorded(obj: Any) -> str:
        nonlocal depth
        if depth == 0:
            hashed.append(obj)
        depth += 1
        try:
            return real(obj)
        finally:
            depth -= 1

    tools.sis_hash = recorded
    try:
        type(job).hash(job._sis_kwargs)
    except Exception:  # e.g. a job.save of older recipe code, whose hash() expects other arguments
        hashed.clear()
    finally:
        tools.sis_hash = real
    if hashed and isinstance(hashed[-1], dict):
        return hashed[-1]
    if hashed and isinstance(hashed[-1], tuple) and len(hashed[-1]) == 2 and isinstance(hashed[-1][0], dict):
        return {**hashed[-1][0], "<__sis_version__>": hashed[-1][1]}
    exclude = type(job).__sis_hash_exclude__
    return {k: v for k, v in job._sis_kwargs.items() if k not in exclude or exclude[k] != v}


def _one_line(path: str, a: Any, b: Any) -> Iterator[str]:
    yield _line(path, a, b)


def _diff_dicts(a: dict, b: dict, path: str, recurse: Callable, lines: Callable = _one_line) -> Iterator:
    """``recurse`` into the entries of both, ``lines`` for an entry only one has."""
    for key in sorted(set(a) | set(b), key=repr):
        step = f"{path.rstrip('.')}[{key!r}]"
        if key not in b:
            yield from lines(step, a[key], _MISSING)
        elif key not in a:
            yield from lines(step, _MISSING, b[key])
        else:
            yield from recurse(a[key], b[key], step)


_MISSING_SECTION = "(not hashed)"
_DIM = re.compile(r"dim#(\d+)")
_LAYER_KEY = re.compile(r"\['layers'\]\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")
_LAYER_TOKEN = re.compile(r"((?:prev:|stacked:)?)layer#(\d+)(?: in layer#\d+)*")


def _by_path(form: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A graph's canonical form for reading: its layers as a dict by path, every layer token naming its layer by
    path (``<prev:layer 'loop/acc'>``), and without the list of parameter layers (each such layer is in the dict,
    with its scope)."""

    def rename(value: Any) -> Any:
        if type(value) is Token and (found := _LAYER_TOKEN.fullmatch(value.text)):
            return Token(f"{found.group(1)}layer {names[int(found.group(2))]!r}")
        if type(value) is dict:
            return {rename(key) if type(key) is not str else key: rename(item) for key, item in value.items()}
        if type(value) in (list, tuple, Tagged):
            return type(value)(rename(item) for item in value)
        return value

    roots = {key: rename(value) for key, value in form["roots"].items() if key != "parameters"}
    layers = {names[number]: rename(node) for number, node in enumerate(form["layers"])}
    return {**{key: rename(value) for key, value in form.items()}, "roots": roots, "layers": layers}


def _owner_token(owner: Any) -> Token:
    """The token of a ContentRef's owner in a canonical form (see :class:`.canonical.Canonicalizer`)."""
    return Canonicalizer()._value(owner)


_SPELLED = re.compile(r"dim#(\d+) ")  # a dim's first occurrence: its index, then its definition


class _Missing:
    """An entry only one side has."""

    def __repr__(self) -> str:
        return "(missing)"


_MISSING = _Missing()


class _Side:
    """One serializer's canonical form and what hash-diff says of its dims: the description of each index (which the
    form leaves out: it is not hashed), where it first occurs, and the dims it is made of. A graph (hash_scheme
    "graph") is shown with its layers keyed by their paths in the dict and references said by path, so that the two
    sides line up even where a layer added or removed renumbers the others; the numbers are said in the paths.
    ``made_by_dims``: whether values beside a dim may follow from it (a net dict's, e.g. an initializer's bounds made
    by returnn_common from a layer's dims); a config's values are as written (a model's keywords are each its own)."""

    def __init__(self, net: SerializedCode, prefix: str):
        self.prefix = prefix
        self.made_by_dims = not isinstance(net, SerializedConfig)
        graphs = layer_graphs(net) if net.hash_scheme == "graph" else {}
        self.canon, self.form = canonical_form(net, graphs)
        if isinstance(net, SerializedConfig):  # its sections are config keys: ``config['get_model']``
            self.form = {f"config[{key!r}]": value for key, value in self.form.items()}
        #: the owners of the by_content values (ContentRefs), by the token their hash is in the form
        self.owners = {_owner_token(owner): owner for owner in content_owners(value for _, value in net.sections())}
        self.numbers: dict[str, dict[str, int]] = {}  # graph part -> layer path -> number
        for name, graph in graphs.items():
            self.form[name] = _by_path(self.form[name], graph.names)
            self.numbers[prefix + name] = {path: number for number, path in enumerate(graph.names)}
        index = self.canon.index
        refs: dict[int, DimRef] = {}  # index -> a dim of it, named by a base rather than a copy hashed as it
        for ref in dims_in(value for _, value in net.sections()):
            if id(ref) in index and refs.setdefault(index[id(ref)], ref).copy_of is not None:
                refs[index[id(ref)]] = ref
        self.names = {i: ref.written_description() for i, ref in refs.items()}
        self.local = {i: self.canon.local_definition(ref) for i, ref in refs.items()}
        self.made_of = {i: {index[id(d)] for d in ref.dependencies() if id(d) in index} for i, ref in refs.items()}
        self.first_at: dict[int, str] = {}
        for at, leaf in _leaves(self.form, prefix):
            for found in _SPELLED.finditer(repr(leaf)):
                self.first_at.setdefault(int(found.group(1)), at)

    def named(self, text: str) -> str:
        """``text`` with each dim named by its description: ``dim#3 'model' feature 64``, ``<dim#3 'model'>``."""

        def name(found: re.Match) -> str:
            description = self.names.get(int(found.group(1)))
            return found.group(0) if description is None else f"{found.group(0)} {description!r}"

        return _DIM.sub(name, text)

    def where(self, path: str, other: _Side) -> str:
        """``path`` with a graph's layer said by its number (this side's, else the other's) and its path in the dict:
        ``network layer#12 'enc/ff'['activation']``."""
        found = _LAYER_KEY.search(path)
        if found is None:
            return path
        layer = ast.literal_eval(found.group(1))
        part = path[: found.start()]
        number = self.numbers.get(part, {}).get(layer, other.numbers.get(part, {}).get(layer))
        return f"{part} layer#{number} {found.group(1)}{path[found.end():]}"

    def closure(self, index: int) -> set[int]:
        """The dim and every dim it is made of."""
        out, stack = set(), [index]
        while stack:
            i = stack.pop()
            if i not in out:
                out.add(i)
                stack.extend(self.made_of.get(i, ()))
        return out


def _leaves(form: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """(path, leaf) of a canonical form in canonical order (the order its dims are numbered in); dict keys that are
    not str are leaves too."""
    stack: list[tuple[str, Any]] = [(path + name, value) for name, value in reversed(form.items())]
    while stack:
        at, value = stack.pop()
        if type(value) is dict:
            for key, item in reversed(value.items()):
                stack.append((f"{at}[{key!r}]", item))
                if type(key) is not str:
                    stack.append((f"{at}[{key!r}]", key))
        elif type(value) in (list, tuple):
            stack.extend((f"{at}[{i}]", item) for i, item in reversed(list(enumerate(value))))
        elif type(value) is Tagged:
            stack.extend(reversed(_tagged_parts(value, at)))
        else:
            yield at, value


#: The names of the parts of tagged containers, for paths: ``config['get_model'].keywords['model_dim']``; a by_content
#: value's reference is at the value's own path (it is what the config holds there).
_TAGGED_STEPS = {"functools.partial": (".func", ".args", ".keywords"), "by-content": (".owner", "")}


def _tagged_parts(value: Tagged, path: str) -> list[tuple[str, Any]]:
    """(path, item) of the items of a tagged container: by their names if its kind has them, else by index."""
    steps = _TAGGED_STEPS.get(value[0], ())
    return [(path + steps[i] if i < len(steps) else f"{path}[{i}]", item) for i, item in enumerate(value[1:])]


class _Change(NamedTuple):
    """One difference of two canonical forms: its path, the two sides as text, and the dims of B it is about (those
    in its value in B; for a value without dims, the dims beside it in its dict, e.g. a layer's shape); or, for a
    by_content marker's code, what changed (``said``, with no sides)."""

    path: str
    a: str
    b: str
    dims: set[int]
    said: str = ""

    def text(self) -> str:
        return self.said or f"{self.a} -> {self.b}"


_LOCAL_DEP = re.compile(r"<#(\d+)>")


class _Matching(NamedTuple):
    """Which dims of B are which of A, by what they are: the same dim renumbered (a dim added or removed before it
    moves every later index) is no change. ``same``: B index -> A index of the same dim; ``was``: for a B dim that
    changed or is new, the A dim it replaces (the one of its description no B dim is), if any."""

    same: dict[int, int]
    was: dict[int, int]


def _match_dims(a: _Side, b: _Side) -> _Matching:
    """B's dims in index order (a dim after those it is made of): the first A dim not taken yet with the same
    definition, its dims matched first, and the same description, else the same definition alone. What is left is a
    change; it replaces the first A dim left of its description."""
    by_both: dict[tuple[str, Optional[str]], list[int]] = {}
    by_definition: dict[str, list[int]] = {}
    for k in sorted(a.local):
        by_both.setdefault((a.local[k], a.names.get(k)), []).append(k)
        by_definition.setdefault(a.local[k], []).append(k)
    same: dict[int, int] = {}
    taken: set[int] = set()
    for j in sorted(b.local):
        definition = _LOCAL_DEP.sub(lambda m: f"<#{same[int(m[1])]}>" if int(m[1]) in same else "<new>", b.local[j])
        for candidates in (by_both.get((definition, b.names.get(j)), ()), by_definition.get(definition, ())):
            i = next((i for i in candidates if i not in taken), None)
            if i is not None:
                same[j] = i
                taken.add(i)
                break
    was: dict[int, int] = {}
    for j in sorted(set(b.local) - set(same)):
        i = next((i for i in sorted(a.local) if i not in taken and a.names.get(i) == b.names.get(j)), None)
        if i is not None:
            was[j] = i
            taken.add(i)
    return _Matching(same, was)


def _net_lines(a: _Side, b: _Side) -> Iterator[str]:
    """The differences of two serializers' canonical forms, each changed dim that is made of no other changed dim
    first, with the lines that follow from it indented beneath it: the dims made of it, and values in dicts that
    hold such dims (in a Transformer, one model dim's size changes the bounds of a dozen initializers)."""
    matching = _match_dims(a, b)
    changes: list[_Change] = []
    for name in sorted(set(a.form) | set(b.form)):
        changes.extend(
            _diff_forms(
                a.form.get(name, _MISSING_SECTION), b.form.get(name, _MISSING_SECTION), a, b, matching, a.prefix + name
            )
        )
    defs_a, defs_b = a.canon.definitions, b.canon.definitions
    changed = set(range(len(defs_b))) - set(matching.same)
    roots = sorted(i for i in changed if not (b.closure(i) - {i}) & changed)
    groups: dict[Optional[int], list[_Change]] = {}
    order: list[tuple[Optional[int], _Change]] = []
    for change in changes:
        made_of = set().union(*map(b.closure, change.dims)) if change.dims else set()
        root = next((r for r in roots if b.first_at.get(r) == change.path), None)
        if root is None:
            root = next((r for r in roots if r in made_of), None)
        if root not in groups or root is None:
            order.append((root, change))
        groups.setdefault(root, []).append(change)
    for root, change in order:
        if root is None:
            yield f"{b.where(change.path, a)}: {change.text()}"
            continue
        own = f"dim#{root}"
        spelled = [c for c in groups[root] if c.path == b.first_at[root] and c.b.startswith(b.named(own) + " ")]
        members = [c for c in groups[root] if c not in spelled]
        was = matching.was.get(root)
        # a dim that replaces none of A's: what A has where it first occurs (another dim: a lost same_as), if anything
        held = [c.a for c in spelled if c.a != repr(_MISSING)]
        before = a.named(defs_a[was]) if was is not None else held[0] if held else "(none)"
        lines = list(_merged(members, a, b))
        follows = f", and {_count(len(lines), 'line that follows', 'lines that follow')} from it:" if lines else ""
        first_at = b.where(b.first_at[root], a)
        yield f"{b.named(own)} (first at {first_at}): {before} -> {b.named(defs_b[root])}{follows}"
        yield from lines


def _merged(changes: list[_Change], a: _Side, b: _Side) -> Iterator[str]:
    """Indented lines of ``changes``; one line for each change of one key from one value to one other (the same
    initializer bound in every layer), with the number of places."""
    alike: dict[tuple[str, str, str], list[_Change]] = {}
    for change in changes:
        alike.setdefault((change.path[change.path.rfind("[") :], change.a, change.b), []).append(change)
    for first, *more in alike.values():
        also = f" (and {_count(len(more), 'more place', 'more places')})" if more else ""
        yield f"  {b.where(first.path, a)}: {first.a} -> {first.b}{also}"


#: Options that only check or order what RETURNN computes (the graph scheme leaves them out: ``inert-options``): the
#: dims in them say nothing of what a value beside them follows from.
_CHECKS = frozenset({"out_shape", "shape_deps"})


def _diff_forms(
    a: Any, b: Any, side_a: _Side, side_b: _Side, matching: _Matching, path: str, beside: frozenset[int] = frozenset()
):
    """Differences of two canonical forms (``beside``: the dims in the dict around them); dims are the same when
    they are the same dim (see :func:`_match_dims`), and a changed dim shows its full definition."""
    if type(a) is not type(b):
        yield from _change(path, a, b, side_a, side_b, beside)
    elif type(a) is dict:
        near = frozenset(
            int(i)
            for key, item in b.items()
            if side_b.made_by_dims and type(item) is not dict and key not in _CHECKS
            for i in _DIM.findall(repr(item))
        )
        yield from _diff_dicts(
            a,
            b,
            path,
            lambda x, y, p: _diff_forms(x, y, side_a, side_b, matching, p, near),
            lambda p, x, y: _change(p, x, y, side_a, side_b, near),
        )
    elif type(a) in (list, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _diff_forms(x, y, side_a, side_b, matching, f"{path}[{i}]", beside)
    elif type(a) is Tagged and a[0] == b[0] == "by-content":  # the owner's hash, then the reference it is written as
        owner_a, owner_b = side_a.owners.get(a[1]), side_b.owners.get(b[1])
        if a[1] != b[1] and isinstance(owner_a, ByContent) and isinstance(owner_b, ByContent):
            for change in owner_a.changes(owner_b):
                yield _Change(path + ".code", "", "", set(), change)
            diff = code_diff(owner_a, owner_b)
            if diff:
                yield _Change(
                    path + ".code", "", "", set(), "the code's diff:\n" + "\n".join(f"    {line}" for line in diff)
                )
        else:
            yield from _diff_forms(a[1], b[1], side_a, side_b, matching, path + ".owner", beside)
        yield from _diff_forms(a[2], b[2], side_a, side_b, matching, path, beside)
    elif type(a) is Tagged and len(a) == len(b) and a[0] == b[0]:
        for (step, x), (_, y) in zip(_tagged_parts(a, path), _tagged_parts(b, path)):
            yield from _diff_forms(x, y, side_a, side_b, matching, step, beside)
    elif type(a) is DimToken:
        # The same dim, renumbered or spelled out elsewhere, is no change; a changed dim in place of the one it
        # replaces is one where it is spelled out (its first occurrence in B); any other dim means other sharing.
        if matching.same.get(b.index) != a.index and (
            matching.was.get(b.index) != a.index or b.text != f"dim#{b.index}"
        ):
            yield from _change(path, a, b, side_a, side_b, beside)
    elif repr(a) != _DIM.sub(lambda m: _as_in_a(int(m[1]), matching), repr(b)):
        yield from _change(path, a, b, side_a, side_b, beside)


def _as_in_a(index: int, matching: _Matching) -> str:
    """B's ``dim#<index>`` as A numbers the same dim (a dim A does not have, in a form no index takes)."""
    return f"dim#{matching.same[index]}" if index in matching.same else f"dim#new{index}"


def _change(path: str, a: Any, b: Any, side_a: _Side, side_b: _Side, beside: frozenset[int]) -> Iterator[_Change]:
    """The change, if its two sides print differently: a line says only what one can see."""
    text_a, text_b = _cut(side_a.named(_text(a, side_a.canon))), _cut(side_b.named(_text(b, side_b.canon)))
    if text_a != text_b:
        dims = {int(i) for i in _DIM.findall(_text(b, side_b.canon))} or set(beside)
        yield _Change(path, text_a, text_b, dims)


def _text(value: Any, canon: Canonicalizer) -> str:
    return canon.describe_dim(value.index) if type(value) is DimToken else repr(value)


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _short(value: Any) -> str:
    return _cut(repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= 200 else text[:197] + "..."

"""Properties of ReturnnCommonSerializer over random dim graphs and dicts (hypothesis): the written code gives back
the same dicts, and the hash sees semantic changes but not cosmetic ones."""

from __future__ import annotations

import copy
import os
import pickle

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._hashing.sis_hash import canonical_form
from i6_rc_jobs._hashing.walks import code_texts
from i6_rc_jobs._serialization.refs import DimRef, MarkedRef
from tests.support.dim_graphs import build_dims, build_structure, dim_specs, part_sources, size_edits, structures
from tests.support.dims import DimMap, assert_equal_up_to_dims
from tests.support.walk import leaves

#: HYPOTHESIS_MAX_EXAMPLES=5000 for a long, random hunt; by default the suite runs the same 150 examples each time,
#: so that CI is reproducible.
SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", 150)),
    derandomize="HYPOTHESIS_MAX_EXAMPLES" not in os.environ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def configs(draw):
    """(dim specs, extern_data spec, network spec)."""
    specs = draw(dim_specs())
    extern = draw(st.dictionaries(st.text(min_size=1, max_size=6), structures(len(specs)), max_size=2))
    network = draw(st.dictionaries(st.text(min_size=1, max_size=6), structures(len(specs)), min_size=1, max_size=4))
    return specs, extern, network


def build(config, describe=lambda i: f"dim {i}", reverse_dicts=False):
    specs, extern, network = config
    dims = build_dims(specs, describe)
    return build_structure(extern, dims, reverse_dicts), build_structure(network, dims, reverse_dicts)


def serializer(config, **kwargs) -> ReturnnCommonSerializer:
    extern_data, network = build(config, **kwargs)
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)


def load(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "config.py", "exec"), namespace)
    return namespace


@SETTINGS
@given(configs())
def test_written_code_gives_back_the_dicts(config):
    extern_data, network = build(config)
    code = ReturnnCommonSerializer(extern_data=extern_data, network=network).get()
    loaded = load(code)
    dims = DimMap()
    assert_equal_up_to_dims(extern_data, loaded["extern_data"], dims, "extern_data")
    assert_equal_up_to_dims(network, loaded["network"], dims, "network")


@SETTINGS
@given(configs())
def test_inputs_are_never_mutated(config):
    extern_data, network = build(config)
    before = repr((extern_data, network))
    ReturnnCommonSerializer(extern_data=extern_data, network=network).get()
    assert repr((extern_data, network)) == before


@SETTINGS
@given(configs(), st.text(min_size=1, max_size=10))
def test_cosmetic_changes_keep_the_hash(config, prefix):
    reference = serializer(config)._sis_hash()
    renamed = serializer(config, describe=lambda i: f"{prefix}{i}")
    unreadable = code_texts(value for _, value in renamed.sections())[1]  # a builtin: may read every description
    assert (renamed._sis_hash() == reference) != unreadable or renamed.get() == serializer(config).get()
    assert serializer(config, reverse_dicts=True)._sis_hash() == reference
    unpickled = pickle.loads(pickle.dumps(renamed))
    assert unpickled._sis_hash() == renamed._sis_hash()
    assert unpickled.get() == renamed.get()


def _with_layer(config, data) -> tuple[ReturnnCommonSerializer, bytes, str]:
    """A serializer, its hash, and one of its network's keys, drawn."""
    ser = serializer(config)
    return ser, ser._sis_hash(), data.draw(st.sampled_from(sorted(ser.network, key=repr)))


@SETTINGS
@given(configs(), st.data())
def test_editing_and_restoring_an_entry_keeps_the_hash(config, data):
    ser, reference, key = _with_layer(config, data)
    old = ser.network.pop(key)
    ser.network["an entry added"] = 1
    assert ser._sis_hash() != reference
    del ser.network["an entry added"]
    ser.network[key] = old
    assert ser._sis_hash() == reference


@SETTINGS
@given(configs(), st.data())
def test_any_changed_value_changes_the_hash(config, data):
    ser, reference, key = _with_layer(config, data)
    original = ser.network[key]
    replacement = data.draw(st.one_of(st.integers(), st.text(), st.lists(st.integers(), max_size=2)))
    assume(type(replacement) is not type(original) or repr(replacement) != repr(original))  # == fails on arrays
    ser.network[key] = replacement
    assert ser._sis_hash() != reference


@SETTINGS
@given(configs())
def test_output_is_a_function_of_the_content(config):
    """Byte-identical code for equal content, whatever the insertion order; deep copies write the same."""
    ser = serializer(config)
    assert serializer(config, reverse_dicts=True).get() == ser.get()
    assert copy.deepcopy(ser).get() == ser.get()


def _refs(value) -> list[DimRef]:
    """Every DimRef reachable from value, including those only used to derive others."""
    found: dict[int, DimRef] = {}
    stack = [x.dim if isinstance(x, MarkedRef) else x for x in leaves(value) if isinstance(x, (DimRef, MarkedRef))]
    while stack:
        ref = stack.pop()
        if id(ref) not in found:
            found[id(ref)] = ref
            stack.extend(ref.dependencies())
    return list(found.values())


@SETTINGS
@given(configs(), st.data())
def test_any_changed_dim_changes_the_hash(config, data):
    """A dim's size, kind or match_priority (and an auto-generated dim's description) counts wherever it sits, also
    when it is only an input of others. (A derived dim has none of its own: see the test below.)"""
    ser = serializer(config)
    refs = [r for r in _refs((ser.extern_data, ser.network)) if r.global_name is None and r.op is None]
    assume(refs)
    ref = data.draw(st.sampled_from(sorted(refs, key=lambda r: r.name)))
    reference = ser._sis_hash()
    changes = [("kind", "feature" if ref.kind != "feature" else "spatial"), ("match_priority", ref.match_priority + 1)]
    if ref.copy_of is None:  # a copy has the size of its base
        changes.append(("size", (ref.size or 0) + 1))
    if ref.auto_generated:  # RETURNN finds two of them equal by it
        changes.append(("description", f"not {ref.description}"))
    field, value = data.draw(st.sampled_from(changes))
    setattr(ref, field, value)
    assert ser._sis_hash() != reference


@SETTINGS
@given(configs(), st.data())
def test_derived_dims_follow_their_inputs_in_hash_and_code(config, data):
    """Editing an input's size after conversion changes the hash, and the size and kind every derived dim shows in
    the hash are those RETURNN gives the dim the written code makes; a derived dim's own size and kind are refused."""
    ser = serializer(config)
    refs = _refs((ser.extern_data, ser.network))
    derived = [r for r in refs if r.op is not None]
    if derived:
        with pytest.raises(SerializationError, match="cannot be set on a derived dim"):
            data.draw(st.sampled_from(sorted(derived, key=lambda r: r.name))).size = 7
    bases = [r for r in refs if r.global_name is None and r.op is None and r.copy_of is None]
    if bases:
        base = data.draw(st.sampled_from(sorted(bases, key=lambda r: r.name)))
        reference = ser._sis_hash()
        base.size = data.draw(size_edits(base.size))
        assert ser._sis_hash() != reference
    loaded = load(ser.get())
    canonicalizer, _ = canonical_form(ser)
    for ref in derived:
        dim = loaded[ref.name]
        kind, size = dim.kind.name if dim.kind is not None else None, dim.dimension
        hashed = canonicalizer.definitions[canonicalizer.index[id(ref)]]
        assert hashed.startswith(f"{kind} {'?' if size is None else size} = {ref.op}("), (ref.name, hashed, dim)


@SETTINGS
@given(configs(), part_sources())
def test_parts_of_one_origin_mixed_are_one_dim_each(config, sources):
    """extern_data and network taken from the raw dicts or from serializers converted from the same raw dims, in any
    mix: the written code gives back the raw dicts (each dim one variable), and the hash is that of the raw dicts."""
    extern_data, network = build(config)
    first = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    second = ReturnnCommonSerializer(extern_data=extern_data, network=network)
    parts = {
        "raw": (extern_data, network),
        "first": (first.extern_data, first.network),
        "second": (second.extern_data, second.network),
        "second pickled": pickle.loads(pickle.dumps((second.extern_data, second.network))),
    }
    mixed = ReturnnCommonSerializer(extern_data=parts[sources[0]][0], network=parts[sources[1]][1])
    loaded = load(mixed.get())
    dims = DimMap()
    assert_equal_up_to_dims(extern_data, loaded["extern_data"], dims, "extern_data")
    assert_equal_up_to_dims(network, loaded["network"], dims, "network")
    assert mixed._sis_hash() == ReturnnCommonSerializer(extern_data=extern_data, network=network)._sis_hash()

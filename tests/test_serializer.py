"""ReturnnCommonSerializer on fixed configs: generated code and hashes pinned by golden files, semantic changes,
errors that name the path, staged networks, ReturnnConfig integration, and behaviour across processes."""

from __future__ import annotations

import collections
import copy
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap

import pytest
from i6_core.returnn.config import ReturnnConfig
from returnn.tensor import Dim, batch_dim
from sisyphus.hash import short_hash

from i6_rc_jobs import CreateConfigJob, ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._hashing.sis_hash import FORMAT_VERSION
from i6_rc_jobs.jobs.config_file import config_code, write_config_file
from tests.support import golden
from tests.support.cases import CASES, encoder_decoder, staged
from tests.support.dims import DimMap, assert_equal_up_to_dims
from tests.support import other_records
from tests.support.records import Pair

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "config.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_matches_golden_file(name):
    assert CASES[name]().get() == golden.code_file(name).read_text(), f"regenerate with {golden.__name__} --update"


def test_hashes_match_golden_file():
    pinned = json.loads(golden.HASHES.read_text())
    current = golden.current_hashes()
    if pinned["format_version"] == FORMAT_VERSION:
        assert current == pinned, "a hash changed without a FORMAT_VERSION bump: see tests/support/golden.py"
    else:
        pytest.fail(f"FORMAT_VERSION is {FORMAT_VERSION}, golden hashes are v{pinned['format_version']}: update them")


def test_changelog_explains_the_current_hash_format():
    """A release's "### Hashes" names the format in bold: ``**Hash format v1**``, ``**Hash format v1, corrected.**``."""
    changelog = open(os.path.join(REPO, "CHANGELOG.md")).read()
    hashes = re.findall(r"^### Hashes\n((?:(?!#).*\n)*)", changelog, re.M)
    assert any(re.search(rf"\*\*hash format v{FORMAT_VERSION}\b", section, re.I) for section in hashes)


def test_written_code_gives_back_extern_data_and_network():
    time = Dim(None, description="time", kind=Dim.Types.Spatial)
    feat = Dim(5, description="feat", kind=Dim.Types.Feature)
    extern_data = {"data": {"dim_tags": [batch_dim, time, feat]}}
    network = {"out": {"class": "linear", "out_dim": feat.copy(match_priority=1), "s": {time, time - 1}}}
    loaded = load(ReturnnCommonSerializer(extern_data=extern_data, network=network).get())
    dims = DimMap()
    assert_equal_up_to_dims(extern_data, loaded["extern_data"], dims)
    assert_equal_up_to_dims(network, loaded["network"], dims)
    assert loaded["extern_data"]["data"]["dim_tags"][0] is loaded["batch_dim"]


def _two_dims():
    return Dim(None, description="time", kind=Dim.Types.Spatial), Dim(None, description="out-time")


def _hash(extern_data=None, network=None) -> bytes:
    return ReturnnCommonSerializer(extern_data=extern_data, network=network)._sis_hash()


def test_swapping_two_dims_of_same_size_and_kind_changes_the_hash():
    time, out_time = _two_dims()
    out_time2 = Dim(None, description="out-time", kind=Dim.Types.Spatial)
    extern = {"a": {"dim_tags": [time, out_time2]}}
    one = _hash(extern, {"x": {"in": time, "out": out_time2}})
    time_b, out_b = Dim(None, description="time", kind=Dim.Types.Spatial), Dim(
        None, description="o", kind=Dim.Types.Spatial
    )
    swapped = _hash({"a": {"dim_tags": [time_b, out_b]}}, {"x": {"in": out_b, "out": time_b}})
    assert one != swapped


def test_which_positions_share_a_dim_is_part_of_the_hash():
    a, b = _two_dims()
    b = Dim(None, description="b", kind=Dim.Types.Spatial)
    assert _hash(network={"x": [a, a]}) != _hash(network={"x": [a, b]})


@pytest.mark.parametrize(
    "make_a, make_b",
    [
        (
            lambda: Dim(512, description="m", kind=Dim.Types.Feature),
            lambda: Dim(256, description="m", kind=Dim.Types.Feature),
        ),
        (
            lambda: Dim(512, description="m", kind=Dim.Types.Feature),
            lambda: Dim(512, description="m", kind=Dim.Types.Spatial),
        ),
        (lambda: Dim(None, description="t") + 1, lambda: Dim(None, description="t") + 2),
        (lambda: Dim(None, description="t") + 1, lambda: 1 + Dim(None, description="t")),
        (lambda: Dim(None, description="t") // 2, lambda: Dim(None, description="t").ceildiv_right(2)),
        (lambda: Dim(8, description="m").copy(match_priority=1), lambda: Dim(8, description="m")),
        (lambda: Dim(None, description="t"), lambda: batch_dim),
    ],
    ids=["size", "kind", "derivation-constant", "derivation-order", "derivation-op", "match_priority", "batch"],
)
def test_semantic_dim_changes_change_the_hash(make_a, make_b):
    assert _hash(network={"x": {"out_dim": make_a()}}) != _hash(network={"x": {"out_dim": make_b()}})


def test_old_and_new_op_names_hash_alike():
    """RETURNN renamed floordiv_right to floordiv (PR #1755); a dim made by either spelling is the same dim."""
    time = Dim(None, description="t")
    new = time // 2
    old_op = type(new.derived_from_op)("floordiv_right", list(new.derived_from_op.inputs))
    old = Dim(None, description="t//2", kind=new.kind, derived_from_op=old_op)
    assert _hash({"d": [time]}, {"x": new}) == _hash({"d": [time]}, {"x": old})


def test_equal_but_distinct_copy_is_one_variable():
    model = Dim(64, description="model", kind=Dim.Types.Feature)
    serializer = ReturnnCommonSerializer(network={"a": model, "b": model.copy(), "c": model.copy(match_priority=1)})
    assert serializer.network["a"] is serializer.network["b"]
    assert serializer.network["c"] is not serializer.network["a"]
    assert serializer.network["c"].copy_of is serializer.network["a"]


def test_names_are_readable_unique_and_never_reserved():
    dims = [Dim(3, description=d) for d in ("network", "extern_data", "class", "1st layer", "a b", "a-b", "", "len")]
    names = ReturnnCommonSerializer(network={"x": dims}).dim_names()
    assert names == sorted(set(names), key=names.index)  # unique
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*_dim", n) for n in names)
    assert "a_b_dim" in names and "a_b_1_dim" in names and "d1st_layer_dim" in names


def test_staged_networks_get_network_returns_the_stage_by_start_epoch():
    code = staged().get()
    loaded = load(code)
    get_network = loaded["get_network"]
    assert [len(get_network(e)) for e in (1, 4, 5, 9, 10, 100)] == [2, 2, 3, 3, 4, 4]
    with pytest.raises(ValueError, match="epoch 0"):
        get_network(0)
    classes = loaded["extern_data"]["classes"]["sparse_dim"]
    assert all(get_network(e)["output"]["out_dim"] is classes for e in (1, 5, 10))
    assert code.count("classes_dim = ") == 1
    assert "network =" not in code and "import" not in code.split("def get_network")[1]


def test_staged_networks_are_hashed_in_epoch_order_and_by_content():
    assert staged()._sis_hash() == staged()._sis_hash()
    changed = staged()
    changed.staged_networks[5]["output"]["loss"] = "mse"
    assert changed._sis_hash() != staged()._sis_hash()


def test_explicit_hash_and_unhashed_parts():
    assert encoder_decoder(hash_value=("my-model", 3))._sis_hash() == staged(hash_value=("my-model", 3))._sis_hash()
    assert (
        encoder_decoder(hash_value=("my-model", 3))._sis_hash()
        != encoder_decoder(hash_value=("my-model", 4))._sis_hash()
    )
    without = encoder_decoder(unhashed=["extern_data"])
    changed = encoder_decoder(unhashed=["extern_data"])
    changed.extern_data["data"]["available_for_inference"] = False
    assert without._sis_hash() == changed._sis_hash() != encoder_decoder()._sis_hash()
    with pytest.raises(SerializationError, match="unhashed"):
        encoder_decoder(unhashed=["nonsense"])


def _error(**dicts) -> str:
    with pytest.raises(SerializationError) as info:
        ReturnnCommonSerializer(**dicts).get()
    return str(info.value)


def test_errors_name_the_object_and_its_path():
    message = _error(network={"enc": {"subnetwork": {"ff": {"out_dim": lambda x: x}}}})
    assert message.startswith("network['enc']['subnetwork']['ff']['out_dim']: ") and "lambda" in message
    message = _error(extern_data={"data": {"dim_tags": [batch_dim, object()]}})
    assert message.startswith("extern_data['data']['dim_tags'][1]: <object object")


def test_cycle_is_reported_with_its_path():
    layer: dict = {"class": "copy"}
    layer["self"] = {"inner": [layer]}
    message = _error(network={"x": layer})
    assert message == "network['x']['self']['inner'][0]: contains itself (a cycle)"


def test_raw_dim_put_in_after_conversion_is_refused():
    serializer = encoder_decoder()
    serializer.network["enc"]["subnetwork"]["ff"]["out_dim"] = Dim(7, description="raw")
    with pytest.raises(
        SerializationError, match=r"^network\['enc'\]\['subnetwork'\]\['ff'\]\['out_dim'\]: .*raw RETURNN Dim"
    ):
        serializer.get()
    with pytest.raises(SerializationError, match="raw RETURNN Dim"):
        serializer._sis_hash()


def test_dims_of_two_serializers_with_one_name_are_refused():
    one, two = encoder_decoder(), encoder_decoder()
    one.network["new"] = {"out_dim": two.network["output"]["out_dim"]}
    with pytest.raises(SerializationError, match="two different dims are named 'classes_dim'"):
        one.get()


def test_edits_after_conversion_are_written():
    serializer = encoder_decoder()
    model = serializer.network["enc"]["subnetwork"]["ff"]["out_dim"]
    serializer.network["extra"] = {"class": "linear", "from": "enc", "out_dim": model}
    del serializer.network["split"]
    loaded = load(serializer.get())
    assert loaded["network"]["extra"]["out_dim"] is loaded["network"]["enc"]["subnetwork"]["ff"]["out_dim"]
    assert "split" not in loaded["network"]


def test_returnn_config_hash_is_unchanged_by_writing(tmp_path):
    config = ReturnnConfig({"num_epochs": 2}, post_config={"log_verbosity": 5}, python_prolog=[encoder_decoder()])
    before = short_hash(config)
    write_config_file(config, str(tmp_path / "returnn.config"))
    assert short_hash(config) == before
    assert config.config == {"num_epochs": 2}
    text = (tmp_path / "returnn.config").read_text()
    assert text.startswith("#!rnn.py") and text == config_code(config)


def test_config_without_serializer_is_written_as_i6_core_does(tmp_path):
    config = ReturnnConfig({"num_epochs": 2, "learning_rate": 0.1}, post_config={"log_verbosity": 5})
    before = short_hash(config)
    write_config_file(config, str(tmp_path / "returnn.config"))
    expected = ReturnnConfig({"num_epochs": 2, "learning_rate": 0.1}, post_config={"log_verbosity": 5})._serialize()
    assert (tmp_path / "returnn.config").read_text() == expected
    assert short_hash(config) == before


@pytest.mark.parametrize("key", ["model_dim", "network", "extern_data", "Pair", "ImplicitSparseDim", "batch_dim"])
def test_config_key_clashing_with_a_name_the_serializer_defines_is_refused(tmp_path, key):
    config = ReturnnConfig({}, post_config={key: 3}, python_prolog=[encoder_decoder()])
    with pytest.raises(SerializationError, match=rf"^returnn_config.config: config keys \['{key}'\] are also defined"):
        write_config_file(config, str(tmp_path / "returnn.config"))
    assert not list(tmp_path.iterdir())


_BLOCK = textwrap.dedent("""
    import pickle, sys
    BLOCKED = {blocked!r}
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{{name}} is blocked in this process")
    sys.meta_path.insert(0, Block())
    """)
_CHILD = _BLOCK.format(blocked=("returnn", "returnn_common", "tensorflow")) + textwrap.dedent("""
    config = pickle.load(sys.stdin.buffer)
    from sisyphus.hash import short_hash
    from i6_rc_jobs.jobs.config_file import config_code
    serializer = config.python_prolog[0]
    sys.stdout.write(repr((short_hash(config), serializer._sis_hash(), serializer.get(), config_code(config))))
    assert not [m for m in sys.modules if m.split(".")[0] in ("returnn", "returnn_common", "tensorflow")]
    """)


@pytest.mark.parametrize("name", sorted(CASES))
def test_unpickles_and_writes_where_returnn_and_tensorflow_are_missing(name):
    serializer = CASES[name]()
    config = ReturnnConfig({"num_epochs": 2}, python_prolog=[serializer])
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], input=pickle.dumps(config), capture_output=True, check=True, cwd=REPO
    ).stdout.decode()
    assert out == repr((short_hash(config), serializer._sis_hash(), serializer.get(), config_code(config)))


def test_construction_needs_returnn_tensor_only():
    """PyTorch-backend users have neither returnn_common nor TensorFlow."""
    script = _BLOCK.format(blocked=("returnn_common", "tensorflow")) + textwrap.dedent("""
        from tests.support.cases import CASES
        for make in CASES.values():
            make().get()
        assert "returnn.tensor" in sys.modules and "returnn.tf" not in sys.modules
        """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO, capture_output=True)


def test_identical_in_any_process_whatever_pythonhashseed():
    script = (
        "from tests.support.cases import CASES; import sys\n"
        "for make in CASES.values(): s = make(); sys.stdout.write(s.get() + repr(s._sis_hash()))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            check=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert outputs == {"".join(s.get() + repr(s._sis_hash()) for s in (m() for m in CASES.values())).encode()}


def test_names_do_not_depend_on_insertion_order():
    """Dims with one description get suffixes in canonical order, not in the order the dicts were filled."""
    time_a, time_b = Dim(None, description="time"), Dim(None, description="time")
    feat = Dim(3, description="f")
    one = {"a": {"in": time_a, "x": [feat]}, "b": {"in": time_b}}
    two = {"b": {"in": time_b}, "a": {"x": [feat], "in": time_a}}
    code = ReturnnCommonSerializer(network=one).get()
    assert ReturnnCommonSerializer(network=two).get() == code
    assert '"a": {"in": time_dim' in code and '"b": {"in": time_1_dim}' in code


def test_deep_copy_is_independent_and_keeps_shared_dims():
    import copy

    serializer = encoder_decoder()
    copied = copy.deepcopy([serializer, serializer])
    assert copied[0] is copied[1] and copied[0] is not serializer
    ff = copied[0].network["enc"]["subnetwork"]["ff"]
    assert ff["out_dim"] is copied[0].network["split"]["axis"]
    assert ff["out_dim"] is not serializer.network["enc"]["subnetwork"]["ff"]["out_dim"]
    ff["activation"] = "tanh"
    assert serializer.network["enc"]["subnetwork"]["ff"]["activation"] == "relu"
    assert copy.deepcopy(serializer).get() == serializer.get()
    assert copy.deepcopy(serializer)._sis_hash() == serializer._sis_hash()


def test_works_in_python_epilog_too():
    serializer = staged()
    config = ReturnnConfig({"num_epochs": 2}, python_epilog=[serializer])
    loaded = load(config_code(config))
    assert loaded["num_epochs"] == 2 and sorted(loaded["get_network"](5)) == ["ff0", "ff1", "output"]
    assert short_hash(config) != short_hash(ReturnnConfig({"num_epochs": 2}, python_epilog=[encoder_decoder()]))


def test_deep_copy_keeps_sisyphus_paths_and_jobs_as_sisyphus_copies_them():
    import copy

    from tests.support.jobs import MakeCheckpoint

    job = MakeCheckpoint("test_deep_copy_keeps_sisyphus_paths")
    state_before = dict(job.__dict__)
    serializer = encoder_decoder()
    serializer.network["enc"]["load_on_init"] = job.out
    copied = copy.deepcopy(serializer)
    path = copied.network["enc"]["load_on_init"]
    assert path is not job.out and path.creator is job  # the path is copied, the job is itself
    assert job.__dict__ == state_before
    assert copied._sis_hash() == serializer._sis_hash()


def test_dim_prolog_defines_the_dims_the_dicts_use_now():
    serializer = encoder_decoder()
    prolog = serializer.dim_prolog
    assert prolog.startswith("from returnn.tensor import Dim, batch_dim, single_step_dim\n")
    assert serializer.get().startswith(prolog.rstrip("\n"))
    namespace = load(prolog)
    assert namespace["time_2_dim"].derived_from_op.inputs[0] is namespace["time_dim"]
    del serializer.network["pool"], serializer.network["enc"]
    serializer.network["dec"]["unit"]["cum"]["implicit"] = set()
    prolog = serializer.dim_prolog
    assert not re.search(r"^time_2_dim = ", prolog, re.M) and re.search(r"^time_dim = ", prolog, re.M)  # extern_data


def test_dim_ops_without_a_code_form_are_refused_with_the_path():
    time = Dim(None, description="t")
    op_class = type((time + 1).derived_from_op)
    old = Dim(None, description="t//l 2", derived_from_op=op_class("floordiv_left", [time, Dim(2, description="two")]))
    message = _error(network={"x": {"out_spatial_dims": [old]}})
    assert message.startswith("network['x']['out_spatial_dims'][0]: Dim{") and "RETURNN cannot re-create" in message


def test_two_serializers_defining_one_name_are_refused(tmp_path):
    time = Dim(None, description="time")
    first = ReturnnCommonSerializer(extern_data={"data": {"dims": [batch_dim, time]}})
    second = ReturnnCommonSerializer(network={"x": {"out_shape": {batch_dim, time}}})  # another time_dim variable
    config = ReturnnConfig({}, python_prolog=[first, second])
    with pytest.raises(SerializationError, match=r"\['time_dim'\] are defined by two serializers"):
        write_config_file(config, str(tmp_path / "returnn.config"))
    together = ReturnnConfig({}, python_prolog=[first], python_epilog=[first])  # the same one twice is fine
    assert config_code(together).count("time_dim = ") == 2


def test_two_serializers_importing_one_name_for_two_things_are_refused(tmp_path):
    first = ReturnnCommonSerializer(extern_data={"x": {"pair": Pair(1, "a")}})
    also_records_pair = ReturnnCommonSerializer(network={"y": {"pair": Pair(2, "b")}})
    config = ReturnnConfig({}, python_prolog=[first], python_epilog=[also_records_pair])
    assert config_code(config).count("from tests.support.records import Pair") == 2  # one class: fine
    other = ReturnnCommonSerializer(network={"y": {"pair": other_records.Pair(2, "b")}})
    config = ReturnnConfig({}, python_prolog=[first], python_epilog=[other])
    with pytest.raises(SerializationError, match=r"\['Pair'\] are defined by two serializers"):
        write_config_file(config, str(tmp_path / "returnn.config"))


def test_dicts_with_keys_that_are_not_str_are_written_in_the_order_of_their_key_codes():
    time = Dim(None, description="time")
    schedule = {10: "c", 1: "b", -10: "x", -1: "a", 1.5: "e", 1.25: "d", (2, "x"): "f"}
    code = ReturnnCommonSerializer(network={"lr": {"schedule": schedule, "sizes": {time: 3, time * 2: 4}}}).get()
    written = re.search(r'"schedule": \{(.*?)\}', code).group(1)
    assert written == '(2, "x"): "f", -1: "a", -10: "x", 1: "b", 1.25: "d", 1.5: "e", 10: "c"'
    assert '"sizes": {time_2_dim: 4, time_dim: 3}' in code  # dims as keys: by name
    assert load(code)["network"]["lr"]["schedule"] == schedule


def test_auto_generated_dims_are_equal_or_not_by_description_in_the_code_and_in_the_hash():
    """RETURNN finds two auto-generated dims equal exactly if their descriptions are: the description is part of what
    they are, not cosmetic (an empty or missing one too)."""

    def auto(description):
        return Dim(5, description=description, auto_generated=True)

    for description in ("foo", "", None):
        a, b = auto(description), auto(description)
        assert a == b
        x = load(ReturnnCommonSerializer(network={"x": [a, b]}).get())["network"]["x"]
        assert x[0] == x[1] and x[0].auto_generated and x[0].description == a.description
    a, b, c = auto("foo"), auto("foo"), auto("bar")
    assert a != c
    same, other = ReturnnCommonSerializer(network={"x": [a, b]}), ReturnnCommonSerializer(network={"x": [a, c]})
    assert same._sis_hash() != other._sis_hash()


def test_ties_inside_set_elements_and_dict_keys_hash_alike_in_every_process():
    """Set elements and dict keys that only their dims tell apart, and keys without a total order (sets ordered by
    inclusion, nan): the same hash whatever the set and insertion order, PYTHONHASHSEED and the dims' names."""
    code = """
        from returnn.tensor import Dim
        from i6_rc_jobs import ReturnnCommonSerializer as S

        def feat(description):
            return Dim(5, description=description, kind=Dim.Types.Feature)

        a, b = feat("a"), feat("b")
        hashes = [S(network={"k": {(a, 1), (b, 1)}, "m": [a]})._sis_hash()]
        for names in ("abcd", "yzwx"):
            a, b, c, d = map(feat, names)
            hashes.append(S(network={"k": {(a, b): 1, (c, d): 1}, "m": [a, d]})._sis_hash())
            hashes.append(S(network={"k": {frozenset({a, b}), frozenset({c, d})}, "m": [a, d]})._sis_hash())
        keys = [frozenset({"a"}), frozenset({"b"}), frozenset({"a", "c"}), frozenset({"b", "d"}), frozenset({"c"})]
        for order in (keys, keys[::-1]):
            hashes.append(S(network={"x": {key: "".join(sorted(key)) for key in order}})._sis_hash())
        for order in ([float("nan"), 1.0, 0.5], [1.0, 0.5, float("nan")]):
            s = S(network={})  # nan keys go in after conversion: as edits do
            s.network["x"] = {key: str(key) for key in order}
            hashes.append(s._sis_hash())
        print("\\n".join(h.decode() for h in hashes))
    """
    outputs = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1, outputs
    hashes = outputs.pop().splitlines()
    assert hashes[1] == hashes[3] and hashes[2] == hashes[4]  # names abcd and yzwx
    assert hashes[5] == hashes[6] and hashes[7] == hashes[8]  # insertion orders


def test_new_dims_of_one_set_are_named_alike_whatever_the_set_order():
    """Dims that differ only in size 0 vs None, or in auto_generated, are no longer alike for naming."""
    for make in (lambda: (Dim(0, description="x"), Dim(None, description="x")),) + (
        lambda: (Dim(5, description="x", auto_generated=True), Dim(5, description="x")),
    ):
        for _ in range(30):
            a, b = make()
            first = ReturnnCommonSerializer(network={"s": {a, b}, "t": a}).get()
            assert first == ReturnnCommonSerializer(network={"s": {b, a}, "t": a}).get()


def test_batch_dim_copies_keep_their_match_priority():
    copy = batch_dim.copy(match_priority=1)
    code = ReturnnCommonSerializer(network={"x": {"out_shape": {copy}, "y": [copy, batch_dim]}}).get()
    loaded = load(code)["network"]["x"]["y"]
    assert loaded[0].match_priority == 1 and loaded[0] == batch_dim and loaded[1] is batch_dim
    assert "batch_1_dim = batch_dim.copy(match_priority=1)" in code


class Meters(float):
    """A subclass of a plain type, as a value: its repr does not load back as itself."""


def test_subclasses_of_plain_values_are_refused_with_their_path():
    import enum

    class Color(enum.IntEnum):
        RED = 1

    message = _error(network={"x": {"scale": Meters(0.5)}})
    assert message.startswith("network['x']['scale']: ") and "Meters, not a plain float" in message
    message = _error(network={"x": {"axes": [Color.RED]}})
    assert message.startswith("network['x']['axes'][0]: ") and "Color, not a plain int" in message


def test_complex_numbers_read_back_exactly():
    values = [1 + 2j, complex(float("nan"), 1.0), complex(-0.0, float("inf")), complex(0.0, -0.0)]
    loaded = load(ReturnnCommonSerializer(network={"x": {"c": values}}).get())["network"]["x"]["c"]
    for value, back in zip(values, loaded):
        assert type(back) is complex
        for part, back_part in ((value.real, back.real), (value.imag, back.imag)):
            assert (part == back_part or (part != part and back_part != back_part)) and str(part) == str(back_part)


def test_namedtuple_classes_are_imported_under_names_that_rebind_nothing():
    """Classes named Dim, time_dim, network or ImplicitSparseDim beside the dims, imports and dicts of those names."""
    from returnn.tensor.marked_dim import ImplicitSparseDim

    time, classes = Dim(None, description="time"), Dim(3, description="classes")
    records = other_records
    values = [
        records.Dim(1, 2),
        records.time_dim(3),
        records.network(4),
        records.ImplicitSparseDim(5),
        records.complex(6),
    ]
    network = {"x": {"v": values, "shape": {time, ImplicitSparseDim(classes)}, "c": 1 + 2j}}
    code = ReturnnCommonSerializer(network=network).get()
    namespace = load(code)
    loaded = namespace["network"]["x"]
    assert [type(v) for v in loaded["v"]] == [type(v) for v in values] and loaded["v"] == values
    assert type(loaded["c"]) is complex and loaded["c"] == 1 + 2j
    assert namespace["Dim"] is Dim and namespace["ImplicitSparseDim"] is ImplicitSparseDim
    assert isinstance(namespace["time_dim"], Dim) and time.description == namespace["time_dim"].description
    assert "from tests.support.other_records import Dim as Dim_, " in code


def test_namedtuple_classes_the_config_cannot_import_by_name_are_refused_when_converted():
    local = collections.namedtuple("local", ["a"])
    with pytest.raises(SerializationError, match=r"^network\['x'\]\['p'\]: the namedtuple class .*local cannot be"):
        ReturnnCommonSerializer(network={"x": {"p": local(1)}})
    renamed = other_records.Pair
    with pytest.raises(SerializationError, match=r"^network\['x'\]\[0\]: a namedtuple class from __main__"):
        renamed.__module__ = "__main__"
        try:
            ReturnnCommonSerializer(network={"x": [renamed(1, 2)]})
        finally:
            renamed.__module__ = "tests.support.other_records"


def _names_by_first_free_suffix(descriptions: list[str]) -> list[str]:
    """The naming rule by its definition: the stem, else the first of ``_1``, ``_2``, ... whose name is free."""
    from i6_rc_jobs._serialization.naming import RESERVED, dim_name_stem

    taken, names = set(RESERVED), []
    for description in descriptions:
        stem = dim_name_stem(description)
        name = stem
        i = 0
        while name in taken:
            i += 1
            name = f"{stem[:-4]}_{i}_dim"
        taken.add(name)
        names.append(name)
    return names


def test_dim_names_are_the_first_free_suffix_also_when_descriptions_look_like_suffixed_names():
    from i6_rc_jobs._serialization.naming import NameAllocator

    descriptions = ["x", "x 1", "x", "x_1", "x", "x 3", "x", "x", "x 1 1", "x 1", "x 1", "batch", "batch", "x:2", "x"]
    allocator = NameAllocator()
    names = [allocator.allocate(d) for d in descriptions]
    assert names == _names_by_first_free_suffix(descriptions)
    assert names[:8] == ["x_dim", "x_1_dim", "x_2_dim", "x_1_1_dim", "x_3_dim", "x_3_1_dim", "x_4_dim", "x_5_dim"]
    assert len(set(names)) == len(names)


def test_namedtuples_that_their_items_do_not_rebuild_are_refused_when_converted():
    records = other_records
    with_attributes = records.WithAttributes(1)
    with_attributes.note = "lost"
    refused = {
        "has its own __new__ (in Doubling)": records.Doubling(1),
        "redefines _fields": records.Short(1, 2),
        "has instance attributes ['note']": with_attributes,
    }
    for problem, value in refused.items():
        with pytest.raises(SerializationError, match=rf"^network\['x'\]\['p'\]\[1\]: .*{re.escape(problem)}"):
            ReturnnCommonSerializer(network={"x": {"p": [0, value]}})
    serializer = ReturnnCommonSerializer(network={"x": {"p": records.WithMethod(1, 2)}})
    copied = copy.deepcopy(serializer)
    copied.close()
    assert load(copied.get())["network"]["x"]["p"] == records.WithMethod(1, 2)
    serializer.network["x"]["q"] = records.Doubling(1)
    with pytest.raises(SerializationError, match=r"^network\['x'\]\['q'\]: .*has its own __new__"):
        serializer.get()


def test_parts_set_through_the_attributes_are_checked_as_the_constructors_are():
    feat = Dim(5, description="feat", kind=Dim.Types.Feature)
    net = {"output": {"class": "linear", "out_dim": feat}}
    serializer = ReturnnCommonSerializer(staged_networks={1: net})
    injected = "__import__('os').system('echo injected')"
    with pytest.raises(SerializationError, match=r"^staged_networks: staged_networks needs int start epochs as keys"):
        serializer.staged_networks = {injected: serializer.staged_networks[1]}
    with pytest.raises(SerializationError, match=r"^ReturnnCommonSerializer: give either network or staged_networks"):
        serializer.network = {"output": {"class": "copy"}}
    with pytest.raises(SerializationError, match=r"^staged_networks\[1\]\['output'\]\['out_dim'\]: .* raw RETURNN Dim"):
        serializer.staged_networks = {1: net}
    with pytest.raises(SerializationError, match=r"^extern_data\['data'\]\['dim_tags'\]\[0\]: .* raw RETURNN Dim"):
        serializer.extern_data = {"data": {"dim_tags": [batch_dim, feat]}}
    with pytest.raises(SerializationError, match=r"^network: 'output' .*is not a dict"):
        ReturnnCommonSerializer(network="output")
    serializer.staged_networks[injected] = serializer.staged_networks[1]  # an edit in place: refused when written
    with pytest.raises(SerializationError, match=r"^staged_networks: staged_networks needs int start epochs as keys"):
        serializer.get()
    del serializer.staged_networks[injected]
    serializer.staged_networks = {2: serializer.staged_networks[1]}
    assert "if epoch >= 2:" in serializer.get()


def _nested(levels: int, leaf, wrap) -> object:
    for _ in range(levels):
        leaf = wrap(leaf)
    return leaf


def _too_deep(path: str) -> str:
    return rf"^{re.escape(path)}: is nested too deeply: its code would be inside more than 200 brackets"


def test_nesting_beyond_what_python_compiles_is_refused_at_construction_with_its_path():
    # Python compiles code inside at most 200 brackets (network = {...} is one): the deepest accepted values compile
    deepest = {
        "dicts": (_nested(199, 1, lambda d: {"a": d}), _nested(200, 1, lambda d: {"a": d})),
        "lists": ({"a": _nested(198, 1, lambda d: [d])}, {"a": _nested(199, 1, lambda d: [d])}),
        "tuples": ({"a": _nested(198, "x", lambda d: (d,))}, {"a": _nested(199, "x", lambda d: (d,))}),
        "frozensets": (
            {"a": _nested(99, 1, lambda d: frozenset([d]))},
            {"a": _nested(100, 1, lambda d: frozenset([d]))},
        ),
        "nan leaf": (_nested(198, float("nan"), lambda d: {"a": d}), _nested(199, float("nan"), lambda d: {"a": d})),
        "complex leaf": (
            _nested(197, complex("nan+1j"), lambda d: {"a": d}),
            _nested(198, complex("nan+1j"), lambda d: {"a": d}),
        ),
    }
    import numpy  # array([...]), frombuffer(b64decode(...)) and .reshape((...)) open two brackets; float32(1.5) one

    for name, leaf, opens in (
        ("numpy array", numpy.ones((2, 2), dtype=numpy.float32), 2),
        ("numpy nan array", numpy.array([numpy.nan]), 2),
        ("numpy scalar", numpy.float32(1.5), 1),
        ("numpy nan scalar", numpy.float32("nan"), 2),
    ):
        deepest[name] = tuple(_nested(levels - opens, leaf, lambda d: {"a": d}) for levels in (199, 200))
    for name, (accepted, refused) in deepest.items():
        code = ReturnnCommonSerializer(network={"x": accepted}).get()
        assert repr(load(code)["network"]["x"]) == repr(accepted), name
        with pytest.raises(SerializationError) as info:
            ReturnnCommonSerializer(network={"x": refused})
        message = str(info.value)
        assert "\n" not in message and re.match(
            r"^network\['x'\](\['a'\]|\[0\]|\{.*?\})*: is nested too deeply", message
        )
        with pytest.raises(SerializationError, match="is nested too deeply"):
            ReturnnCommonSerializer(network={}).network = {"x": refused}
    from returnn.tensor.marked_dim import ImplicitSparseDim  # written as a call: one bracket

    marked = ImplicitSparseDim(Dim(3, description="classes"))
    compile(ReturnnCommonSerializer(network=_nested(199, marked, lambda d: {"a": d})).get(), "config.py", "exec")
    with pytest.raises(SerializationError, match=_too_deep("network" + "['a']" * 200)):
        ReturnnCommonSerializer(network=_nested(200, marked, lambda d: {"a": d}))
    with pytest.raises(SerializationError, match=_too_deep("staged_networks[3]" + "['a']" * 200)):
        ReturnnCommonSerializer(staged_networks={3: _nested(201, 1, lambda d: {"a": d})})


def test_ints_with_more_digits_than_python_reads_are_refused_at_construction_with_their_path():
    largest = -(10**4300 - 1)
    serializer = ReturnnCommonSerializer(network={"x": {"n": largest}})
    script = "import sys; exec(sys.stdin.read()); assert network['x']['n'] == -(10**4300 - 1)"
    subprocess.run([sys.executable, "-c", script], input=serializer.get(), text=True, check=True)
    assert serializer._sis_hash() != ReturnnCommonSerializer(network={"x": {"n": largest + 1}})._sis_hash()
    for network, path in (
        ({"x": {"n": 10**4300}}, "network['x']['n']"),
        ({"x": [1, -(10**4300)]}, "network['x'][1]"),
        ({"x": {10**5000: 1}}, "network['x'][<an int of more than 4300 digits>]"),
        ({"x": {"s": {10**4300}}}, "network['x']['s']{<an int of more than 4300 digits>}"),
    ):
        with pytest.raises(SerializationError, match="an int of more than 4300 digits") as info:
            ReturnnCommonSerializer(network=network)
        assert str(info.value).startswith(f"{path}: ")
    with pytest.raises(SerializationError, match=r"^network\['x'\]\['n'\]: an int of more than 4300 digits"):
        ReturnnCommonSerializer(network={}).network = {"x": {"n": 10**4300}}


def test_config_values_holding_dims_the_prolog_does_not_define_or_serializers_are_refused(tmp_path):
    from i6_rc_jobs import CheckedReturnnConfig

    serializer, other = encoder_decoder(), encoder_decoder()
    other.network["enc"]["subnetwork"]["ff"]["out_dim"].size = 2048
    own_dim = serializer.network["enc"]["subnetwork"]["ff"]["out_dim"]
    fine = CheckedReturnnConfig({"ff": {"dim": own_dim}}, python_prolog=[serializer], black_formatting=False)
    fine.write(str(tmp_path / "fine.config"))
    namespace = load((tmp_path / "fine.config").read_text())
    assert namespace["ff"]["dim"] is namespace[own_dim.name] and namespace[own_dim.name].dimension == own_dim.size
    wrong = {
        "config['ff']['dims'][0]": ({"ff": {"dims": [other.network["enc"]["subnetwork"]["ff"]["out_dim"]]}}, {}),
        "post_config['s']": ({}, {"s": other}),
        "config['nested']['x']": ({"nested": {"x": encoder_decoder()}}, {}),
    }
    for path, (config, post_config) in wrong.items():
        match = rf"^returnn_config\.{re.escape(path)}: "
        with pytest.raises(SerializationError, match=match):  # when made, in the manager
            CheckedReturnnConfig(config, post_config, python_prolog=[serializer], black_formatting=False)
        with pytest.raises(SerializationError, match=match):
            CreateConfigJob(ReturnnConfig(config, post_config, python_prolog=[serializer]))
        with pytest.raises(SerializationError, match=match):
            config_code(ReturnnConfig(config, post_config, python_prolog=[serializer]))
        edited = CheckedReturnnConfig({}, python_prolog=[serializer], black_formatting=False)
        edited.config.update(config)
        edited.post_config.update(post_config)
        with pytest.raises(SerializationError, match=match):  # edited after it was made: when written
            edited.write(str(tmp_path / "wrong.config"))
    in_epilog = ReturnnConfig({"dim": own_dim}, python_epilog=[serializer])  # defined only after the config's lines
    with pytest.raises(SerializationError, match=r"^returnn_config\.config\['dim'\]: .* no prolog serializer defines"):
        config_code(in_epilog)


@pytest.mark.parametrize("key", ["float", "set", "frozenset", "complex"])
def test_config_keys_that_shadow_the_builtins_the_written_code_calls_are_refused(key):
    config = ReturnnConfig({key: 1}, python_prolog=[staged()])
    with pytest.raises(SerializationError, match=rf"config keys \['{key}'\] would replace the builtins"):
        config_code(config)


def test_namedtuple_classes_named_like_get_networks_parameters_are_imported_under_other_names():
    records = other_records
    serializer = ReturnnCommonSerializer(staged_networks={1: {"x": {"e": records.epoch(1), "k": records.kwargs(2)}}})
    code = serializer.get()
    assert "import epoch as epoch_, kwargs as kwargs_" in code
    assert load(code)["get_network"](3)["x"] == {"e": records.epoch(1), "k": records.kwargs(2)}


def test_hash_full_python_code_hashes_a_serializer_by_its_hash(tmp_path):
    from sisyphus.hash import sis_hash_helper

    from i6_rc_jobs import CheckedReturnnConfig

    def helper():
        return 1

    changed = encoder_decoder()
    changed.network["output"]["loss_scale"] = 0.5
    configs = [
        CheckedReturnnConfig({}, python_prolog=[helper, s], hash_full_python_code=True, black_formatting=False)
        for s in (encoder_decoder(), encoder_decoder(), changed)
    ]
    hashes = [sis_hash_helper(c) for c in configs]
    assert hashes[0] == hashes[1] != hashes[2]
    assert configs[0].python_prolog_hash == ["    def helper():\n        return 1\n", configs[0].python_prolog[1]]
    configs[0].write(str(tmp_path / "returnn.config"))
    assert configs[0].python_prolog[1].get() in (tmp_path / "returnn.config").read_text()
    plain = CheckedReturnnConfig({}, python_prolog=[helper], hash_full_python_code=True)
    assert sis_hash_helper(plain) == sis_hash_helper(
        ReturnnConfig({}, python_prolog=[helper], hash_full_python_code=True)
    )


_DIM_IN_CONFIG = """
import sys
from i6_core.returnn.config import ReturnnConfig
from sisyphus.hash import short_hash
from i6_rc_jobs._serialization.refs import MarkedRef
from tests.support.cases import encoder_decoder

def config(size=None, name=None):
    serializer = encoder_decoder()
    dim = serializer.network["enc"]["subnetwork"]["ff"]["out_dim"]
    if size is not None:
        dim.size = size
    if name is not None:
        dim.code = name
    return ReturnnConfig({"ff": {"dim": dim, "sparse": MarkedRef("ImplicitSparseDim", dim)}}, python_prolog=[serializer])

sys.stdout.write(repr([short_hash(config()), short_hash(config(size=2048)), short_hash(config(name="other_dim"))]))
"""


def test_a_config_holding_dimrefs_as_values_hashes_alike_in_every_process_and_by_their_content_and_name():
    """A DimRef's fields include the random origin of the RETURNN Dim it was made from: never hashed."""
    runs = {
        subprocess.run([sys.executable, "-c", _DIM_IN_CONFIG], capture_output=True, check=True, cwd=REPO).stdout
        for _ in range(2)
    }
    assert len(runs) == 1
    same, other_size, other_name = eval(runs.pop())
    assert len({same, other_size, other_name}) == 3

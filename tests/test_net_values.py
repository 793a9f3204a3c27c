"""Values of real net dicts besides dims and plain data: numpy arrays and scalars (a ``constant`` layer's
value, a parameter's init) and module-level functions and classes (an ``eval`` layer's function), written so that
they load back as themselves and hashed by what they are; what has no such form is refused with its path."""

from __future__ import annotations

import functools
import pickle
import subprocess
import sys

import numpy
import pytest
from returnn.tensor import Dim, batch_dim

from i6_rc_jobs import ReturnnCommonSerializer, SerializationError
from i6_rc_jobs._serialization.numpy_values import READABLE_ITEMS
from tests.support import net_functions
from tests.support.dims import value_bytes
from tests.test_serializer import REPO, load

NAN_NEGATIVE_PAYLOAD = numpy.frombuffer(bytes.fromhex("0100c0ff"), dtype="<f4")[0]  # a NaN that float("nan") is not

ARRAYS = {
    "float32 2x3": numpy.arange(6, dtype=numpy.float32).reshape(2, 3) / 7,
    "float16": numpy.array([0.1, -2.5, 65504.0], dtype=numpy.float16),
    "float64 nan inf -0.0": numpy.array([numpy.nan, numpy.inf, -numpy.inf, -0.0, 0.1], dtype=numpy.float64),
    "NaN payload": numpy.array([NAN_NEGATIVE_PAYLOAD, 1.0], dtype=numpy.float32),
    "big-endian": numpy.array([[1.5, 2.25]], dtype=">f4"),
    "0-d": numpy.array(2.5, dtype=numpy.float32),
    "empty 0x3": numpy.zeros((0, 3), dtype=numpy.int16),
    "empty 3x0": numpy.zeros((3, 0), dtype=numpy.int16),
    "bool": numpy.array([[True, False], [False, True]]),
    "uint64 max": numpy.array([0, 2**64 - 1], dtype=numpy.uint64),
    "int8 3-d": numpy.arange(-12, 12, dtype=numpy.int8).reshape(2, 3, 4),
    "complex64": numpy.array([1 + 2j, complex(numpy.nan, -0.0)], dtype=numpy.complex64),
    "longdouble": numpy.array([1 / 3], dtype=numpy.longdouble),
    "str": numpy.array(["ab", "c\u00e9"]),
    "bytes": numpy.array([b"a\x00b", b"c"]),
    "datetime64": numpy.array(["2026-11-30", "1970-01-01"], dtype="datetime64[D]"),
    "transposed (not C-contiguous)": numpy.arange(12, dtype=numpy.float32).reshape(3, 4).T,
    "items beyond READABLE_ITEMS": numpy.linspace(0.0, 1.0, READABLE_ITEMS + 1, dtype=numpy.float32),
    "6-d": numpy.ones((1, 2, 1, 2, 1, 2), dtype=numpy.float64),
}
SCALARS = {
    "float32": numpy.float32(1.5),
    "float64": numpy.float64(0.1),
    "float64 nan": numpy.float64("nan"),
    "float32 NaN payload": NAN_NEGATIVE_PAYLOAD,
    "int64": numpy.int64(-(2**63)),
    "uint8": numpy.uint8(255),
    "bool": numpy.bool_(True),
    "complex128": numpy.complex128(1 - 2j),
    "longdouble": numpy.longdouble(1) / 3,
    "str_": numpy.str_("x"),
    "str_ with a trailing NUL": numpy.str_("a\x00"),  # item() would drop it
    "bytes_ with a trailing NUL": numpy.bytes_(b"a\x00"),
    "empty str_ (itemsize 0)": numpy.str_(""),
    "timedelta64": numpy.timedelta64(5, "s"),
}


def _same(value, loaded) -> None:
    """The same type, dtype, shape and bytes, little-endian (see the test of byte order)."""
    value = value.astype(value.dtype.newbyteorder("<")) if value.dtype.str[0] == ">" else value
    assert type(loaded) is type(value), (type(loaded), type(value))
    assert loaded.dtype.str == value.dtype.str and loaded.shape == value.shape
    assert value_bytes(loaded) == value_bytes(value)


@pytest.mark.parametrize("name", sorted(ARRAYS) + sorted(SCALARS))
def test_numpy_values_load_back_with_their_type_dtype_shape_and_bytes(name):
    value = ARRAYS.get(name, SCALARS.get(name))
    loaded = load(ReturnnCommonSerializer(network={"c": {"class": "constant", "value": value}}).get())
    back = loaded["network"]["c"]["value"]
    _same(value, back)
    if isinstance(value, numpy.ndarray):
        assert back.flags.writeable  # like the original: RETURNN or a config may change it in place


def test_numpy_values_are_written_as_their_items_while_small_and_readable_else_as_bytes():
    array = numpy.array([[0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]], dtype=numpy.float32)
    code = ReturnnCommonSerializer(network={"a": array, "s": numpy.float32(1.5), "b": numpy.bool_(1)}).get()
    assert "from numpy import array, bool as bool_, float32\n" in code  # numpy's bool does not replace the builtin
    assert '"a": array([0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0], dtype="<f4").reshape((1, 9)),' in code
    assert '"b": bool_(True),' in code and '"s": float32(1.5),' in code  # one per line: the array is too wide for one
    big = numpy.random.default_rng(0).standard_normal((1000, 1000)).astype(numpy.float32)
    code = ReturnnCommonSerializer(network={"w": big}).get()
    assert len(code) < 1.34 * big.nbytes + 200  # base64: 4 characters per 3 bytes
    _same(big, load(code)["network"]["w"])


def _hash(value) -> bytes:
    return ReturnnCommonSerializer(network={"c": {"class": "constant", "value": value}})._sis_hash()


def test_byte_order_is_neither_written_nor_hashed_as_numpys_pickling_drops_it():
    """numpy pickles a big-endian array (Python's default protocol 4) as a little-endian one of the same items: the
    serializer, pickled for every Sisyphus worker, must write and hash them alike."""
    big = numpy.array([[1.5, -2.0]], dtype=">f8")
    assert pickle.loads(pickle.dumps(big)).dtype.str == "<f8"  # numpy's behaviour, the reason
    serializer = ReturnnCommonSerializer(network={"c": {"value": big, "u": numpy.array(["ab"], dtype=">U2")}})
    unpickled = pickle.loads(pickle.dumps(serializer))
    assert unpickled._sis_hash() == serializer._sis_hash() and unpickled.get() == serializer.get()
    little = {"c": {"value": big.astype("<f8"), "u": numpy.array(["ab"], dtype="<U2")}}
    assert ReturnnCommonSerializer(network=little)._sis_hash() == serializer._sis_hash()
    _same(big, load(serializer.get())["network"]["c"]["value"])


def test_numpy_hash_changes_with_any_element_the_dtype_or_the_shape():
    base = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
    one_element = base.copy()
    one_element[1, 2] = numpy.nextafter(one_element[1, 2], numpy.float32(100))
    nan_payload = numpy.array([NAN_NEGATIVE_PAYLOAD]), numpy.array([numpy.float32("nan")])
    variants = [
        base,
        one_element,
        base.astype(numpy.float64),
        base.reshape(3, 2),
        base.reshape(1, 2, 3),
        base.ravel(),
        *nan_payload,
        numpy.array(1.5, dtype=numpy.float32),  # a 0-d array, a numpy scalar and a plain float
        numpy.float32(1.5),
        1.5,
        numpy.zeros((0, 3), numpy.float32),
        numpy.zeros((3, 0), numpy.float32),
    ]
    hashes = [_hash(v) for v in variants]
    assert len(set(hashes)) == len(variants)
    assert _hash(numpy.asfortranarray(base)) == _hash(base.T.copy().T) == hashes[0]  # memory layout: not content


def test_functions_and_classes_load_back_as_themselves_also_as_keys_and_set_elements():
    from tests.support.records import Pair

    values = [net_functions.double, net_functions.Scale, Pair, len, numpy.float32, net_functions.network]
    network = {
        "x": {"class": "eval", "eval": net_functions.double, "v": values, "s": {net_functions.halve, "a"}},
        "k": {net_functions.double: 1, net_functions.Scale: 2, "a": 3},
        "y": {"f": net_functions.float},
    }
    code = ReturnnCommonSerializer(network=network).get()
    loaded = load(code)["network"]
    assert loaded == network and all(a is b for a, b in zip(loaded["x"]["v"], values))
    # names the code binds otherwise (the dict, a builtin it calls) are imported as others
    assert "from tests.support.net_functions import Scale, double, float as float_, halve, network as network_" in code


def _refused(value) -> str:
    with pytest.raises(SerializationError) as info:
        ReturnnCommonSerializer(network={"x": {"class": "eval", "eval": value}})
    return str(info.value)


def test_functions_and_classes_their_name_does_not_give_back_are_refused_at_construction_with_their_path():
    def nested(source, **_kwargs):
        return source(0)

    class Local:
        pass

    for value, name in ((lambda source, **_: source(0), "<lambda>"), (nested, "nested"), (Local, "Local")):
        message = _refused(value)
        assert message.startswith("network['x']['eval']: the ") and "<locals>" in message and name in message
        assert "cannot be imported by that name" in message
    replaced = net_functions.halve
    try:
        net_functions.halve = net_functions.double  # the name now gives another function
        assert "net_functions.halve cannot be imported by that name" in _refused(replaced)
        replaced.__module__ = "__main__"
        assert _refused(replaced).startswith("network['x']['eval']: a function from __main__ cannot be imported")
    finally:
        replaced.__module__, net_functions.halve = "tests.support.net_functions", replaced
    for value in (net_functions.Scale().__init__, numpy.exp):
        assert _refused(value).startswith("network['x']['eval']: ")
    assert "['eval'].func: the function " in _refused(functools.partial(nested))


def test_a_partial_is_written_as_a_call_of_functools_partial():
    serializer = ReturnnCommonSerializer(
        network={"x": {"class": "eval", "eval": functools.partial(net_functions.double)}}
    )
    assert "from functools import partial" in serializer.get() and '"eval": partial(double)' in serializer.get()


@pytest.mark.parametrize(
    "value, problem",
    [
        (numpy.array([object()]), "has dtype object"),
        (numpy.zeros(2, dtype=[("a", "<i4")]), "has dtype"),
        (numpy.ma.masked_array([1, 2], mask=[0, 1]), "is a subclass of a numpy type"),
    ],
)
def test_numpy_values_without_a_code_form_are_refused_at_construction_with_their_path(value, problem):
    with pytest.raises(SerializationError) as info:
        ReturnnCommonSerializer(network={"c": {"value": [value]}})
    message = str(info.value)
    assert message.startswith("network['c']['value'][0]: ") and problem in message and "\n" not in message


def test_arrays_are_the_serializers_own_copies():
    value = numpy.zeros(3, dtype=numpy.float32)
    serializer = ReturnnCommonSerializer(network={"c": {"value": value}})
    before = serializer._sis_hash()
    value[0] = 1  # the caller's array, changed after construction
    assert serializer._sis_hash() == before and "array([0.0, 0.0, 0.0]" in serializer.get()


def test_hashes_of_numpy_values_and_functions_are_the_same_after_pickling_and_in_another_process():
    network = {
        "c": {"class": "constant", "value": ARRAYS["NaN payload"], "s": SCALARS["float64 nan"]},
        "e": {"class": "eval", "eval": net_functions.double, "k": {numpy.int64(3): net_functions.Scale}},
    }
    serializer = ReturnnCommonSerializer(network=network)
    unpickled = pickle.loads(pickle.dumps(serializer))
    assert unpickled._sis_hash() == serializer._sis_hash() and unpickled.get() == serializer.get()
    script = (
        "import pickle, sys\n"
        "s = pickle.load(sys.stdin.buffer)\n"
        "sys.stdout.write(repr((s._sis_hash(), s.get())))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input=pickle.dumps(serializer), capture_output=True, check=True, cwd=REPO
    ).stdout.decode()
    assert out == repr((serializer._sis_hash(), serializer.get()))
    other = ReturnnCommonSerializer(network={**network, "e": {**network["e"], "eval": net_functions.halve}})
    assert other._sis_hash() != serializer._sis_hash()


def test_returnn_builds_a_constant_layer_of_a_numpy_array_and_an_eval_layer_of_a_module_level_function(tmp_path):
    """Real RETURNN and TF: the written config loads, its network builds, and the eval layer computes twice the
    constant, which holds exactly the array (also a NaN payload and -0.0)."""
    import tensorflow as tf
    from returnn.config import Config, global_config_ctx
    from returnn.tf.network import ExternData, TFNetwork

    from i6_rc_jobs._verify.returnn_check import construct_networks

    time, feat = Dim(None, description="time", kind=Dim.Types.Spatial), Dim(4, description="feat")
    value = numpy.array([0.5, -0.0, 1e-30, NAN_NEGATIVE_PAYLOAD], dtype=numpy.float32)
    network = {
        "const": {"class": "constant", "value": value, "shape": [feat]},
        "twice": {"class": "eval", "from": "const", "eval": net_functions.double, "out_shape": {feat}},
        "output": {"class": "combine", "kind": "add", "from": ["data", "twice"]},
    }
    extern_data = {"data": {"dim_tags": [batch_dim, time, feat]}}
    path = tmp_path / "returnn.config"
    path.write_text("#!rnn.py\n" + ReturnnCommonSerializer(extern_data=extern_data, network=network).get())
    assert "twice" in construct_networks(str(path), quiet=True)[1]
    config = Config()
    config.load_file(str(path))
    with tf.compat.v1.Graph().as_default(), global_config_ctx(config), tf.compat.v1.Session() as session:
        extern = ExternData()
        extern.init_from_config(config=config, auto_create_placeholders=True)
        net = TFNetwork(config=config, extern_data=extern, train_flag=False)
        net.construct_from_dict(config.typed_value("network"))
        const, twice = session.run([net.layers["const"].output.placeholder, net.layers["twice"].output.placeholder])
    assert const.dtype == numpy.float32 and const.tobytes() == value.tobytes()
    assert numpy.array_equal(twice, value * 2, equal_nan=True)


def test_numpy_scalars_as_dict_keys_beside_tuples_hash_and_write():
    """numpy compares a scalar with a tuple item by item, as an array: such keys are ordered canonically instead."""
    from tests.support.records import Pair

    time = Dim(None, description="time")
    network = {"x": {numpy.float32(1.5): "a", Pair(time, 1): "b", (time, "c"): "d"}}
    serializer = ReturnnCommonSerializer(network=network)
    reordered = ReturnnCommonSerializer(network={"x": dict(reversed(list(network["x"].items())))})
    assert serializer._sis_hash() == reordered._sis_hash()
    assert load(serializer.get())["network"]["x"][numpy.float32(1.5)] == "a"

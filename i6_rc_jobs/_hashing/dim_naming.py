"""Which layers make a dim described by their own name, as the graph hash keeps their names (rule "layer-names").

RETURNN takes two auto-generated dims with the same description for one dim (returnn/tensor/_dim_extra.py
``Dim.is_equal``, ``__hash__``), and many layers describe the dims they make by their local name (``"%s:window" %
name``, ``FeatureDim("%s:feature-dense" % name)`` from ``n_out``, a Data made from a shape and named
``"<name>_output"``). So such a layer's name decides which axes line up with which: a ``window`` called ``x`` in a
subnetwork lines up with the root ``x``'s window. Read off the pinned RETURNN (returnn/tf/layers/*.py, file:line in
the comments); denied by default: a layer keeps its name unless its options give every dim it would name.

A given dim helps only where RETURNN takes it as it is. Where RETURNN makes the named dim anyway and declares it the
same as the given one, a given dim of unknown size becomes the copy (``declare_same_as`` keeps the better-defined one
as the base and marks the given one auto-generated): there only a static dim counts as given ("static" below)."""

from __future__ import annotations

from typing import Any, Callable

from i6_rc_jobs._serialization.refs import DimRef, MarkedRef

_DIMS = (DimRef, MarkedRef)


def _dim(value: Any) -> bool:
    return isinstance(value, _DIMS)


def _static(value: Any) -> bool:
    return type(value) is DimRef and value.size is not None


def _dims(value: Any, each: Callable[[Any], bool] = _dim) -> bool:
    return type(value) in (list, tuple) and all(each(item) for item in value)


def _given(*options: str, each: Callable[[Any], bool] = _dim) -> Callable[[dict], bool]:
    """A layer that names a dim unless each of ``options`` is given as a dim (``each``)."""
    return lambda desc: not all(each(desc.get(option)) for option in options)


def _given_all(option: str, each: Callable[[Any], bool] = _dim) -> Callable[[dict], bool]:
    """A layer that names a dim unless ``option`` is a list of dims (``each``)."""
    return lambda desc: not _dims(desc.get(option), each)


def _always(desc: dict) -> bool:
    return True


def _constant(desc: dict) -> bool:
    """basic.py:3643 Data.template_from_constant(name="%s_const"): ``"<name>_const:static:<i>"`` for an int in the
    shape, or each axis of a value with no shape."""
    if "shape" in desc:
        return not _dims(desc["shape"])
    return type(desc.get("value", 0.0)) not in (bool, int, float)


def _variable(desc: dict) -> bool:
    """variable.py:142-155: ``"%s:static:%i"`` for an int in the shape, ``"%s:dummy-time"`` with add_time_axis."""
    return not _dims(desc.get("shape")) or bool(desc.get("add_time_axis"))


def _reduce(desc: dict) -> bool:
    """basic.py:7942 (reduce) and 8287 (weighted_sum): ``"%s:keep-dim-%i"`` with keep_dims."""
    return bool(desc.get("keep_dims"))


def _length(desc: dict) -> bool:
    """basic.py:2374-2406: ``"<name>_length..."`` dims with sparse or add_time_axis."""
    return bool(desc.get("sparse")) or bool(desc.get("add_time_axis"))


def _switch(desc: dict) -> bool:
    """basic.py:10160: ``"<name>_true:static:<i>"`` for an array constant as a branch."""
    return any(type(desc.get(key)) not in (str, bool, int, float, type(None)) for key in ("true_from", "false_from"))


def _dot(desc: dict) -> bool:
    """basic.py:9007 ``"%s:dot:dummy-var2"``: only with add_var2_if_empty, the default below behavior version 3 but
    with var1 or var2 "auto" (8790)."""
    if desc.get("add_var2_if_empty") is False or "auto" in (desc.get("var1"), desc.get("var2")):
        return False
    return desc.get("add_var2_if_empty", True) is not None  # None is no dummy either


def _range(desc: dict) -> bool:
    """basic.py:3367-3372: ``"%s:range"`` (declared the same as out_spatial_dim), ``"%s:range-indices"`` if sparse."""
    return not _static(desc.get("out_spatial_dim")) or bool(desc.get("sparse"))


def _reinterpret(desc: dict) -> bool:
    """basic.py:6211-6237: ``"%s:set-sparse-dim"`` with set_sparse on dense data or an int set_sparse_dim."""
    sparse_dim = desc.get("set_sparse_dim")
    return type(sparse_dim) is int or (bool(desc.get("set_sparse")) and not _dim(sparse_dim))


def _positional(desc: dict) -> bool:
    """rec.py:8387: a feature dim from n_out unless it is added to the input."""
    return not (_dim(desc.get("out_dim")) or bool(desc.get("add_to_input")))


def _rec(desc: dict) -> bool:
    """rec.py:402 (``"dyn-time:<path>"`` without axis) and 558 (``"%s:feature"`` for a cell unit without out_dim)."""
    return not _dim(desc.get("axis")) or (type(desc.get("unit")) is not dict and not _dim(desc.get("out_dim")))


_OUT_DIM = _given("out_dim")

#: By class: whether a layer of that class (its options ``desc``) may make a dim described by its name, beyond what
#: any class makes from n_out or out_type (see names_dims).
CLASSES: dict[str, Callable[[dict], bool]] = {
    # LayerBase._base_get_out_data_from_opts (base.py:427-497): "%s:feature-dense" from n_out or the target's dim
    **dict.fromkeys(
        "linear forward hidden softmax signal_masking first_t_frames_noise_estimator complex_to_alternating_real "
        "image_summary alternating_real_to_complex complex_linear_projection mask_based_gevbeamforming "
        "mask_based_mvdrbeamforming mel_filterbank parametric_wiener_filter get_last_hidden_state self_attention "
        "time_chunking transposed_conv istft".split(),
        _OUT_DIM,
    ),
    "positional_encoding": _positional,
    "window": _given("window_dim", each=_static),  # basic.py:3875
    "slice": _given("out_dim", each=_static),  # basic.py:1250
    "slice_nd": _given("size"),  # basic.py:1481-1501
    "range": _range,
    "random": _given_all("shape"),  # basic.py:3197
    "rand_int": _given_all("shape"),  # basic.py:3292
    "constant": _constant,
    "variable": _variable,
    "expand_dims": _given("dim"),  # basic.py:5573
    "repeat": _given("out_dim", each=_static),  # basic.py:5746
    "split": _given_all("out_dims"),  # basic.py:4744
    "split_dims": _given_all("dims", each=_static),  # basic.py:5064-5087
    "unflatten_nd": _given_all("out_dims"),  # basic.py:5475-5483
    "reinterpret_data": _reinterpret,
    "conv": lambda desc: _OUT_DIM(desc) or not _dims(desc.get("out_spatial_dims")),  # basic.py:7028-7038
    "stft": lambda desc: _OUT_DIM(desc) or not _dims(desc.get("out_spatial_dims")),  # signal_processing.py:844
    "pool": _given_all("out_spatial_dims"),  # basic.py:7322, as conv
    "reduce": _reduce,
    "accumulate_mean": _reduce,  # a reduce
    "weighted_sum": _reduce,
    "stack": _given("out_spatial_dim", each=_static),  # basic.py:8149
    "dot": _dot,
    "resize": _given("out_dim", each=_static),  # basic.py:9511
    "length": _length,
    "switch": _switch,
    "rec": _rec,
    "masked_computation": _given("out_spatial_dim"),  # rec.py:9448
    "relative_positional_encoding": _given("out_dim", "query_spatial_dim", "key_value_spatial_dim"),  # rec.py:11299
    # always, or under conditions not modelled here: basic.py:3502, 9346; rec.py:5222, 8600, 9045, 10811;
    # signal_processing.py:109, 566, 1227, 1265; prefix_in_time and split_batch_beam name a dim after another layer
    **dict.fromkeys(
        "range_from_length shift_axis rnn_cell kenlm optimal_completions twod_lstm batch_median_pooling "
        "split_concatenated_multichannel tile_features multichannel_multiresolution_stft_layer multichannel_stft_layer "
        "prefix_in_time split_batch_beam".split(),
        _always,
    ),
}

#: The classes whose dim names name another layer than their own (prefix_in_time: its repeat layer's; split_batch_beam:
#: its beam's choice layer, by path): they make every name count.
NAMES_OTHERS = frozenset({"prefix_in_time", "split_batch_beam"})


def names_dims(desc: dict) -> bool:
    """Whether a layer (its options ``desc``) may make a dim described by its name: by its class, or through the
    Data LayerBase makes from ``n_out`` without ``out_dim`` (``"%s:feature-dense"``) or from an ``out_type``
    (``"feature:<name>_output"``, ``"<name>_output:sparse-dim"``, base.py:411-517). Not where an out_shape of given dims
    holds: a layer's named dims reach other layers only through its output, and the check refuses an output with a
    dim it does not list (a dim of a description is equal to no given one)."""
    naming = CLASSES.get(desc["class"])
    generic = "out_type" in desc or ("n_out" in desc and desc["n_out"] is not None and not _dim(desc.get("out_dim")))
    if not generic and (naming is None or not naming(desc)):
        return False
    out_shape = desc.get("out_shape")  # the output has these dims and no other (verify_out_shape): none it named
    return not (isinstance(out_shape, (set, frozenset)) and all(type(dim) in _DIMS for dim in out_shape))

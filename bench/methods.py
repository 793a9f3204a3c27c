"""The compared ways to get a returnn_common model into a hashed, pickled and written i6_core ReturnnConfig.

Each method runs the same four steps on fresh objects: make the config (ours: build the serializer; the proxy way:
transform the dicts; V2: construct), hash it as a job would (``sis_hash_helper``), pickle it (as the manager does
with jobs) and write the config file. The lower bounds do the cheapest thing one could do with the raw dict at all.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import os
import pickle
import time
from typing import Any, Callable

from .models import Model
from .timing import Rep

STEPS = ("construct", "sis_hash", "pickle", "write")
LOWER_BOUND_STEPS = ("pickle", "repr", "deepcopy")

#: The hyperparameters around the model, the same for every method (a small part of a real config).
HYPER: dict[str, Any] = {
    "learning_rate": 1e-3,
    "batch_size": 10_000,
    "max_seqs": 200,
    "num_epochs": 100,
    "optimizer": {"class": "adam", "epsilon": 1e-8},
}

#: The import line the i6 helpers put in front of ``py_code_str()`` (see :func:`serialize_dim_tags_like_i6`).
PROXY_IMPORTS = "from returnn.tf.util.data import Dim, batch_dim, single_step_dim, SpatialDim, FeatureDim\n\n"

Method = Callable[[Rep], None]


def _digest(sis_hash_bytes: bytes) -> str:
    return hashlib.sha256(sis_hash_bytes).hexdigest()[:16]


def _new_files(path: str) -> Callable[[], str]:
    """A new file name next to ``path`` for each repetition, the last one's file removed: a job writes its config
    once, into a new job directory, so replacing or truncating an existing file is a cost no job pays."""
    count = itertools.count()
    last: list[str] = []

    def new_file() -> str:
        if last and os.path.exists(last[0]):
            os.unlink(last[0])
        root, ext = os.path.splitext(path)
        last[:] = [f"{root}-{next(count)}{ext}"]
        return last[0]

    return new_file


def ours(model: Model, path: str, details: bool = True) -> Method:
    """i6_rc_jobs: ReturnnCommonSerializer in python_prolog, ``write_config_file`` (writes atomically; the compile
    check CreateConfigJob adds is timed apart, as a fact).
    ``details=False`` skips the untimed facts (one more rendering), so that a profile shows only the four steps."""
    from i6_core.returnn.config import ReturnnConfig
    from sisyphus.hash import sis_hash_helper

    from i6_rc_jobs import ReturnnCommonSerializer
    from i6_rc_jobs.jobs.config_file import write_config_file

    new_file = _new_files(path)

    def run(rep: Rep) -> None:
        path = new_file()
        with rep.step("construct"):
            serializer = ReturnnCommonSerializer(extern_data=model.extern_data, network=model.network)
        config = ReturnnConfig(copy.deepcopy(HYPER), python_prolog=[serializer], black_formatting=False)
        with rep.step("sis_hash"):
            h = sis_hash_helper(config)
        with rep.step("pickle"):
            data = pickle.dumps(config)
        with rep.step("write"):
            write_config_file(config, path, compile_check=False)
        # CreateConfigJob also compiles the file before it lands (a validation, not writing): reported on its own.
        with open(path) as f:
            code = f.read()
        start = time.perf_counter()
        compile(code, path, "exec")
        compile_ms = (time.perf_counter() - start) * 1000
        rep.facts.update(
            hash=_digest(h), pickle_bytes=len(data), code_bytes=os.path.getsize(path), compile_check_ms=compile_ms
        )
        if details:
            rep.facts["dims_written"] = len(serializer.dim_names())

    return run


def _proxies_to_code(value: Any) -> Any:
    """Proxy values become CodeWrapper of their code. Keys are left alone, as in the recipes, so proxies used as dict
    keys stay in the config (and take the whole ReturnnDimTagsProxy with them into the pickle)."""
    from i6_core.returnn.config import CodeWrapper
    from returnn_common.nn.naming import ReturnnDimTagsProxy

    if isinstance(value, (ReturnnDimTagsProxy.DimRefProxy, ReturnnDimTagsProxy.SetProxy)):
        return CodeWrapper(str(value))
    if isinstance(value, dict):
        return {key: _proxies_to_code(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)([_proxies_to_code(v) for v in value])
    return value


def serialize_dim_tags_like_i6(config: Any) -> Any:
    """What i6 setups do with returnn_common dims in a ReturnnConfig (the ``serialize_dim_tags`` helper of
    rwth-i6/i6_experiments ``users/berger/helpers/returnn.py``, itself taken from ``users/vieting``), rewritten here:
    transform ``config.config`` with ReturnnDimTagsProxy, replace the proxies in network and extern_data by
    CodeWrapper and append import line + ``py_code_str()`` to python_prolog, on the already constructed config
    (so ``python_prolog_hash`` keeps its old value, as in the recipes)."""
    from returnn_common.nn.naming import ReturnnDimTagsProxy

    proxy = ReturnnDimTagsProxy()
    transformed = proxy.collect_dim_tags_and_transform_config(config.config)
    code = proxy.py_code_str()
    if code:
        for key in ("network", "extern_data"):
            if key in config.config:
                config.config[key] = _proxies_to_code(transformed[key])
        prolog = PROXY_IMPORTS + code
        if config.python_prolog is None:
            config.python_prolog = prolog
        elif isinstance(config.python_prolog, str):
            config.python_prolog += "\n" + prolog
        elif isinstance(config.python_prolog, list):
            config.python_prolog.append(prolog)
        else:
            raise NotImplementedError(type(config.python_prolog))
    return proxy


def _count_proxy_keys(value: Any) -> int:
    """Proxies left as dict keys (the helper only replaces values)."""
    from returnn_common.nn.naming import ReturnnDimTagsProxy

    if isinstance(value, dict):
        own = sum(isinstance(key, ReturnnDimTagsProxy.DimRefProxy) for key in value)
        return own + sum(_count_proxy_keys(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_count_proxy_keys(v) for v in value)
    return 0


def proxy_way(model: Model, path: str) -> Method:
    """returnn_common's ReturnnDimTagsProxy + i6_core CodeWrapper in a classic ReturnnConfig, written by i6_core."""
    from i6_core.returnn.config import ReturnnConfig
    from sisyphus.hash import sis_hash_helper

    new_file = _new_files(path)

    def run(rep: Rep) -> None:
        path = new_file()
        config = ReturnnConfig(
            dict(copy.deepcopy(HYPER), extern_data=model.extern_data, network=model.network), black_formatting=False
        )
        with rep.step("construct"):
            proxy = serialize_dim_tags_like_i6(config)
        with rep.step("sis_hash"):
            h = sis_hash_helper(config)
        with rep.step("pickle"):
            data = pickle.dumps(config)
        with rep.step("write"):
            config.write(path)
        rep.facts.update(
            hash=_digest(h),
            pickle_bytes=len(data),
            code_bytes=os.path.getsize(path),
            dims_written=len(proxy.dim_refs_by_name),
            proxy_keys_left=_count_proxy_keys(config.config),
        )

    return run


def returnn_config_v2(model: Model, path: str) -> Method:
    """i6_core ReturnnConfigV2: the raw dicts with the real dims, written by i6_core's serialization_v2."""
    from i6_core.returnn.config import ReturnnConfigV2
    from sisyphus.hash import sis_hash_helper

    new_file = _new_files(path)

    def run(rep: Rep) -> None:
        path = new_file()
        with rep.step("construct"):
            config = ReturnnConfigV2(
                dict(copy.deepcopy(HYPER), extern_data=model.extern_data, network=model.network),
                black_formatting=False,
            )
        with rep.step("sis_hash"):
            h = sis_hash_helper(config)
        with rep.step("pickle"):
            data = pickle.dumps(config)
        rep.facts.update(hash=_digest(h), pickle_bytes=len(data))
        with rep.step("write"):
            config.write(path)
        rep.facts["code_bytes"] = os.path.getsize(path)

    return run


def lower_bounds(model: Model) -> Method:
    """The raw dicts (real dims included) through pickle.dumps, repr and copy.deepcopy: no method can be expected
    to hash and write a dict faster than Python walks it once."""

    def run(rep: Rep) -> None:
        raw = model.raw
        with rep.step("pickle"):
            data = pickle.dumps(raw)
        with rep.step("repr"):
            text = repr(raw)
        with rep.step("deepcopy"):
            copy.deepcopy(raw)
        rep.facts.update(pickle_bytes=len(data), repr_chars=len(text))

    return run


#: name -> (factory(model, path), printed label)
METHODS: dict[str, tuple[Callable[[Model, str], Method], str]] = {
    "ours": (ours, "ours (ReturnnCommonSerializer)"),
    "proxy": (proxy_way, "proxy + CodeWrapper"),
    "v2": (returnn_config_v2, "i6_core ReturnnConfigV2"),
}

"""Why two objects hash differently in Sisyphus, as paths and values: hash-diff's engine.

It descends only where Sisyphus's own hash bytes differ, so what it reports is exactly what makes the hashes
differ; inside a ReturnnCommonSerializer it compares canonical forms, so dims show as ``dim#7 feature 2048``."""

from __future__ import annotations

from typing import Any, Iterator

from i6_core.returnn.config import ReturnnConfig
from sisyphus import tools
from sisyphus.hash import sis_hash_helper
from sisyphus.job import Job
from sisyphus.job_path import AbstractPath

from ..serialization.serialized_net import SerializedNet
from .canonical import Canonicalizer, DimToken, Tagged
from .sis_hash import canonical_form


def explain(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Lines ``path: value in A -> value in B`` for each smallest part whose hash differs; nothing if equal."""
    if sis_hash_helper(a) == sis_hash_helper(b):
        return
    if type(a) is not type(b):
        yield f"{path.rstrip('.')}: {_short(a)} -> {_short(b)}"
    elif isinstance(a, SerializedNet) and a.hash_value is not None and b.hash_value is not None:
        yield from explain(a.hash_value, b.hash_value, _join(path, "hash_value."))
    elif isinstance(a, SerializedNet) and (a.hash_value is not None or b.hash_value is not None):
        how = ("its dicts", "hash_value") if a.hash_value is None else ("hash_value", "its dicts")
        yield f"{_join(path, 'hash_value')}: {a.hash_value!r} -> {b.hash_value!r} (hashed by {how[0]} -> by {how[1]})"
    elif isinstance(a, SerializedNet):
        if a.unhashed != b.unhashed:
            yield f"{_join(path, 'unhashed')}: {sorted(a.unhashed)} -> {sorted(b.unhashed)}"
        (canon_a, form_a), (canon_b, form_b) = canonical_form(a), canonical_form(b)
        for name in sorted(set(form_a) | set(form_b)):
            missing = "(not hashed)"
            yield from _diff_forms(form_a.get(name, missing), form_b.get(name, missing), canon_a, canon_b, path + name)
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
        yield f"{path.rstrip('.')}: {_short(a)} -> {_short(b)}"


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


def _diff_dicts(a: dict, b: dict, path: str, recurse) -> Iterator[str]:
    for key in sorted(set(a) | set(b), key=repr):
        step = f"{path.rstrip('.')}[{key!r}]"
        if key not in b:
            yield f"{step}: {_short(a[key])} -> (missing)"
        elif key not in a:
            yield f"{step}: (missing) -> {_short(b[key])}"
        else:
            yield from recurse(a[key], b[key], step)


def _diff_forms(a: Any, b: Any, canon_a: Canonicalizer, canon_b: Canonicalizer, path: str) -> Iterator[str]:
    """Differences of two canonical forms; dims are shown with their full definitions."""
    if type(a) is not type(b):
        yield f"{path}: {_form(a, canon_a)} -> {_form(b, canon_b)}"
    elif type(a) is dict:
        yield from _diff_dicts(a, b, path, lambda x, y, p: _diff_forms(x, y, canon_a, canon_b, p))
    elif type(a) in (list, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _diff_forms(x, y, canon_a, canon_b, f"{path}[{i}]")
    elif type(a) is Tagged and len(a) == len(b) and a[0] == b[0]:
        for i, (x, y) in enumerate(zip(a[1:], b[1:])):
            yield from _diff_forms(x, y, canon_a, canon_b, f"{path}[{i}]")
    elif type(a) is DimToken:
        if a.text != b.text:  # a changed dim differs where it first occurs; elsewhere only if the sharing changed
            yield f"{path}: {canon_a.describe_dim(a.index)} -> {canon_b.describe_dim(b.index)}"
    elif repr(a) != repr(b):
        yield f"{path}: {_form(a, canon_a)} -> {_form(b, canon_b)}"


def _form(value: Any, canon: Canonicalizer) -> str:
    return canon.describe_dim(value.index) if type(value) is DimToken else _short(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."

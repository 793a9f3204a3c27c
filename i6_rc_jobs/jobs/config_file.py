"""Writing an i6_core ReturnnConfig to a config file: compiled before it lands, atomically, the config untouched."""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterator, Optional, assert_never

from i6_core.returnn.config import CodeWrapper, ReturnnConfig, ReturnnConfigV2, unparse_python
from sisyphus.delayed_ops import DelayedBase

from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._serialization.errors import SerializationError, describe
from i6_rc_jobs._serialization.job_config import job_config
from i6_rc_jobs._serialization.pycode import BUILTINS_CALLED
from i6_rc_jobs._serialization.refs import DimRef
from i6_rc_jobs._serialization.serialized_code import SerializedCode
from i6_rc_jobs._serialization.kinds import LEAF_TYPES, is_raw_dim, kind_of
from i6_rc_jobs._serialization.values import key_step
from i6_rc_jobs.jobs.module_paths import check_importable


def serializers_in(returnn_config: ReturnnConfig) -> Iterator[SerializedCode]:
    """The serializers in the config's python_prolog and python_epilog, which may nest them in lists and dicts."""
    yield from _serializers(returnn_config.python_prolog)
    yield from _serializers(returnn_config.python_epilog)


def _serializers(item: Any) -> Iterator[SerializedCode]:
    stack: list[Any] = [item]
    while stack:
        item = stack.pop()
        if isinstance(item, SerializedCode):
            yield item
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))


def backend_of(returnn_config: ReturnnConfig) -> Optional[str]:
    """The ``backend`` the config sets: in its config or post_config, or as a value of a serializer in its prolog."""
    for values in (returnn_config.config, returnn_config.post_config):
        if "backend" in values:
            return values["backend"]
    for serializer in _serializers(returnn_config.python_prolog):
        backend = dict(serializer.sections()).get("backend")
        if backend is not None:
            return backend
    return None


def config_code(returnn_config: ReturnnConfig) -> str:
    """The config file's text, as i6_core writes it, with each serializer rendered once and checked against the
    config (see :func:`check_config`). Works on a copy: i6_core merges post_config into config while writing and
    resolves delayed values in place, which would change the config's hash in the manager."""
    rendered: dict[int, str] = {}
    check_config(returnn_config, rendered)
    to_write = copy.copy(returnn_config)
    to_write.config = copy.deepcopy(returnn_config.config)
    to_write.post_config = copy.deepcopy(returnn_config.post_config)
    to_write.python_prolog = _map_leaves(returnn_config.python_prolog, lambda x: rendered.get(id(x), x))
    to_write.python_epilog = _map_leaves(returnn_config.python_epilog, lambda x: rendered.get(id(x), x))
    return (ReturnnConfigV2 if _writes_values(returnn_config) else ReturnnConfig)._serialize(to_write)


def _writes_values(returnn_config: ReturnnConfig) -> bool:
    """Whether i6_core's serialization_v2 writes the config's values (a ``ReturnnConfigV2``: raw dims, functions,
    ``by_content`` markers), not their reprs."""
    return isinstance(returnn_config, ReturnnConfigV2) and not isinstance(returnn_config, CheckedReturnnConfig)


def check_config(returnn_config: ReturnnConfig, rendered: Optional[dict[int, str]] = None) -> None:
    """Every check of writing, run when a job is made too (CreateConfigJob, CheckedReturnnConfig), so that a mistake
    is said in the manager and not in a worker: the config's keys must not rebind what a serializer defines or
    calls (they are set after the prolog, so they win), its values may hold DimRefs only of dims a prolog serializer
    defines (a DimRef is written as its name) and no serializer (written as a string), and its behavior_version
    must be one the serializers' dicts need. ``rendered``, if given, gets each serializer's code, by its id (else
    only the names are needed, which a closed serializer keeps)."""
    if returnn_config.staged_network_dict:
        raise SerializationError(
            "i6_core's staged_network_dict writes extra files next to the config: "
            "use ReturnnCommonSerializer(staged_networks=...), which writes get_network into the config itself"
        ).at("returnn_config.staged_network_dict")
    keys = set(returnn_config.config) | set(returnn_config.post_config)
    bound: dict[str, Optional[str]] = {}  # by the serializers before: name -> None (defined) or what it imports
    seen: set[int] = set()
    in_prolog = {id(serializer) for serializer in _serializers(returnn_config.python_prolog)}
    before_config: tuple[set[str], dict[str, DimRef]] = (set(), {})  # names and dims bound when the config's run
    needed: list[int] = []  # behavior versions the serializers need
    for serializer in serializers_in(returnn_config):
        if id(serializer) in seen:
            continue
        seen.add(id(serializer))
        if rendered is None:
            names, dims = serializer.names_and_dims()
        else:
            rendered[id(serializer)], names, dims = serializer.code_and_names()
        for taken, what in (
            (names, "are also defined by {} (as dims, imports or its dicts)"),
            (BUILTINS_CALLED, "would replace the builtins the code of {} calls"),
        ):
            clash = keys.intersection(taken)
            if clash:  # the message only now: a serializer's repr walks its dicts
                raise SerializationError(
                    f"config keys {sorted(clash)} {what.format(repr(serializer))}: remove or rename them"
                ).at("returnn_config.config")
        twice = [name for name, source in names.items() if name in bound and (source is None or bound[name] != source)]
        if twice:
            raise SerializationError(
                f"{sorted(twice)} are defined by two serializers, the later one would replace the other's (dims: put "
                f"extern_data and the network(s) into one ReturnnCommonSerializer, so that they share them)"
            ).at("returnn_config.python_prolog/python_epilog")
        bound.update(names)
        if id(serializer) in in_prolog:
            before_config[0].update(names)
            before_config[1].update(dims)
        if serializer.min_behavior_version is not None:
            needed.append(serializer.min_behavior_version)
    torch = backend_of(returnn_config) == "torch"
    for part in ("config", "post_config") if not _writes_values(returnn_config) else ():
        _check_values(getattr(returnn_config, part), f"returnn_config.{part}", *before_config, torch=torch)
    if needed:
        _check_behavior_version(returnn_config, max(needed))


def _check_behavior_version(returnn_config: ReturnnConfig, needed: int) -> None:
    """returnn_common builds its dicts for its ``nn.min_returnn_behavior_version``; RETURNN without it (version 0)
    fails deep inside some layer (e.g. an AssertionError in ``dot``), far from the cause."""
    part = "config" if "behavior_version" in returnn_config.config else "post_config"
    given = getattr(returnn_config, part).get("behavior_version")
    fix = f'"behavior_version": nn.min_returnn_behavior_version ({needed}) in the config'
    if given is None:
        raise SerializationError(
            f"missing: returnn_common's net dicts need RETURNN's behavior_version {needed} or higher, without it "
            f"RETURNN fails inside a layer: add {fix}"
        ).at("returnn_config.config['behavior_version']")
    if type(given) is int and given < needed:
        raise SerializationError(
            f"{given} is lower than the {needed} that returnn_common's net dicts need: set {fix}"
        ).at(f"returnn_config.{part}['behavior_version']")


def _check_values(values: dict[str, Any], root: str, names: set[str], dims: dict[str, DimRef], *, torch: bool) -> None:
    """Refuses, in the config's values, what i6_core would write wrongly: a serializer (written as its code, a
    string), a DimRef that the name it is written as does not give back when the config's lines run (no prolog
    serializer defines that name, or defines another dim by it, e.g. another serializer's dim of another size), a
    value whose repr is no Python code (a raw RETURNN Dim; ``torch``: of a PyTorch config, whose fix differs)."""
    stack: list[tuple[Any, str]] = [(value, root + key_step(key)) for key, value in values.items()]
    while stack:
        value, path = stack.pop()
        if type(value) in LEAF_TYPES:
            continue
        kind = kind_of(value)
        match kind:
            case "marked_ref":
                if value.marker not in names:
                    raise SerializationError(
                        f"{value.code} is written by name, but no prolog serializer imports it"
                    ).at(path)
                stack.append((value.dim, path))
            case "dim_ref":
                own = dims.get(value.name)
                if own is None or not _same_dim(own, value):
                    problem = (
                        "no prolog serializer defines it"
                        if own is None
                        else f"a prolog serializer defines {own.definition()} by it"
                    )
                    raise SerializationError(
                        f"the dim {value.definition() or value.name} is written by its name {value.name!r}, but "
                        f"{problem}: use a DimRef of the serializer in python_prolog"
                    ).at(path)
            case "dict" | "dict_subclass":
                stack.extend((item, path + key_step(key)) for key, item in value.items())
                stack.extend((key, path + key_step(key)) for key in value)
            case "list" | "tuple" | "namedtuple" | "partial_ref" | "named_ref" | "content_ref":
                stack.extend((item, f"{path}[{i}]") for i, item in enumerate(value))
            case "set" | "frozenset":
                stack.extend((item, f"{path}{{{describe(item)}}}") for item in value)
            case "delayed" | "i6_core_object":  # (a Sisyphus value: i6_core writes its value)
                if isinstance(value, SerializedCode):
                    raise SerializationError(
                        f"{value!r} as a config value is written as a string: put it into python_prolog"
                    ).at(path)
            case (
                "str"
                | "int"
                | "float"
                | "plain"
                | "complex"
                | "wrapper"
                | "numpy"
                | "imported"
                | "raw_dim"
                | "raw_marked_dim"
                | "partial"
                | "module"
                | "content_owner"
                | "other"
            ):
                _check_written(value, path, torch)
            case _:
                assert_never(kind)


def _check_written(value: Any, path: str, torch: bool) -> None:
    """i6_core writes a config value by its repr (pprint, or json if the repr starts with ``<``): one that is no
    Python expression (a raw RETURNN Dim is ``Dim{B}``) would fail only in the worker, with a SyntaxError of the
    config, and the job with the fixed config would hash as the failed one. The repr is compiled as an expression
    inside brackets, where i6_core writes it in a container (a CodeWrapper's code may span lines, or end in a
    comment); a CodeWrapper of a Sisyphus value may not be computed yet."""
    if isinstance(value, CodeWrapper) and isinstance(value.code, DelayedBase):
        return
    try:
        compile(f"(\n{value!r}\n)", path, "eval")
    except Exception:  # a SyntaxError, or a repr that fails: the worker could not write or load it either
        if not is_raw_dim(value):
            fix = "use a plain value, or a CodeWrapper of the code that makes it"
        elif torch:
            fix = (
                "put the values with dims (extern_data, model_outputs, get_model, ...) into a ReturnnConfigSerializer "
                "in python_prolog, which writes dims as code (a ReturnnCommonSerializer is for net dicts)"
            )
        else:
            fix = (
                "put the network into a ReturnnCommonSerializer in python_prolog, which writes dims as code (or use "
                "its DimRefs)"
            )
        raise SerializationError(f"{describe(value)} is written as its repr, which is no Python code: {fix}").at(
            path
        ) from None


def _same_dim(a: DimRef, b: DimRef) -> bool:
    """Whether the code that defines ``a`` defines ``b`` (also what it is made from)."""
    if a is b:
        return True
    deps_a, deps_b = a.dependencies(), b.dependencies()
    return (
        a.definition() == b.definition()
        and len(deps_a) == len(deps_b)
        and all(_same_dim(x, y) for x, y in zip(deps_a, deps_b))
    )


def _map_leaves(item: Any, change: Callable[[Any], Any]) -> Any:
    """The prolog or epilog structure with ``change`` applied to each item that is no list, tuple or dict."""
    if isinstance(item, (list, tuple)):
        return type(item)(_map_leaves(x, change) for x in item)
    if isinstance(item, dict):
        return {k: _map_leaves(v, change) for k, v in item.items()}
    return change(item)


class CheckedReturnnConfig(ReturnnConfig):
    """An i6_core ``ReturnnConfig`` that writes itself as :func:`config_code` does, with its checks, whoever writes
    it (and checks itself when made, so that a mistake is said in the manager): i6_core's jobs (``ReturnnTrainingJob.create_files``, ...) call ``write``, which calls ``_serialize``. (A
    plain ReturnnConfig asks a serializer only for its code, so nothing can check it against the config around it.)
    It hashes as a plain ReturnnConfig; with ``hash_full_python_code=True``, which i6_core refuses for a serializer
    (a Sisyphus DelayedBase), each serializer is hashed by its own hash and the rest of the code as i6_core does."""

    def __init__(self, config: dict, *args: Any, hash_full_python_code: bool = False, **kwargs: Any):
        if hash_full_python_code:
            for part in ("python_prolog", "python_epilog"):
                code = kwargs.get(part)
                if kwargs.get(f"{part}_hash") is None and any(True for _ in _serializers(code)):
                    kwargs[f"{part}_hash"] = _map_leaves(
                        code,
                        lambda x: (
                            x if isinstance(x, SerializedCode) else unparse_python(x, allow_delayed_objects=False)
                        ),
                    )
        super().__init__(config, *args, hash_full_python_code=hash_full_python_code, **kwargs)
        check_config(self)
        check_importable(serializers_in(self))

    def _serialize(self) -> str:
        with job_config([*self.config.items(), *self.post_config.items()]):
            return config_code(self)

    def _sis_hash(self) -> bytes:
        """i6_core's hash; the ``by_content`` values of its serializers hash by their code as built with this
        config's options (RETURNN merges ``post_config`` in), which their construction may read."""
        with job_config([*self.config.items(), *self.post_config.items()]):
            return super()._sis_hash()


def write_config_file(returnn_config: ReturnnConfig, path: str, *, compile_check: bool = True) -> None:
    """Puts the file in place atomically and durably (see :func:`write_atomically`), by default after compiling it,
    so that a syntax error (e.g. in a python_prolog string) names its line and nothing is written."""
    code = config_code(returnn_config)
    if compile_check:
        compile(code, path, "exec")
    write_atomically(path, code.encode("utf-8"))

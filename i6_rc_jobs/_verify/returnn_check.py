"""
Check that a written RETURNN config really builds: load it with RETURNN's own config loader and construct the
TF network of every stage, the way RETURNN's TF engine builds its train network.

A config can be correct Python and still fail in RETURNN (a dim that lost its identity, a renamed dim-math op,
a layer option that no longer exists). Such errors show up only when RETURNN constructs the network, so this
catches them in seconds in the manager or a test, instead of minutes into a cluster job.

Usage: ``python -m i6_rc_jobs._verify.returnn_check CONFIG [--epochs 1 5 10]``, or ``python .../returnn_check.py ...`` in a
Python with RETURNN but without i6_rc_jobs (it imports nothing of the package).

TensorFlow is imported only inside the functions, so importing this module (and i6_rc_jobs) stays light.
Set ``CUDA_VISIBLE_DEVICES=""`` in the environment on machines with nvcc but without a GPU,
otherwise RETURNN tries to compile its native ops with CUDA (RETURNN before 2026-01-02 needs ``DISABLE_CUDA=1``).

The CLI refuses a RETURNN older than :data:`OLDEST_RETURNN` in one line, before it loads anything.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import tempfile
import types
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

if TYPE_CHECKING:
    from returnn.config import Config
    from returnn.tf.network import TFNetwork

__all__ = [
    "OLDEST_RETURNN",
    "NetworkCheckError",
    "construct_networks",
    "construct_networks_from_config",
    "network_in_new_graph",
    "say_stale_locks",
    "stale_locks",
    "unsupported_returnn",
    "link_host_compiler_flags_with_gcc",
    "main",
]

#: The oldest RETURNN that written configs and this check support: the commit date as RETURNN's version string has it
#: (``1.YYYYMMDD.HHMMSS``), and how to name it. Older ones fail for want of what came with it: RandomLayer, which
#: initializes every returnn_common parameter, asserted TensorFlow <= 2.11 (no Python 3.11 has one) until this commit;
#: ``BehaviorVersion._get_state`` (used below) came on 2023-09-19, ``returnn.tensor`` (the configs import it) on
#: 2023-02-24.
OLDEST_RETURNN = (20240111, "2024-01-11 (ebea0fa34)")
#: RETURNN's behavior version 20 came on 2024-01-05: for a RETURNN whose version string has no date (a copy without
#: .git and without PKG-INFO says ``1.0.0``), the closest feature check of that date.
_OLDEST_BEHAVIOR_VERSION = 20


class NetworkCheckError(Exception):
    """RETURNN could not load the config or construct one of its networks; says where and why."""

    def __init__(
        self, problem: str, *, config_file: str, epoch: Optional[int] = None, layer_name: Optional[str] = None
    ):
        where = config_file + (f", epoch {epoch}" if epoch is not None else "")
        where += f", layer {layer_name!r}" if layer_name else ""
        super().__init__(f"{where}: {problem}")
        self.config_file = config_file
        self.epoch = epoch
        self.layer_name = layer_name


def construct_networks(
    config_file: str, epochs: Sequence[int] = (1,), *, quiet: bool = False, as_rnn_py: bool = False
) -> dict[int, list[str]]:
    """
    Loads ``config_file`` with RETURNN's config loader and constructs its networks, see
    :func:`construct_networks_from_config`. A config that cannot even be loaded raises :class:`NetworkCheckError`.

    :param as_rnn_py: load it as ``rnn.py`` does for training, in a process of its own (the CLI, the check of
        CreateConfigJob): RETURNN's ``init_config`` (which also sets the process's behavior version, once) and then
        the backend RETURNN selects from the config, without a default, so that a config training would refuse
        (e.g. without ``use_tensorflow``: "No backend defined") fails here too
    """
    from returnn.config import Config

    try:
        with _maybe_quiet(quiet):
            if as_rnn_py:
                import returnn.__main__ as rnn

                rnn.init_config(config_filename=config_file)
                config = rnn.config
            else:
                config = Config()
                config.load_file(config_file)
    except Exception as exc:
        loader = "rnn.py" if as_rnn_py else "RETURNN"
        raise NetworkCheckError(
            f"{loader} cannot load the config: {type(exc).__name__}: {exc}", config_file=config_file
        ) from exc
    if as_rnn_py:
        _select_backend(config, config_file)
    return construct_networks_from_config(config, epochs, config_file=config_file, quiet=quiet)


def _select_backend(config: Config, config_file: str) -> None:
    """The backend, as rnn.py selects it (``BackendEngine.select_engine`` without a default)."""
    from returnn.util.basic import BackendEngine

    try:
        BackendEngine.select_engine(config=config)
    except Exception as exc:
        torch_keys = _torch_keys(config)
        fix = (
            f"a PyTorch config (it has {', '.join(torch_keys)}) needs 'backend': 'torch' in the config"
            if torch_keys
            else "a net dict needs 'use_tensorflow': True or 'backend': 'tensorflow-net-dict' in the config"
        )
        raise NetworkCheckError(
            f"rnn.py selects no backend: {type(exc).__name__}: {exc} ({fix})", config_file=config_file
        ) from exc


def _torch_keys(config: Config) -> list[str]:
    """The keys by which ``config`` is a PyTorch or RETURNN-frontend config, not a net dict's: so that its failures
    give torch advice."""
    return [key for key in ("get_model", "train_step", "forward_step") if config.typed_dict.get(key) is not None]


def construct_networks_from_config(
    config: Config, epochs: Sequence[int] = (1,), *, config_file: Optional[str] = None, quiet: bool = False
) -> dict[int, list[str]]:
    """
    Constructs the TF network of every stage of ``config``, each in a fresh graph, with train flag True and search
    flag False, as RETURNN's engine does for training.

    The net dict per epoch is chosen like ``returnn.tf.engine.Engine.get_net_dict_for_epoch``: pretrain (if
    configured and the epoch is a pretrain epoch), else ``get_network(epoch=epoch)``, else ``network``.
    A static ``network`` (no pretrain, no ``get_network``) is the same for every epoch, so it is constructed once
    and reported under the first of ``epochs``.

    As in any RETURNN run, construction attaches TF tensors of its graph to the Dim objects of the config (e.g. the
    sizes of dynamic dims), after which they no longer pickle. Configs loaded from a file get fresh dims on every
    load; dicts built in-process that are also to be serialized should be built afresh for that.

    :param config: a loaded RETURNN config (also usable with dicts made in-process, e.g. via ``config.update``)
    :param epochs: the epochs to check (for ``get_network``/pretrain configs)
    :param config_file: for error messages; defaults to the first file the config was loaded from
    :param quiet: swallow what RETURNN prints on stdout while constructing (when its log is not initialized)
    :return: per constructed epoch, the sorted names of all constructed layers, sub-layers as ``parent/child``
    :raises NetworkCheckError: naming the config file, the epoch and the first failing layer
    """
    from returnn.pretrain import pretrain_from_config

    if config_file is None:
        config_file = config.files[0] if config.files else "<in-memory config>"
    if not epochs:
        raise ValueError("epochs must not be empty")
    epochs = [int(ep) for ep in epochs]
    get_network = config.typed_value("get_network")
    pretrain = pretrain_from_config(config)
    if not get_network and not pretrain:
        if not (config.has("network") and config.is_typed("network")):
            torch_keys = _torch_keys(config)
            fix = f": a PyTorch config (it has {', '.join(torch_keys)}) needs 'backend': 'torch'" if torch_keys else ""
            raise NetworkCheckError(
                f"the config defines neither `network` nor `get_network`{fix}", config_file=config_file
            )
        epochs = epochs[:1]

    backend = config.value("backend", None)
    if backend not in (None, "tensorflow", "tensorflow-net-dict"):
        raise NetworkCheckError(
            f"backend {backend!r}: only TensorFlow net-dict configs can be checked", config_file=config_file
        )

    result = {}
    for epoch in epochs:
        try:
            if pretrain and epoch <= pretrain.get_train_num_epochs():
                net_dict = pretrain.get_network_json_for_epoch(epoch)
            elif get_network:
                net_dict = get_network(epoch=epoch)
            elif pretrain:
                net_dict = pretrain.get_final_network_json()
            else:
                net_dict = config.typed_value("network")
        except Exception as exc:
            raise NetworkCheckError(
                f"getting the net dict failed: {type(exc).__name__}: {exc}", config_file=config_file, epoch=epoch
            ) from exc
        if not isinstance(net_dict, dict) or not net_dict:
            raise NetworkCheckError(
                f"the network is not a non-empty dict but {type(net_dict).__name__}",
                config_file=config_file,
                epoch=epoch,
            )
        try:
            with _maybe_quiet(quiet), network_in_new_graph(config, net_dict, train_flag=True, rnd_seed=epoch) as net:
                result[epoch] = _layer_names(net)
        except Exception as exc:
            layer_name = _failing_layer_name(exc)
            unnamed = "" if layer_name else "no layer identified: "
            raise NetworkCheckError(
                f"{unnamed}{type(exc).__name__}: {exc}", config_file=config_file, epoch=epoch, layer_name=layer_name
            ) from exc
    return result


@contextlib.contextmanager
def network_in_new_graph(
    config: Config, net_dict: dict[str, Any], *, train_flag: Union[bool, str], rnd_seed: int = 1, search: bool = False
) -> Iterator[TFNetwork]:
    """
    Constructs ``net_dict`` in a fresh TF graph, as ``returnn.tf.engine.Engine._init_network`` does (eval flag on,
    search flag off; ``search``: search flag on and eval flag off, as RETURNN's engine builds a net for recognition),
    with the config's behavior version. While the caller's ``with`` block runs, that graph is the
    default graph and ``config`` the global config, so the caller can run the network in a session.
    ``train_flag="dynamic"``: RETURNN's global train flag placeholder, as its engine trains (feed it True or False).
    """
    import tensorflow as tf
    from returnn.config import global_config_ctx
    from returnn.tf.network import ExternData, TFNetwork
    from returnn.util.basic import BackendEngine

    # A backend must be selected (rnn.py does it from the config). It is a process-wide choice, so like
    # returnn.tf.engine.Engine.__init__, only make it when nothing is selected yet.
    if BackendEngine.selected_engine is None:
        BackendEngine.select_engine(default_fallback_engine=BackendEngine.TensorFlowNetDict, config=config)
    with behavior_version(config.int("behavior_version", None)):
        with tf.compat.v1.Graph().as_default(), global_config_ctx(config):
            tf.compat.v1.set_random_seed(42)
            extern_data = ExternData()
            extern_data.init_from_config(config=config, auto_create_placeholders=True)
            if train_flag == "dynamic":
                from returnn.tf.util.basic import get_global_train_flag_placeholder

                train_flag = get_global_train_flag_placeholder()
            network = TFNetwork(
                name="",
                config=config,
                extern_data=extern_data,
                rnd_seed=rnd_seed,
                train_flag=train_flag,
                eval_flag=not search,
                search_flag=search,
            )
            network.construct_from_dict(net_dict)
            yield network


@contextlib.contextmanager
def behavior_version(version: Optional[int]) -> Iterator[None]:
    """
    RETURNN's behavior version of ``config`` while constructing, the previous global state afterwards.

    ``BehaviorVersion.set()`` refuses to change a version once set (rnn.py sets it once per process; returnn_common
    sets its own while building), but every config may have its own. ``_get_state``/``_reset`` are what RETURNN's
    own tests use for this. ``_reset(state)`` alone leaves the version-dependent global switches reset (e.g. the
    simple Dim equality of behavior_version >= 16), so ``_handle_new_min_version`` re-applies them.
    """
    from returnn.util.basic import BehaviorVersion

    # noinspection PyProtectedMember
    prev_state = BehaviorVersion._get_state()
    # noinspection PyProtectedMember
    BehaviorVersion._reset()
    try:
        BehaviorVersion.set(version)
        yield
    finally:
        # noinspection PyProtectedMember
        BehaviorVersion._reset(prev_state)
        # noinspection PyProtectedMember
        BehaviorVersion._handle_new_min_version()


def _layer_names(network: TFNetwork) -> list[str]:
    """All constructed layers of ``network``, sorted."""
    # construct_from_dict only builds what the outputs and losses need (as in training), plus the remaining
    # layers of subnetworks. network.layers has sub-layers as "parent/child" already.
    names = set(network.layers)
    for layer in list(network.layers.values()):
        names.update(_rec_sub_layer_names(layer))
    return sorted(names)


def _rec_sub_layer_names(layer: Any) -> set[str]:
    """Names of the layers inside a rec loop (``cell.net``), which TFNetwork.layers does not list."""
    cell = getattr(layer, "cell", None)
    sub_net = getattr(cell, "net", None)
    if sub_net is None or not hasattr(sub_net, "layers"):
        return set()
    names = set()
    for sub_name, sub_layer in sub_net.layers.items():
        if sub_name.startswith("prev:") or sub_name == ":i":
            continue  # RETURNN's helpers for the previous frame and the step index, not layers of the net dict
        names.add(f"{layer.name}/{sub_name}")
        names.update(f"{layer.name}/{n}" for n in _rec_sub_layer_names(sub_layer))
    # Layers moved out of the loop by RETURNN's optimization live in separate nets of the cell.
    for attr in ("input_layers_net", "output_layers_net"):
        extra_net = getattr(cell, attr, None)
        if extra_net is not None:
            names.update(f"{layer.name}/{sub_name}" for sub_name in extra_net.layers)
    return names


def _failing_layer_name(exc: BaseException) -> Optional[str]:
    """
    The absolute name of the innermost layer whose construction raised ``exc``.

    RETURNN does not attach the layer name to most errors (only LayerNotFound and a few others carry one, and that
    is the missing layer, not the one referring to it). The traceback is reliable: the innermost frame of
    ``TFNetwork.construct_layer``/``_create_layer``/``add_layer`` (for a layer that exists in its net dict) is the
    layer being built when it failed.
    """
    from returnn.tf.network import TFNetwork

    found = None
    for frame in _traceback_frames(exc):
        code_name = frame.f_code.co_name
        if code_name not in ("construct_layer", "_create_layer", "add_layer"):
            continue
        net = frame.f_locals.get("self")
        if not isinstance(net, TFNetwork):
            continue
        if code_name == "construct_layer" and not frame.f_locals.get("layer_desc"):
            continue  # a layer that does not exist (LayerNotFound): the one referring to it is the bad one
        name = frame.f_locals.get("name_with_prefix") or frame.f_locals.get("name")
        if not isinstance(name, str):
            continue
        try:
            prefix = net.get_absolute_name_prefix()
        except Exception:  # a half-constructed subnet might not know its parent yet
            prefix = ""
        found = prefix + name
    if found is None:
        found = getattr(exc, "layer_name", None)
    return found


def _traceback_frames(exc: Optional[BaseException]) -> Iterator[types.FrameType]:
    """
    Frames of ``exc``'s traceback, outermost first, followed by those of the exceptions it was raised from
    (or while handling), which continue deeper: so the last layer frame found is the innermost one.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            yield tb.tb_frame
            tb = tb.tb_next
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


@contextlib.contextmanager
def _maybe_quiet(quiet: bool) -> Iterator[None]:
    """RETURNN prints to stdout when its log is not initialized; for the CLI, only the summary should be there."""
    if not quiet:
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()):
        yield


@contextlib.contextmanager
def output_kept() -> Iterator[None]:
    """What RETURNN, returnn_common and TensorFlow print in the block (RETURNN's DEPRECATION warnings, every layer it
    builds, TF's C++ notes), kept in a temporary file instead of shown: Python's ``sys.stdout``/``sys.stderr`` and
    the file descriptors 1 and 2 (where TF's C++ code writes, and handlers made before) go there. For the commands,
    which answer in one line: the kept output is shown on stderr only if the block raises."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile("w+") as log:
        failed = False
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
        except BaseException:
            failed = True
            raise
        finally:
            log.flush()
            for fd, original in zip((1, 2), saved):
                os.dup2(original, fd)
                os.close(original)
            if failed:
                log.seek(0)
                kept = log.read().rstrip()
                if kept:
                    sys.stderr.write(f"--- what RETURNN printed ---\n{kept}\n--- end of what RETURNN printed ---\n")


def unsupported_returnn(returnn: types.ModuleType) -> Optional[str]:
    """Why the imported ``returnn`` package is too old for written configs and this check (one line naming the
    supported range and the fix), or None. By its version string, else by a feature of the oldest one's time."""
    version = getattr(returnn, "__version__", "")
    dated = re.fullmatch(r"1\.(\d{8})(\.\d+)?", version)
    if dated:
        too_old = int(dated.group(1)) < OLDEST_RETURNN[0]
    else:
        from returnn.util.basic import BehaviorVersion

        # noinspection PyProtectedMember
        too_old = getattr(BehaviorVersion, "_latest_behavior_version", 0) < _OLDEST_BEHAVIOR_VERSION
    if not too_old:
        return None
    where = os.path.dirname(os.path.dirname(returnn.__file__ or ""))
    return (
        f"RETURNN {version or '(no version)'} from {where} is too old: "
        f"i6_rc_jobs's written configs and its check support RETURNN {OLDEST_RETURNN[1]} and later; give "
        f"CreateConfigJob (and the training) returnn_root=... a newer RETURNN checkout"
    )


def stale_locks(cache_dir: str) -> list[str]:
    """The ``lock_file`` s of RETURNN's ``LockFile`` in ``cache_dir`` (its native ops' cache, e.g.
    ``/var/tmp/$USER/returnn_tf_cache``) that no process on this machine holds: left by a compile that was killed.
    RETURNN's lock is an empty file that its holder keeps open until it removes it, and a waiting RETURNN takes it
    over only once its mtime is 1 h old, printing nothing but "Waiting for lock-file" (which the check keeps back).
    A lock younger than a few seconds counts as held (its holder may be closing it before removing it)."""
    import glob
    import time

    pattern = os.path.join(glob.escape(cache_dir), "returnn_*", "**", "lock_file")
    locks = {os.path.realpath(path): path for path in glob.glob(pattern, recursive=True)}
    if not locks:
        return []
    held: set[str] = set()
    for fd_dir in glob.glob("/proc/[0-9]*/fd"):
        with contextlib.suppress(OSError):  # another user's process, or one that ended meanwhile
            held.update(os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir))
    stale = []
    for real, path in sorted(locks.items()):
        with contextlib.suppress(OSError):  # removed meanwhile: its holder unlocked it
            if real not in held and time.time() - os.path.getmtime(path) > 5:
                stale.append(path)
    return stale


def say_stale_locks() -> None:
    """One line on stderr per stale lock of the installed RETURNN's cache (see :func:`stale_locks`): what to
    remove, so that a build waiting on it does not wait an hour without a word."""
    from returnn.util.basic import get_cache_dir

    for path in stale_locks(get_cache_dir()):
        print(
            f"warning: {path}: a RETURNN lock that no process on this machine holds (a native-op compile that was "
            f"killed); RETURNN waits up to 1 h for it to age, so remove it: rm {path}",
            file=sys.stderr,
            flush=True,
        )


def link_host_compiler_flags_with_gcc() -> None:
    """RETURNN's warp-transducer op (its RNN-T loss) gives its linker nvcc's ``-Xcompiler -fopenmp`` also when it
    compiles with g++ (without CUDA, as the check does), which g++ passes on to ld, and ld refuses: hand such a flag
    to g++ itself, as nvcc would, so that the check builds what RETURNN builds with CUDA. Patches RETURNN's native-code
    compiler in this process, so only the CLI (a process of its own) calls it; an older RETURNN without the method that
    hands the flags on (the 2024 and 2025 ones of the supported range) is left as it is."""
    from returnn.util.native_code_compiler import NativeCodeCompiler

    transform = getattr(NativeCodeCompiler, "_transform_ld_flags", None)
    if transform is None:
        return

    def _transform_ld_flags(self: NativeCodeCompiler, opts: Sequence[str]) -> Sequence[str]:
        if os.path.basename(self._get_compiler_bin()).startswith("nvcc"):
            return transform(self, opts)
        for_gcc, rest, flags = [], [], iter(opts)
        for flag in flags:
            if flag == "-Xcompiler":
                for_gcc.append(next(flags))
            else:
                rest.append(flag)
        return for_gcc + list(transform(self, rest))

    NativeCodeCompiler._transform_ld_flags = _transform_ld_flags


def main(argv: Optional[Sequence[str]] = None) -> int:
    """CLI: print the number of layers per epoch, or the error and exit code 1."""
    parser = argparse.ArgumentParser(description="Construct the TF networks of a RETURNN config, as RETURNN would.")
    parser.add_argument("config", help="RETURNN config file (Python format, first line #!rnn.py)")
    parser.add_argument("--epochs", type=int, nargs="+", default=[1], help="epochs to check (default: 1)")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show what RETURNN prints while constructing (else only if the check fails)",
    )
    args = parser.parse_args(argv)
    try:
        import returnn
    except ImportError as exc:
        print(
            f"error: RETURNN is not importable in {sys.executable} ({exc}): give CreateConfigJob returnn_root=... "
            f"(a RETURNN checkout) and returnn_python_exe=..., as to i6_core's RETURNN jobs, or add RETURNN to it",
            file=sys.stderr,
        )
        return 2
    print(f"RETURNN {returnn.__version__} from {os.path.dirname(os.path.dirname(returnn.__file__))}")
    too_old = unsupported_returnn(returnn)
    if too_old:
        print(f"error: {too_old}", file=sys.stderr)
        return 2
    say_stale_locks()
    link_host_compiler_flags_with_gcc()
    try:
        with contextlib.nullcontext() if args.verbose else output_kept():
            result = construct_networks(args.config, args.epochs, as_rnn_py=True)
    except NetworkCheckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for epoch, names in result.items():
        print(f"epoch {epoch}: RETURNN constructed {len(names)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())

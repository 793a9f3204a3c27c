"""
Check that a written PyTorch (or RETURNN-frontend on torch) config runs, stage by stage, as RETURNN runs it: load
the config, read its ``extern_data``, take the first batch of its dataset, construct the model with ``get_model`` on
CPU, then train one step (``train_step``: losses, backward pass, optimizer step) and/or run the batch through
``forward_step`` (with the config's ``forward_callback``). A config that would fail (a model that does not build, a
``train_step`` that fails or marks no loss, a ``forward_step`` that fails) fails here, in seconds, not after a
cluster queue wait, in one line: the stage, the frame of the user's code it failed in (the innermost frame that is
not Python's, a library's or i6_rc_jobs') and the error. The model's parameters (name and shape), their count, the
step's losses and the forward outputs are written as JSON.

The stages are the methods of an engine: :class:`UpstreamEngine` runs them with RETURNN's own torch engine; a RETURNN
fork with another engine plugs in as another class with the same methods (:class:`Engine`).

Usage: ``python .../torch_check.py CONFIG --report REPORT.json`` in a Python with RETURNN and torch (it imports
nothing of i6_rc_jobs). What RETURNN prints, and the whole traceback of a failure, go to stdout; stderr gets only the
one line of a failure. Nothing is written next to the config: checkpoints, learning rates and the files a
``forward_callback`` writes go to a temporary directory. No checkpoint is loaded: the model has its initial values.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import sysconfig
import tempfile
import traceback
from typing import Any, Iterator, Optional, Protocol

#: What the check runs, in this order; a failure names its stage.
STAGES = ("load config", "extern_data", "dataset", "construct model", "train step", "forward step")
#: Config keys that name a checkpoint to start from: the check constructs the model with its initial values.
CHECKPOINT_KEYS = ("load", "load_epoch", "preload_from_files", "import_model_train_epoch1")
#: Packages whose frames are not the user's code (besides Python's own and the installed packages).
LIBRARIES = ("torch", "returnn", "numpy")


class CheckError(Exception):
    """What the config lacks, said by the check itself (no traceback of the user's code to point into); ``where``:
    the line of the config it is about, if known."""

    def __init__(self, problem: str, where: str = ""):
        super().__init__(problem)
        self.where = where


class StageFailure(Exception):
    """A stage failed: ``str()`` is the one line that says where and why."""

    def __init__(self, stage: str, line: str):
        super().__init__(f"{stage} fails{line}")
        self.stage = stage


class Engine(Protocol):
    """The stages of the check with one RETURNN's torch engine."""

    def load_config(self) -> tuple[bool, bool]:
        """Loads the config as rnn.py does; whether it trains (``train_step``) and forwards (``forward_step``)."""

    def read_extern_data(self) -> None: ...

    def take_batches(self) -> None:
        """The first batch of each dataset the steps run on."""

    def construct_model(self) -> dict[str, list[int]]:
        """The model's parameters, name -> shape."""

    def train_step(self) -> dict[str, float]:
        """One training step on the batch; its losses by name."""

    def forward_step(self) -> dict[str, list[int]]:
        """The batch through ``forward_step``; the shape of each output of its first sequence."""

    def finish(self) -> None: ...


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Turns what fails inside into a :class:`StageFailure` of stage ``name``."""
    try:
        yield
    except CheckError as exc:
        raise StageFailure(name, f"{' at ' + exc.where if exc.where else ''}: {exc}") from exc
    except Exception as exc:
        frame = user_frame(exc)
        where = f" at {frame.filename}:{frame.lineno} in {frame.name}" if frame else ""
        raise StageFailure(name, f"{where}: {type(exc).__name__}: {_message(exc)}{_hint(name, exc)}") from exc


def run_check(engine: Engine) -> dict[str, Any]:
    """Runs the stages; the report: ``parameters`` (name -> shape), ``num_parameters``, ``losses`` of the training
    step and ``outputs`` of the forward step (each only where the config has that step)."""
    with stage("load config"):
        trains, forwards = engine.load_config()
    with stage("extern_data"):
        engine.read_extern_data()
    with stage("dataset"):
        engine.take_batches()
    with stage("construct model"):
        parameters = engine.construct_model()
    report: dict[str, Any] = {
        "parameters": parameters,
        "num_parameters": sum(_prod(shape) for shape in parameters.values()),
    }
    if trains:
        with stage("train step"):
            report["losses"] = engine.train_step()
    if forwards:
        with stage("forward step"):
            report["outputs"] = engine.forward_step()
    engine.finish()
    return report


def user_frame(exc: BaseException) -> Optional[traceback.FrameSummary]:
    """The innermost frame of the user's code where ``exc`` (or the exception it was raised from) came from: not
    Python's, not an installed package's, not torch's, RETURNN's, numpy's or i6_rc_jobs'. The config file's own
    lines count as the user's."""
    roots = _library_roots()
    for one in reversed(list(_chain(exc))):
        for frame in reversed(traceback.extract_tb(one.__traceback__)):
            if not _is_library(frame.filename, roots):
                return frame
    return None


def _chain(exc: Optional[BaseException]) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def _is_library(filename: str, roots: list[str]) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return True
    path = os.path.realpath(filename)
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _library_roots() -> list[str]:
    """Python's standard library, the installed packages, and the packages of :data:`LIBRARIES` and i6_rc_jobs
    wherever they are (RETURNN is usually a checkout on ``PYTHONPATH``)."""
    roots = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    for name in LIBRARIES:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            roots.add(os.path.dirname(file))
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # i6_rc_jobs
    return [os.path.realpath(root) for root in roots]


def _message(exc: BaseException) -> str:
    """The first line of the error (RETURNN appends the batch it failed on); for one without a message (a bare
    ``assert``), the line that raised it."""
    text = str(exc).strip()
    if not text:
        frames = traceback.extract_tb(exc.__traceback__)
        if frames and frames[-1].line:
            return f"{frames[-1].line} ({frames[-1].filename}:{frames[-1].lineno})"
        return "(no message)"
    return text.splitlines()[0]


def _hint(stage_name: str, exc: BaseException) -> str:
    missing = getattr(exc, "name", None) or ""
    if stage_name == "load config" and isinstance(exc, ModuleNotFoundError) and missing.split(".")[0] not in LIBRARIES:
        return " (RETURNN imports the model's code by name: give ReturnnConfigSerializer sys_path=[its directory])"
    return ""


def _prod(shape: list[int]) -> int:
    out = 1
    for size in shape:
        out *= size
    return out


class _OneBatch:
    """What the engines share: the config, a work directory, and the first batch of each step's dataset."""

    def __init__(self, config_file: str, work: str):
        self.config_file, self.work = config_file, work
        self.trains = self.forwards = False
        self.datasets: dict[str, Any] = {}  # "train", "forward" -> the dataset that step runs on
        self.batches: dict[str, Any] = {}  # the same -> its first batch

    def finish(self) -> None:
        import returnn.__main__ as rnn

        rnn.finalize()

    def _feed(self, step: str) -> None:
        """Every data loader the engine makes from now on gives the first batch of ``step``'s dataset alone."""
        import returnn.__main__ as rnn

        batch = self.batches[step]
        rnn.engine._create_data_loader = lambda *_args, **_kwargs: [batch]

    def take_batches(self) -> None:
        """The first batch of each step's dataset (:meth:`_dataset_keys`); a forward of a config that also trains
        and names no dataset of its own takes the train batch."""
        import returnn.__main__ as rnn
        from returnn.datasets.basic import init_dataset

        config = rnn.config
        keys = self._dataset_keys(config)
        for step, key in keys.items():
            if not config.bool_or_other(key, None):
                raise CheckError(f"the config has no {key!r} dataset to take a batch from")
            dataset = init_dataset(config.opt_typed_value(key), default_kwargs={"name": key})
            batch = next(iter(self._loader(dataset, step)), None)
            if batch is None:
                raise CheckError(f"the {key!r} dataset gives no batch")
            self.datasets[step], self.batches[step] = dataset, batch
        if self.forwards and "forward" not in keys:
            self.datasets["forward"], self.batches["forward"] = self.datasets["train"], self.batches["train"]

    def _dataset_keys(self, config: Any) -> dict[str, str]:
        """Step ("train", "forward") -> the config key of its dataset, the engine set to epoch 1."""
        raise NotImplementedError

    def _loader(self, dataset: Any, step: str) -> Any:
        """The engine's data loader of ``dataset`` for ``step``."""
        raise NotImplementedError


class UpstreamEngine(_OneBatch):
    """The stages with RETURNN's own torch engine (``returnn.torch.engine.Engine``), as rnn.py runs a config with
    ``task = "train"`` (``train_step``) or ``task = "forward"`` (``forward_step`` alone), on CPU, for one batch."""

    def load_config(self) -> tuple[bool, bool]:
        import returnn.__main__ as rnn

        updates = {
            "device": "cpu",
            "num_epochs": 1,
            "model": os.path.join(self.work, "model"),
            "learning_rate_file": os.path.join(self.work, "learning_rates"),
            "torch_distributed": None,
            "watch_memory": False,
            "log": None,
        }
        rnn.init_config(config_filename=self.config_file, extra_updates=updates)
        config = rnn.config
        backend = config.value("backend", None)
        if backend != "torch":
            raise CheckError(f"the config's backend is {backend!r}, not 'torch'")
        for key in CHECKPOINT_KEYS:
            config.typed_dict.pop(key, None)
            config.dict.pop(key, None)
        self.trains = config.typed_value("train_step") is not None
        self.forwards = config.typed_value("forward_step") is not None
        if not (self.trains or self.forwards):
            raise CheckError("the config defines neither train_step nor forward_step")
        if self.forwards and not self.trains and not config.typed_value("forward_callback"):
            hooks = [key for key in ("forward_init_hook", "forward_finish_hook") if config.has(key)]
            raise CheckError(
                "the config has forward_step but no forward_callback, without which RETURNN's forward task stops "
                "('no forward_callback specified'): set forward_callback to a returnn.forward_iface."
                "ForwardCallbackIface (or a function that returns one)"
                + (f" ({' and '.join(hooks)}: MiniReturnn's, which RETURNN never calls)" if hooks else "")
            )
        config.set("task", "train" if self.trains else "forward")
        rnn.init_log()
        rnn.init_backend_engine()
        rnn.init_engine()
        return self.trains, self.forwards

    def read_extern_data(self) -> None:
        """Each key of ``extern_data`` as the engine reads it, so that the one it cannot read is named."""
        from returnn.config import get_global_config
        from returnn.torch.data.extern_data import extern_data_template_from_config_opts

        extern_data = get_global_config().typed_value("extern_data")
        if not isinstance(extern_data, dict) or not extern_data:
            raise CheckError(f"extern_data is {type(extern_data).__name__}, not a dict of the data's tensors")
        for key, opts in extern_data.items():
            try:
                extern_data_template_from_config_opts({key: opts})
            except Exception as exc:
                raise CheckError(
                    f"RETURNN cannot read extern_data[{key!r}]: {type(exc).__name__}: {_message(exc)}",
                    _assigned_at(self.config_file, "extern_data"),
                ) from exc

    def _dataset_keys(self, config: Any) -> dict[str, str]:
        """``train``; for forwarding ``forward_data`` (default ``eval``) as rnn.py's forward task takes it, none for a
        config that also trains and names no ``forward_data``."""
        import returnn.__main__ as rnn

        rnn.engine.set_epoch(1)  # the epoch the datasets' sequence order is for (the loaders' workers read it)
        keys = {"train": "train"} if self.trains else {}
        if self.forwards and not (self.trains and not config.has("forward_data")):
            forward_data = config.value("forward_data", "eval")
            keys["forward"] = forward_data if forward_data in ("train", "dev", "eval") else "forward_data"
        return keys

    def _loader(self, dataset: Any, step: str) -> Any:
        import returnn.__main__ as rnn

        return rnn.engine._create_data_loader(dataset, train=step == "train")

    def construct_model(self) -> dict[str, list[int]]:
        import returnn.__main__ as rnn

        engine = rnn.engine
        if self.trains:
            self._feed("train")  # the train loader the engine makes gives this batch alone
            engine.init_train_from_config(rnn.config, self.datasets["train"])
        else:
            engine.init_network_from_config(rnn.config)
        return {name: list(param.shape) for name, param in engine.get_pt_model().named_parameters()}

    def train_step(self) -> dict[str, float]:
        import returnn.__main__ as rnn

        rnn.engine.train()
        scores = rnn.engine.learning_rate_control.epoch_data[1].error
        return {name: float(value) for name, value in sorted(scores.items())}

    def forward_step(self) -> dict[str, list[int]]:
        import returnn.__main__ as rnn
        from returnn.forward_iface import ForwardCallbackIface

        callback = rnn.config.typed_value("forward_callback") or ForwardCallbackIface()
        if callable(callback):
            callback = callback()
        shapes: dict[str, list[int]] = {}

        class Recording(ForwardCallbackIface):
            """The config's callback, and the shapes of the first sequence's outputs for the report."""

            def init(self, *, model: Any) -> None:
                callback.init(model=model)

            def process_seq(self, *, seq_tag: str, outputs: Any) -> None:
                if not shapes:
                    shapes.update({name: list(value.raw_tensor.shape) for name, value in outputs.data.items()})
                callback.process_seq(seq_tag=seq_tag, outputs=outputs)

            def finish(self) -> None:
                callback.finish()

        self._feed("forward")
        rnn.engine.forward_with_callback(dataset=self.datasets["forward"], callback=Recording())
        return shapes


class MiniReturnnEngine(_OneBatch):
    """The stages with MiniReturnn's torch engine (the RETURNN fork of i6's PyTorch setups: ``train_step(*, model,
    data, run_ctx)``, losses marked in ``returnn.torch.context``'s run context, ``forward_init_hook`` and
    ``forward_finish_hook`` around ``forward_step``), as its rnn.py runs ``task = "train"`` or ``"forward"``, on CPU,
    for one batch."""

    def load_config(self) -> tuple[bool, bool]:
        import returnn.__main__ as rnn

        updates = {
            "device": "cpu",
            "num_epochs": 1,
            "model": os.path.join(self.work, "model"),
            "learning_rate_file": os.path.join(self.work, "learning_rates"),
            "num_workers_per_gpu": 0,
            "log": None,
        }
        rnn.init_config(config_filename=self.config_file, extra_updates=updates)
        config = rnn.config
        backend = config.value("backend", "torch")  # (MiniReturnn has no other)
        if backend != "torch":
            raise CheckError(f"the config's backend is {backend!r}, not 'torch'")
        for key in CHECKPOINT_KEYS:
            config.typed_dict.pop(key, None)
            config.dict.pop(key, None)
        self.trains = config.typed_value("train_step") is not None
        self.forwards = config.typed_value("forward_step") is not None
        if not (self.trains or self.forwards):
            raise CheckError("the config defines neither train_step nor forward_step")
        rnn.init_log()
        rnn.init_engine()
        return self.trains, self.forwards

    def read_extern_data(self) -> None:
        """MiniReturnn's engine reads no ``extern_data``: the datasets' keys are the data (only its form is checked)."""
        import returnn.__main__ as rnn

        extern_data = rnn.config.typed_value("extern_data")
        if extern_data is not None and not isinstance(extern_data, dict):
            raise CheckError(f"extern_data is {type(extern_data).__name__}, not a dict", "")

    def _dataset_keys(self, config: Any) -> dict[str, str]:
        """``train``; for forwarding ``forward``, the dataset MiniReturnn's forward task reads (none for a config
        that also trains and names no ``forward``)."""
        import returnn.__main__ as rnn

        rnn.engine._epoch_mp_shared.value = 1
        keys = {"train": "train"} if self.trains else {}
        if self.forwards and not (self.trains and not config.has("forward")):
            keys["forward"] = "forward"
        return keys

    def _loader(self, dataset: Any, step: str) -> Any:
        import returnn.__main__ as rnn

        return rnn.engine._create_data_loader(dataset)

    def construct_model(self) -> dict[str, list[int]]:
        import returnn.__main__ as rnn

        engine = rnn.engine
        if self.trains:
            self._feed("train")
            engine.init_train(train_data=self.datasets["train"], dev_data=self.datasets["train"])
        else:
            self._feed("forward")
            engine.init_forward(forward_data=self.datasets["forward"])
        return {name: list(param.shape) for name, param in engine._model.named_parameters()}

    def train_step(self) -> dict[str, float]:
        import returnn.__main__ as rnn
        from returnn.torch.context import get_run_ctx, init_train_step_run_ctx

        engine = rnn.engine
        engine.epoch = 1
        engine.init_train_epoch()
        engine._model.train()
        init_train_step_run_ctx(device="cpu", engine=engine, epoch=1)
        run_ctx = get_run_ctx()
        run_ctx.init_step(0)
        _, losses = engine.run_train_step(self.batches["train"], run_ctx, 0)
        return {name: float(loss.loss.detach().cpu()) for name, loss in sorted(losses.items())}

    def forward_step(self) -> dict[str, list[int]]:
        import returnn.__main__ as rnn

        engine = rnn.engine
        if self.trains:
            self._feed("forward")
            engine.init_forward(forward_data=self.datasets["forward"])
        engine.forward()
        return {}  # (a MiniReturnn forward step writes what it computes through its hooks, not as outputs)


def _assigned_at(config_file: str, key: str) -> str:
    """``CONFIG:LINE``, the line of the config file that assigns ``key`` at its top level, or ""."""
    with contextlib.suppress(OSError):
        with open(config_file) as f:
            for number, line in enumerate(f, 1):
                if re.match(rf"{key}\s*=", line):
                    return f"{config_file}:{number}"
    return ""


def engine_for(config_file: str, work: str) -> Engine:
    """The engine of the RETURNN this Python imports."""
    import returnn

    package = os.path.dirname(returnn.__file__ or "")
    if os.path.exists(os.path.join(package, "tensor")):
        return UpstreamEngine(config_file, work)
    if os.path.exists(os.path.join(package, "torch", "context.py")):
        return MiniReturnnEngine(config_file, work)
    raise CheckError(
        f"the RETURNN of {os.path.dirname(package)} has neither returnn.tensor nor MiniReturnn's returnn.torch.context: "
        "this check runs the torch engine of RETURNN or of MiniReturnn"
    )


@contextlib.contextmanager
def _stderr_to_stdout() -> Iterator[None]:
    """What RETURNN, torch and the check print while checking goes to stdout (file descriptor 2 too, where C++ code
    writes), so that stderr has only the one line of a failure."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(2)
    os.dup2(1, 2)
    try:
        with contextlib.redirect_stderr(sys.stdout):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 2)
        os.close(saved)


#: How the summary line names the steps' parts of the report.
_SAID = {"losses": "one train step", "outputs": "forward step outputs"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--report", required=True, help="where the JSON report is written")
    args = parser.parse_args(argv)
    config_file = os.path.abspath(args.config)
    failure: Optional[StageFailure] = None
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="torch_check.") as work, _stderr_to_stdout():
        os.chdir(work)  # where a forward_callback writes its files
        try:
            with stage("load config"):
                engine = engine_for(config_file, work)
            report = run_check(engine)
        except StageFailure as exc:
            failure = exc
            traceback.print_exception(exc.__cause__ or exc, file=sys.stdout)
        finally:
            os.chdir(cwd)
    if failure is not None:
        print(f"error: {args.config}: {failure}", file=sys.stderr, flush=True)
        return 1
    with open(args.report + ".tmp", "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    os.replace(args.report + ".tmp", args.report)
    names = ", ".join(f"{name} {shape}" for name, shape in sorted(report["parameters"].items()))
    steps = "".join(f"; {what}: {report[key]}" for key, what in _SAID.items() if key in report)
    print(f"{args.config}: {report['num_parameters']} parameters ({names}){steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

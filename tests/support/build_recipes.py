"""A recipe directory of builders for the build tests: real returnn_common models (an LSTM stack) whose size comes
from each kind of dependency a build can have: a module it imports, a data file it reads, an environment variable.
Made in a temporary directory, so that the tests can edit each of them."""

from __future__ import annotations

import py_compile
import textwrap
from pathlib import Path

MODELS = '''
"""Builders of the build tests."""

import os
import time

import bcompiled
import bhelper

HERE = os.path.dirname(os.path.abspath(__file__))


def lstm(layers_file: str):
    """An LSTM stack: layers from ``layers_file``, hidden size $BMODELS_HIDDEN times the modules' FACTORs."""
    with open(os.path.join(HERE, "counter"), "a") as f:  # written, so no dependency: counts the builds
        f.write(f"{os.getpid()}\\n")
    while os.path.exists(os.path.join(HERE, "pause")):  # a stat, no dependency: lets a test catch the build
        time.sleep(0.05)
    from tests import rc_serializers

    with open(layers_file) as f:
        num_layers = int(f.read())
    hidden = int(os.environ.get("BMODELS_HIDDEN", "16")) * bhelper.FACTOR * bcompiled.FACTOR
    print("building an LSTM stack of", num_layers, "layers")
    return rc_serializers.model("lstm_stack", num_layers=num_layers, hidden=hidden)


def first_size(sizes: dict):
    """An LSTM whose hidden size is the first value of ``sizes``: the dict's order matters, as a call's may."""
    with open(os.path.join(HERE, "counter"), "a") as f:
        f.write(f"{os.getpid()}\\n")
    from tests import rc_serializers

    return rc_serializers.model("lstm_stack", num_layers=1, hidden=next(iter(sizes.values())))


def copies_environ():
    """Reads the whole environment (``dict(os.environ)`` reads every variable by name), $BMODELS_TOKEN among it."""
    with open(os.path.join(HERE, "counter"), "a") as f:
        f.write(f"{os.getpid()}\\n")
    environ = dict(os.environ)
    from tests import rc_serializers

    return rc_serializers.model("lstm_stack", num_layers=1, hidden=8 + len(environ.get("BMODELS_TOKEN", "")) % 2)


def with_checkpoint(checkpoint):
    """An LSTM whose first layer loads ``checkpoint`` (a job's output) on init."""
    from tests import rc_serializers

    serializer = rc_serializers.model("lstm_stack", num_layers=1, hidden=8)
    serializer.network[next(iter(serializer.network))]["load_on_init"] = checkpoint
    return serializer


def exits():
    """Ends its build process with status 0 before the build wrote a result."""
    os._exit(0)


def spawning(pid_file: str):
    """Starts a process that would run for ten minutes, writes its pid to ``pid_file``, and builds."""
    import subprocess

    with open(pid_file, "w") as f:
        f.write(str(subprocess.Popen(["sleep", "600"]).pid))
    from tests import rc_serializers

    return rc_serializers.model("lstm_stack", num_layers=1, hidden=8)


def reporting_directory(report: str):
    """Writes the owner and mode of the directory its build runs in to ``report``, and builds."""
    import json
    import stat
    import sys

    st = os.stat(os.path.dirname(sys.pycache_prefix))
    with open(report, "w") as f:
        json.dump({"uid": st.st_uid, "mode": stat.S_IMODE(st.st_mode)}, f)
    from tests import rc_serializers

    return rc_serializers.model("lstm_stack", num_layers=1, hidden=8)


def swapped_result():
    """Builds, but its result.pickle holds other bytes than those the build process made, as when another process
    swaps the file: every os.open of it in this build process writes a pickled string there instead."""
    import pickle

    real_open = os.open

    def swapping_open(path, flags, *args):
        fd = real_open(path, flags, *args)
        if str(path).endswith("result.pickle"):
            os.write(fd, pickle.dumps("swapped"))
            os.close(fd)
            return real_open(os.devnull, os.O_WRONLY)
        return fd

    os.open = swapping_open
    from tests import rc_serializers

    return rc_serializers.model("lstm_stack", num_layers=1, hidden=8)


def with_keras():
    """Uses ``tf.keras``, which the build server did not load: the build loads it."""
    import tensorflow as tf

    units = tf.keras.layers.Dense(8).units
    from tests import rc_serializers

    return rc_serializers.model("lstm_stack", num_layers=1, hidden=units)


def timed(report: str, index: int):
    """Appends when its build ran to ``report`` (an output: no dependency), after a pause that lets others overlap."""
    begun = time.time()
    time.sleep(0.3)
    from tests import rc_serializers

    result = rc_serializers.model("lstm_stack", num_layers=1, hidden=8 + index)
    with open(report, "a") as f:
        f.write(f"{begun} {time.time()}\\n")
    return result


def failing(code: int):
    with open(os.path.join(HERE, "counter"), "a") as f:
        f.write(f"{os.getpid()}\\n")
    print("output before the failure")
    raise ValueError(f"boom {code}")


def not_a_serializer():
    return {"network": {}}


def conformer_without_rc_compat():
    """A Conformer of the installed returnn_common without rc_compat.apply: fails inside returnn_common."""
    from tests.support import unapplied

    unapplied.conformer()
'''


def compiled(directory: Path, factor: int) -> None:
    """``bcompiled.pyc``: a module that is only bytecode, no source."""
    source = directory / "bcompiled_source.py"
    source.write_text(f"FACTOR = {factor}\n")
    py_compile.compile(str(source), cfile=str(directory / "bcompiled.pyc"), doraise=True)
    source.unlink()


def make(directory: Path) -> Path:
    """Writes the recipe directory (``bmodels``, ``bhelper``, ``bcompiled``, ``bunrelated``, ``layers.txt``,
    ``other.txt``)."""
    directory.mkdir(parents=True, exist_ok=True)
    compiled(directory, 1)
    (directory / "bmodels.py").write_text(textwrap.dedent(MODELS))
    (directory / "bhelper.py").write_text("FACTOR = 1\n")
    (directory / "bunrelated.py").write_text("FACTOR = 1\n")
    (directory / "layers.txt").write_text("1")
    (directory / "other.txt").write_text("1")
    return directory


def builds(directory: Path) -> int:
    """How many builds of ``bmodels`` ran so far."""
    counter = directory / "counter"
    return len(counter.read_text().splitlines()) if counter.exists() else 0

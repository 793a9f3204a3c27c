"""Tiny builders for the tests of what a build looked for: each reads, probes or lists something and returns what it
saw in a serializer (no TensorFlow, no returnn_common), so that a build takes a fork and a few milliseconds."""

from __future__ import annotations

import textwrap
from pathlib import Path

BUILDERS = '''
"""Builders that return what they saw."""

import glob
import os
import sqlite3

from i6_rc_jobs import ReturnnCommonSerializer
from i6_rc_jobs import depend_on

import pbase

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def _saw(seen) -> ReturnnCommonSerializer:
    return ReturnnCommonSerializer(network={"output": {"class": "copy", "from": "data", "saw": repr(seen)}})


def optional_file():
    try:
        with open(os.path.join(DATA, "optional.txt")) as f:
            return _saw(f.read())
    except FileNotFoundError:
        return _saw(None)


def optional_module():
    try:
        import pnew
    except ImportError:
        return _saw(None)
    return _saw(pnew.VALUE)


def probed(how: str):
    flag = os.path.join(DATA, "flag")
    if how == "exists":
        return _saw(os.path.exists(flag))
    if how == "stat":
        try:
            return _saw(os.stat(flag).st_size)
        except FileNotFoundError:
            return _saw(None)
    if how == "isdir":
        return _saw(os.path.isdir(flag))
    if how == "listdir":
        return _saw(sorted(os.listdir(DATA)))
    if how == "scandir":
        return _saw(sorted(entry.name for entry in os.scandir(DATA)))
    return _saw(sorted(os.path.basename(path) for path in glob.glob(os.path.join(DATA, "*.txt"))))


def shadowed():
    import plib

    return _saw(plib.VALUE)


def environ_bytes(how: str):
    if how == "environb":
        return _saw(os.environb.get(b"PROBES_VALUE"))
    return _saw(os.getenvb(b"PROBES_VALUE"))


def read_write():
    import numpy

    return _saw(numpy.memmap(os.path.join(DATA, "array.bin"), dtype="uint8").tolist())


def preloaded():
    return _saw(pbase.VALUE)


def from_sqlite(declared: bool):
    path = os.path.join(DATA, "db.sqlite")
    if declared:
        depend_on(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return _saw(connection.execute("select value from t").fetchone()[0])


def everything():
    """What the property test edits: a file read, a file probed, a directory listed, a file that may be missing, a
    module that may appear or be shadowed, an environment variable."""
    seen = {}
    with open(os.path.join(DATA, "read.txt")) as f:
        seen["read"] = f.read()
    seen["probed"] = os.path.exists(os.path.join(DATA, "flag"))
    seen["listed"] = sorted(os.listdir(os.path.join(DATA, "listed")))
    try:
        with open(os.path.join(DATA, "optional.txt")) as f:
            seen["optional"] = f.read()
    except FileNotFoundError:
        seen["optional"] = None
    try:
        import plib

        seen["module"] = plib.VALUE
    except ImportError:
        seen["module"] = None
    seen["env"] = os.environ.get("PROBES_VALUE")
    seen["base"] = pbase.VALUE
    return _saw(seen)
'''


def make(root: Path) -> tuple[Path, Path]:
    """Two directories for sys.path, ``first`` (holds the builders, ``pbuilders``, and ``pbase``, which the build
    server preloads) before ``second``; and ``first/data``."""
    first, second = root / "first", root / "second"
    for directory in (first, second, first / "data", first / "data" / "listed"):
        directory.mkdir(parents=True, exist_ok=True)
    (first / "pbuilders.py").write_text(textwrap.dedent(BUILDERS))
    (first / "pbase.py").write_text("VALUE = 0\n")
    (first / "data" / "read.txt").write_text("0")
    return first, second


def saw(serializer) -> str:
    """What the builder saw, as it returned it."""
    return serializer.network["output"]["saw"]

"""Directories that appear complete or not at all: made under a private name beside their place, then renamed into
it, so that a process killed while making one leaves only a directory that a later process removes."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
from pathlib import Path

from i6_rc_jobs._util.processes import alive


def remove(tree: Path) -> None:
    """Removes ``tree`` if it is there, sealed (read-only) or not."""
    for directory, _, _ in os.walk(tree):
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)
    shutil.rmtree(tree, ignore_errors=True)


def partial_dir(directory: Path, label: str, mode: int = 0o777) -> Path:
    """A new directory ``.<label>.<host>.<pid>.<random>`` in ``directory``, to build something in before it is renamed
    into place. Removes first those that processes of this host left when they died (a cache on a shared file
    system also holds those of other hosts, which may still be at work). Its mode is what the umask gives, not
    ``mkdtemp``'s 0700: it becomes a tree or a clone that other users of the cache read (``mode``, less the umask,
    for one that must stay private)."""
    directory.mkdir(parents=True, exist_ok=True)
    prefix, host = f".{label}.", socket.gethostname()
    for entry in os.listdir(directory):
        parts = entry[len(prefix) :].split(".") if entry.startswith(prefix) else []
        if len(parts) >= 3 and ".".join(parts[:-2]) == host and parts[-2].isdigit() and not alive(int(parts[-2])):
            remove(directory / entry)
    while True:
        partial = directory / f"{prefix}{host}.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            partial.mkdir(mode)
        except FileExistsError:
            continue
        return partial


def into_place(partial: Path, target: Path) -> bool:
    """Renames the complete ``partial`` to ``target``, or keeps the one another process put there first (which the
    lock prevents, unless the file system does not lock across hosts); returns whether it renamed."""
    try:
        os.rename(partial, target)
    except OSError:
        if not target.is_dir():
            raise
        return False
    return True

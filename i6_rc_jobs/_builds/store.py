"""The build cache on disk: what a build made and what it depended on, signed so that nobody but the users who may
read the cache's key can have made it (unpickling a result runs code).

Layout under the root (``$I6_RC_BUILD_CACHE``, default ``builds`` beside the import cache, e.g.
``~/.cache/i6_rc_jobs/builds``), made as the import cache makes its files (:mod:`i6_rc_jobs._imports.cache`: modes
the umask gives, complete directories renamed into place, locks that the kernel drops when their holder dies):

- ``key``: 32 random bytes, readable by the user (and the group, if the umask lets the group read), by nobody else;
- ``entries/<call key>/<variant>/``: one build: ``entry.json`` (builder, arguments, the base it was built on, the
  SHA-256 of what it depended on beyond that base, digests of the other files), ``entry.sig`` (an
  HMAC-SHA256 with the key of the format, the SHA-256 of ``call.pickle`` and entry.json: an entry copied under
  another call is refused), ``result.pickle``, ``call.pickle`` (the exact pickled call: builder and arguments),
  ``log`` and ``used`` (touched at each use, for ``--prune``). The call key is the Sisyphus hash of the call, which
  is coarser than the call (``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` hash alike): its variants are told apart
  by the digest of the pickled call;
- ``bases/<digest>.json`` and ``.sig``: what the build server had loaded before it forked a build (the libraries),
  shared by the builds it made;
- ``deps/<digest>.json``: what a build depended on beyond its base (the files it loaded and read, what it looked
  for, the environment variables it read), named by its SHA-256, which the signed entry gives: shared by the
  builds of one model with other arguments, and proven once per process for all of them;
- ``locks/<call key>.lock``, ``tmp/``, ``failed/<call key>.log`` (the output of the last failed build).

Who may share it: the user and the users of a group the user is in (they share the key, so they could sign anything
anyway). The root may be writable by every user if it has the sticky bit (``/tmp``'s mode: nobody renames another's
files there); every directory in it must be owned by the user, by root or by a user of one of the user's groups, and
writable by no one else, or it is refused: another user who owns ``tmp/`` could swap a build's directory and have
its result signed. A build runs in a directory of its own, closed to everyone else (0700) until it is complete."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import shutil
import stat
import time
from pathlib import Path
from typing import Iterator, Literal, Optional

from i6_rc_jobs._util.atomic_dir import into_place, partial_dir
from i6_rc_jobs._util.atomic_file import write_atomically
from i6_rc_jobs._imports.cache import cache_root as imports_cache_root
from i6_rc_jobs._builds.json_records import Base, Entry, EntryDeps, NewEntry

ENV = "I6_RC_BUILD_CACHE"
#: The format of entries and bases, part of what is signed: entries of another format are not read, but rebuilt.
FORMAT = 4
#: The mode of the cache's files, less the umask: the user's and the group's (who share the key), nobody else's.
PRIVATE = 0o660


class UnsafeCacheError(Exception):
    """The cache's key could be read or replaced by others: nothing in the cache can be trusted."""


def cache_root() -> Path:
    """``$I6_RC_BUILD_CACHE`` or ``builds`` beside the import cache."""
    return Path(os.environ.get(ENV) or imports_cache_root().parent / "builds")


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, as hex."""
    return hashlib.sha256(data).hexdigest()


class Store:
    """The cache at ``root``."""

    def __init__(self, root: Path):
        self.root = root
        self._key: Optional[bytes] = None
        self._trusted: set[Path] = set()

    # -- the key ------------------------------------------------------------------------------------------------

    def key(self) -> bytes:
        """The cache's key, made on first use; refused if anyone but the user (and a group the user is in) could read
        or replace it."""
        if self._key is None:
            path = self.root / "key"
            try:
                self._key = self._read_key(path)
            except FileNotFoundError:
                self._make_key(path)
                self._key = self._read_key(path)
        return self._key

    def _read_key(self, path: Path) -> bytes:
        self.directory()
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            st = os.fstat(fd)
            mode = stat.S_IMODE(st.st_mode)
            ours = st.st_uid == os.geteuid() or st.st_gid in (os.getegid(), *os.getgroups())
            if not stat.S_ISREG(st.st_mode) or mode & 0o027 or not ours:
                raise UnsafeCacheError(
                    f"the build cache's key {path} (owner uid {st.st_uid}, gid {st.st_gid}, mode {mode:o}) could be "
                    "read or replaced by users outside this user's groups: its entries are not trusted; remove the "
                    f"key and the entries (rm -r {self.root}) or make it yours (chmod 0600)"
                )
            return os.read(fd, 64)
        finally:
            os.close(fd)

    def _make_key(self, path: Path) -> None:
        """Made beside its place with no rights for others, then linked into place: another process's key, linked
        first, wins."""
        self.root.mkdir(parents=True, exist_ok=True)
        umask = os.umask(0)
        os.umask(umask)
        tmp = self.root / f".key.{secrets.token_hex(6)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_bytes(32))
            os.fsync(fd)
            os.fchmod(fd, 0o640 & ~umask)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)

    def directory(self, *parts: str, make: bool = False) -> Path:
        """The cache's directory ``root/parts...`` (made if ``make``), each level checked once: refused if another
        user could swap what is in it (see the module docstring)."""
        if make:
            self.root.mkdir(parents=True, exist_ok=True)
        for level in [self.root.joinpath(*parts[:i]) for i in range(len(parts) + 1)]:
            if level in self._trusted:
                continue
            if make:
                level.mkdir(exist_ok=True)
            try:
                st = os.lstat(level)
            except FileNotFoundError:
                break
            if stat.S_ISREG(st.st_mode):  # a stray file: it fails what is done with it as a directory
                break
            _check_directory(level, st, sticky_allowed=level == self.root)
            self._trusted.add(level)
        return self.root.joinpath(*parts)

    def sign(self, data: bytes) -> bytes:
        return hmac.new(self.key(), data, "sha256").hexdigest().encode()

    def signed(self, data: bytes, signature: bytes) -> bool:
        return hmac.compare_digest(self.sign(data), signature)

    def read_signed(self, path: Path, sig_path: Path) -> Optional[bytes]:
        """The file's bytes if its signature holds, else None (missing, corrupt, or not made with this key)."""
        try:
            data, signature = path.read_bytes(), sig_path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return data if self.signed(data, signature) else None

    # -- layout -------------------------------------------------------------------------------------------------

    def entry_dir(self, call_key: str, make: bool = False) -> Path:
        return self.directory("entries", call_key, make=make)

    def lock(self, call_key: str) -> Path:
        return self.directory("locks", make=True) / f"{call_key}.lock"

    def failed_log(self, call_key: str) -> Path:
        return self.directory("failed", make=True) / f"{call_key}.log"

    def partial(self, label: str) -> Path:
        """A new directory in ``tmp/``, made by this process (exclusively) and closed to everyone else: what a build
        writes there (its output, its result) is this user's only until :meth:`put` opens it to the group."""
        partial = partial_dir(self.directory("tmp", make=True), label, mode=0o700)
        _check_directory(partial, os.lstat(partial), sticky_allowed=False)
        return partial

    def variants(self, call_key: str) -> list[Path]:
        """The entry's variants, newest first."""
        try:
            names = os.listdir(self.entry_dir(call_key))
        except OSError:  # none, or a stray file in its place
            return []
        return [self.entry_dir(call_key) / name for name in sorted(names, reverse=True) if not name.startswith(".")]

    def all_variants(self) -> Iterator[Path]:
        try:
            keys = sorted(os.listdir(self.directory("entries")))
        except OSError:
            return
        for call_key in keys:
            if (self.root / "entries" / call_key).is_dir():
                yield from self.variants(call_key)
            else:  # a stray file: listed, so that it is seen (and pruned)
                yield self.root / "entries" / call_key

    # -- bases --------------------------------------------------------------------------------------------------

    def put_base(self, data: bytes) -> str:
        digest = sha256_hex(data)
        path = self.directory("bases", make=True) / f"{digest}.json"
        if self.read_signed(path, path.with_suffix(".sig")) is None:
            write_atomically(path, data, PRIVATE)
            write_atomically(path.with_suffix(".sig"), self.sign(data), PRIVATE)
        return digest

    def newest_base(self) -> Optional[Base]:
        """The base stored last, if it is signed: what a new server compares its own with, so that an equal one is
        not stored again."""
        try:
            paths = sorted(self.directory("bases").glob("*.json"), key=lambda path: path.stat().st_mtime)
        except OSError:  # none, or one removed while listed
            return None
        return self.base(paths[-1].stem) if paths else None

    def base(self, digest: str) -> Optional[Base]:
        path = self.directory("bases") / f"{digest}.json"
        data = self.read_signed(path, path.with_suffix(".sig"))
        if data is None or sha256_hex(data) != digest:
            return None
        base: Base = json.loads(data)
        return base if base.get("format") == FORMAT else None

    # -- what entries depended on -------------------------------------------------------------------------------

    def put_deps(self, deps: EntryDeps) -> str:
        """Keeps what a build depended on (once per content) and returns its SHA-256, which its entry names."""
        data = json.dumps(deps, sort_keys=True).encode()
        digest = sha256_hex(data)
        path = self.directory("deps", make=True) / f"{digest}.json"
        if self.deps(digest) is None:
            write_atomically(path, data, PRIVATE)
        return digest

    def deps(self, digest: str) -> Optional[EntryDeps]:
        """What an entry depended on, if the file holds the content of that SHA-256 (the signed entry names it)."""
        try:
            data = (self.directory("deps") / f"{digest}.json").read_bytes()
        except OSError:  # missing, or a stray file in the directory's place
            return None
        return json.loads(data) if sha256_hex(data) == digest else None

    # -- entries ------------------------------------------------------------------------------------------------

    def entry(self, variant: Path, call_sha256: Optional[str] = None) -> Optional[Entry]:
        """The variant's entry.json, if it is signed with this cache's key for the call whose pickle has the digest
        ``call_sha256`` (default: the variant's own ``call.pickle``, whose digest the entry must then give)."""
        try:
            data, signature = (variant / "entry.json").read_bytes(), (variant / "entry.sig").read_bytes()
            if call_sha256 is None:
                call_sha256 = sha256_hex((variant / "call.pickle").read_bytes())
        except OSError:  # missing, half removed, or a stray file where a variant would be
            return None
        if not self.signed(_bound(call_sha256, data), signature):
            return None
        entry: Entry = json.loads(data)
        return entry if entry.get("call_sha256") == call_sha256 else None

    def result_bytes(self, variant: Path, entry: Entry, name: Literal["result", "call"] = "result") -> Optional[bytes]:
        """The pickle ``name`` of the variant if its digest is the one the signed entry gives."""
        try:
            data = (variant / f"{name}.pickle").read_bytes()
        except FileNotFoundError:
            return None
        expected = entry["result_sha256"] if name == "result" else entry["call_sha256"]
        return data if sha256_hex(data) == expected else None

    def put(self, call_key: str, partial: Path, new: NewEntry, result: bytes, call: bytes) -> Path:
        """Completes the entry built in ``partial`` (its result, call and log are there) and renames it into place."""
        entry = Entry(**new, result_sha256=sha256_hex(result), call_sha256=sha256_hex(call))
        data = json.dumps(entry, sort_keys=True).encode()
        signature = self.sign(_bound(entry["call_sha256"], data))
        for name, content in [("call.pickle", call), ("entry.json", data), ("entry.sig", signature), ("used", b"")]:
            write_private(partial / name, content)
        for path in partial.iterdir():
            _fsync(path)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o770 & ~umask)  # the group's, as the files in it
        target = self.entry_dir(call_key, make=True) / f"{time.time_ns():020d}-{secrets.token_hex(4)}"
        into_place(partial, target)
        return target

    def remove(self, variant: Path) -> None:
        """Removes a variant: renamed aside first, so that no reader finds half of it."""
        aside = self.partial("removed")
        try:
            os.rename(variant, aside / "variant")
        except OSError:  # removed already, or another user's in a shared cache: then it stays
            pass
        shutil.rmtree(aside, ignore_errors=True)


def _bound(call_sha256: str, data: bytes) -> bytes:
    """What an entry's signature covers: its format, its call and its entry.json."""
    return f"i6_rc_jobs build entry {FORMAT} {call_sha256}\n".encode() + data


def _ours(gid: int) -> bool:
    return gid in (os.getegid(), *os.getgroups())


def _check_directory(path: Path, st: os.stat_result, sticky_allowed: bool) -> None:
    """Refuses a directory of the cache that someone outside the user's groups owns or may write (the root may be
    writable by everyone with the sticky bit)."""
    mode = stat.S_IMODE(st.st_mode)
    others_write = mode & stat.S_IWOTH and not (sticky_allowed and mode & stat.S_ISVTX)
    group_write = mode & stat.S_IWGRP and not _ours(st.st_gid)
    owner = st.st_uid in (os.geteuid(), 0) or _ours(st.st_gid)
    if not stat.S_ISDIR(st.st_mode) or others_write or group_write or not owner:
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a directory"
        raise UnsafeCacheError(
            f"the build cache's {path} ({what}, owner uid {st.st_uid}, gid {st.st_gid}, mode {mode:o}) could be "
            "changed by users outside this user's groups, who could swap what a build made: have its owner or root "
            f"remove it (rm -r {path}), or use a cache of your own (${ENV})"
        )


#: The caches found not writable (said once).
_unwritable: set[Path] = set()


def say_unwritable(root: Path, error: OSError) -> None:
    """Says once per cache and process that builds run without it, naming the path and the error."""
    if root not in _unwritable:
        _unwritable.add(root)
        where = error.filename or root
        logging.warning(
            "build cache: %s cannot be written (%s: %s): building without caching", root, error.strerror or error, where
        )


def touch_used(variant: Path) -> None:
    try:
        os.utime(variant / "used")
    except OSError:  # a cache this user may only read
        pass


def last_used(variant: Path) -> float:
    try:
        return os.stat(variant / "used").st_mtime
    except OSError:  # none, or a stray file in the variant's place
        return 0.0


def write_private(path: Path, data: bytes) -> None:
    """Writes a file of the cache (``PRIVATE``)."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE), "wb") as f:
        f.write(data)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

"""The shared local cache of versions: one bare clone per repository, and one read-only file tree per commit.

Layout under the root (``$I6_RC_IMPORTS_CACHE``, default ``~/.cache/i6_rc_jobs/_imports``), all paths relative to
it, so that the cache can be moved or shared:

- ``git/<host>/<owner>/<name>.git``: a ``git clone --bare`` (branches and tags, not GitHub's pull request refs),
  fetched only when a version is not in it;
- ``trees-v2/<host>/<owner>/<name>/<commit>/``: the files of one commit (with the files that prove them; the trees of
  caches before the proofs, under ``trees/``, are left alone and fetched again), with ``.i6_rc_version`` (commit and date);
- ``locks/...`` and ``tmp/``.

A repository on disk is ``file/<parent>-<digest>/<name>`` in these paths (see :class:`.names.Repo`).

A tree appears by one rename of a complete directory, made under the repository's lock, so that no process ever
sees a partial tree: a process killed while extracting leaves only a directory in ``tmp/``, which is removed later.
A version found among the trees needs no git at all. Everything is made with the modes the umask gives (and the group
of a setgid directory), so that users who share a cache read, and with a group umask add to, what others made."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import socket
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ContextManager, Iterator, Optional

from i6_rc_jobs._imports import git, proof
from i6_rc_jobs._imports.errors import CacheNotWritableError, VersionedImportError
from i6_rc_jobs._imports.names import Repo, Version

ENV = "I6_RC_IMPORTS_CACHE"
#: Where the versions are, under the cache's root: ``trees`` held versions without the files that prove them, which
#: are neither used nor touched (they may be other users').
TREES = "trees-v2"
#: How long a fetch waits for the lock of its repository, in seconds (default 600).
LOCK_TIMEOUT_ENV = "I6_RC_IMPORTS_LOCK_TIMEOUT"


def cache_root() -> Path:
    """``$I6_RC_IMPORTS_CACHE`` or ``~/.cache/i6_rc_jobs/_imports``."""
    return Path(os.environ.get(ENV) or Path.home() / ".cache" / "i6_rc_jobs" / "imports")


class RepoCache:
    """One repository in the cache at ``root``."""

    def __init__(self, root: Path, repo: Repo):
        self.root = root
        self.repo = repo
        self.git_dir = root / "git" / repo.host / repo.owner / f"{repo.name}.git"
        self.trees = root / TREES / repo.host / repo.owner / repo.name

    def tree(self, version: Version) -> tuple[Path, str]:
        """The file tree of ``version`` and its full commit: from the cache, else fetched, checked and extracted."""
        found = self._cached(version)
        if found is not None:
            return found
        try:
            with self._locked():
                found = self._cached(version)  # another process may have made it meanwhile
                if found is not None:
                    return found
                commit, date = self._resolve(version)
                version.check(self.repo, commit, date)
                return self._verified(self._extract(commit, date), version)
        except PermissionError as e:
            raise CacheNotWritableError(
                f"{self.repo} version {version} is not in the import cache {self.root}, which is not writable for "
                f"this user ({e.strerror}: {e.filename}): fetch it as a user who may write there "
                f"(python -m i6_rc_jobs fetch REPO VERSION)"
            ) from None

    def _cached(self, version: Version) -> Optional[tuple[Path, str]]:
        try:
            names = [name for name in os.listdir(self.trees) if name.startswith(version.commit)]
        except FileNotFoundError:
            return None
        if len(names) > 1:
            raise VersionedImportError(f"{self.repo} version {version}: the commit prefix is ambiguous: {names}")
        if not names:
            return None
        return self._verified(self.trees / names[0], version)

    def _verified(self, tree: Path, version: Version) -> tuple[Path, str]:
        """``tree`` and its commit, once its files are proven to be those of ``version`` (see :mod:`.proof`)."""
        commit, date = proof.verify(tree, f"{self.repo} version {version}")
        version.check(self.repo, commit, date)
        return tree, commit

    def _locked(self) -> ContextManager[bool]:
        timeout = float(os.environ.get(LOCK_TIMEOUT_ENV) or 600)
        return locked(
            self.root / "locks" / self.repo.host / self.repo.owner / f"{self.repo.name}.lock", timeout=timeout
        )

    def _resolve(self, version: Version) -> tuple[str, str]:
        """(full commit, committer date YYYYMMDDHHMMSS in the commit's time zone), fetching once if unknown. A commit
        whose tree lacks objects (a fetch killed after it wrote the commit but not all files) is fetched again, anew,
        as a clone would: the objects git has would otherwise tell the origin not to send the missing ones."""
        what = f"{self.repo} version {version}"
        if not self.git_dir.exists():
            self._clone(self.git_dir, "--bare", what=what)
        git.check_config(str(self.git_dir), self.repo.url, what)
        found = self._commit(version)
        if found is None or not self._complete(found[0]):
            refs = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")  # a bare clone has no fetch refspec
            again = () if found is None else ("--refetch",)
            git.git("--git-dir", str(self.git_dir), "fetch", "--quiet", *again, "origin", *refs, what=what)
            found = self._commit(version)
        if found is None:
            raise VersionedImportError(f"{what}: no commit {version.commit} in {self.repo.url}")
        if not self._complete(found[0]):
            raise VersionedImportError(f"{what}: commit {found[0]} lacks objects of its files even after fetching")
        return found

    def working_copy(self, root: Path) -> Path:
        """The development working copy of the repository under ``root`` (cloned there on first use)."""
        path = root / self.repo.host / self.repo.owner / self.repo.name
        if not path.exists():
            with self._locked():
                if not path.exists():
                    self._clone(path, what=f"{self.repo} development working copy")
        return path

    def _clone(self, target: Path, *options: str, what: str) -> None:
        """Clones into ``target`` by way of a temporary directory beside it: a killed clone leaves no repository."""
        partial = partial_dir(target.parent, target.name)
        try:
            git.git("clone", *options, "--quiet", self.repo.url, str(partial), what=what)
            into_place(partial, target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    def _commit(self, version: Version) -> Optional[tuple[str, str]]:
        """(full commit, date) of the version's commit prefix, None if no commit has it. Only commits are looked at,
        never refs: a branch or tag named like the prefix (which ``<prefix>^{commit}`` would take) is no version."""
        what, git_dir = f"{self.repo} version {version}", str(self.git_dir)
        objects = git.git("--git-dir", git_dir, "rev-parse", f"--disambiguate={version.commit}", what=what)
        types = git.git("--git-dir", git_dir, "cat-file", "--batch-check", input=objects, what=what).splitlines()
        commits = [line.split()[0] for line in types if line.split()[1] == "commit"]
        if len(commits) > 1:
            raise VersionedImportError(f"{what}: the commit prefix is ambiguous: commits {', '.join(sorted(commits))}")
        if not commits:
            return None
        commit, date = git.git("--git-dir", git_dir, *git.COMMIT_AND_DATE, commits[0], "--", what=what).split()
        return commit, date

    def _complete(self, commit: str) -> bool:
        """Whether git has every object of the commit's tree, so that it can be extracted."""
        listing = ("rev-list", "--objects", "--no-walk", "--missing=print", commit)  # its tree, not its history
        listed = git.git("--git-dir", str(self.git_dir), *listing, what=f"{self.repo} commit {commit}")
        return not any(line.startswith("?") for line in listed.splitlines())

    def _extract(self, commit: str, date: str) -> Path:
        partial = partial_dir(self.root / "tmp", "tree")
        try:
            what = f"{self.repo} commit {commit}"
            commit_object, listing = git.extract(str(self.git_dir), commit, str(partial), what=what)
            (partial / proof.STAMP).write_text(f"{commit} {date}\n")
            (partial / proof.COMMIT).write_bytes(commit_object)
            (partial / proof.LISTING).write_bytes(listing)
            _seal(partial, what)
            self.trees.mkdir(parents=True, exist_ok=True)
            if into_place(partial, self.trees / commit):
                os.chmod(self.trees / commit, 0o555)  # after the rename, which a directory not writable cannot make
        finally:
            remove(partial)
        return self.trees / commit


@contextmanager
def locked(lock: Path, wait: bool = True, timeout: Optional[float] = None) -> Iterator[bool]:
    """Holds an exclusive lock on the file ``lock`` (made if missing) while the block runs; yields whether it holds it,
    which only ``wait=False`` makes False (another process holds it). The kernel drops the lock of a killed process;
    a lock that a process which has ended still holds (through a child that inherited it) is taken over by removing
    the file. Anyone who may read the file may lock it, so a wait ends after ``timeout`` seconds, with an error that
    names the holder. The holder writes who it is into the file (see :func:`holder`) and empties it when it lets go."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        f = open(lock, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            if not wait:
                yield False
                return
            _wait_for(lock, deadline, timeout)
            continue
        with contextlib.suppress(FileNotFoundError):
            if os.stat(lock).st_ino == os.fstat(f.fileno()).st_ino:
                break  # not a file taken over (removed) meanwhile
        f.close()
    try:
        f.truncate(0)
        f.write(f"{os.getpid()} {_user()} {socket.gethostname()} {time.time()}\n")
        f.flush()
        yield True
    finally:
        f.truncate(0)
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _wait_for(lock: Path, deadline: Optional[float], timeout: Optional[float]) -> None:
    """Waits a little for the lock's holder; takes over from one that has ended; refuses to wait past ``deadline``."""
    who = holder(lock)
    if who is not None and who.dead():
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass
        except PermissionError:
            raise VersionedImportError(
                f"the lock {lock} is held by {who}, which has ended, and this user may not remove it: ask its owner "
                f"to remove it (a lock others cannot remove when it is left behind is no lock to share)"
            ) from None
        return
    if deadline is not None and time.monotonic() > deadline:
        raise VersionedImportError(
            f"waited {timeout:.0f} s for the lock {lock}, held by {who or 'a process that did not say who it is'}: "
            f"end that process if it hangs, or set ${LOCK_TIMEOUT_ENV} to wait longer"
        )
    time.sleep(0.05)


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as it wrote into the lock file."""

    pid: int
    user: str
    host: str
    since: float

    def dead(self) -> bool:
        """Whether the holder is a process of this host that has ended (its lock is then held by a process it
        started, or by none)."""
        return self.host == socket.gethostname() and not _alive(self.pid)

    def __str__(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host} since {since} (user {self.user})"


def holder(lock: Path) -> Optional[Holder]:
    """Who holds the lock: as it wrote, else (a process that locked it and said nothing) the process of this host
    that the kernel lists as holding it, else None (not held, or held from another host)."""
    try:
        pid, user, host, since = lock.read_text().split()
        return Holder(int(pid), user, host, float(since))
    except (OSError, ValueError):
        pass
    try:
        status = lock.stat()
        device = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == device:
                owner = os.stat(f"/proc/{fields[4]}").st_uid
                return Holder(int(fields[4]), _user(owner), socket.gethostname(), status.st_mtime)
    except (OSError, ValueError):
        pass
    return None


def _user(uid: Optional[int] = None) -> str:
    uid = os.getuid() if uid is None else uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _seal(tree: Path, what: str) -> None:
    """Files of a version are not to be edited, added or removed, not even by a group that shares the cache: files
    become 0o444 (0o555 if executable), directories 0o555. A symbolic link out of the tree (absolute, or up past
    its root) is refused: what it reaches is no part of the version."""
    root = os.path.realpath(tree)
    for directory, subdirectories, files in os.walk(tree, topdown=False):
        for name, is_file in [(name, False) for name in subdirectories] + [(name, True) for name in files]:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                target = os.path.realpath(path)  # the whole tree is there: chains of links resolve as they will
                if os.path.commonpath([root, target]) != root:
                    link = os.path.relpath(path, tree)
                    raise VersionedImportError(f"{what}: the symbolic link {link!r} points out of the repository")
            else:
                os.chmod(path, 0o555 if not is_file or os.stat(path).st_mode & stat.S_IXUSR else 0o444)


def remove(tree: Path) -> None:
    """Removes ``tree`` if it is there, sealed or not."""
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
        if len(parts) >= 3 and ".".join(parts[:-2]) == host and parts[-2].isdigit() and not _alive(int(parts[-2])):
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True

"""The shared local cache of versions: one bare clone per repository, and one read-only file tree per commit.

Layout under the root (``$I6_RC_IMPORTS_CACHE``, default ``~/.cache/i6_rc_jobs/imports``), all paths relative to
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

import os
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from i6_rc_jobs._util.atomic_dir import into_place, partial_dir, remove
from i6_rc_jobs._util.locks import LockError, LockTimeoutError, locked
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
    """``$I6_RC_IMPORTS_CACHE`` or ``~/.cache/i6_rc_jobs/imports``."""
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

    @contextmanager
    def _locked(self) -> Iterator[bool]:
        """The repository's lock, held while the block runs; a lock that cannot be had is a versioned import's error,
        which names the setting of the wait."""
        timeout = float(os.environ.get(LOCK_TIMEOUT_ENV) or 600)
        lock = self.root / "locks" / self.repo.host / self.repo.owner / f"{self.repo.name}.lock"
        try:
            with locked(lock, timeout=timeout) as held:
                yield held
        except LockTimeoutError as e:
            raise VersionedImportError(f"{e}, or set ${LOCK_TIMEOUT_ENV} to wait longer") from None
        except LockError as e:
            raise VersionedImportError(str(e)) from None

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

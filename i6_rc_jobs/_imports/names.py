"""What a versioned import names: a repository, an immutable version ``<date>-<commit>`` and a path in it, checked
as text before anything touches the disk or the network."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from i6_rc_jobs._imports.errors import VersionedImportError

#: The host of repositories on disk in the cache (no host of a URL: those have a dot).
LOCAL_HOST = "file"
_REPO = re.compile(r"^(?P<host>[a-z0-9-]+(\.[a-z0-9-]+)+)/(?P<owner>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+)$")
#: RETURNN's format: the commit's date (committer date in its own time zone) as YYYYMMDD, optionally with hours,
#: minutes, seconds; then at least 7 hex digits of the commit.
_VERSION = re.compile(r"^(?P<date>\d{8}(\d{2}(\d{2}(\d{2})?)?)?)-(?P<commit>[0-9a-f]{7,40})$")


@dataclass(frozen=True)
class Repo:
    """``host/owner/name``, e.g. ``github.com/rwth-i6/returnn_common``; fetched from ``https://host/owner/name``
    (git's ``url.<base>.insteadOf`` maps it to a mirror or ssh). A repository on this machine's disk (an absolute
    path or a ``file://`` URL) is ``file/<owner>/<name>``: its owner is its parent directory's name and a digest of
    its path, so that two repositories of one name have their own place in the cache and names of their own."""

    host: str
    owner: str
    name: str
    #: The absolute path of a repository on disk, "" for one fetched from ``https://host/owner/name``.
    path: str = ""

    @classmethod
    def parse(cls, text: str) -> Repo:
        if isinstance(text, str) and text.startswith(("/", "~", "file://")):
            return cls._local(text)
        match = _REPO.match(text.removesuffix(".git")) if isinstance(text, str) else None
        if match is None or match["owner"] in (".", "..") or match["name"] in (".", ".."):  # cache directories
            raise VersionedImportError(
                f"repository {text!r}: expected host/owner/name, e.g. github.com/rwth-i6/returnn, or a repository on "
                f"disk as an absolute path or a file:// URL, e.g. /data/group/models.git"
            )
        return cls(match["host"], match["owner"], match["name"])

    @classmethod
    def _local(cls, text: str) -> Repo:
        path = text.removeprefix("file://")
        if text.startswith("file://") and not path.startswith("/"):
            raise VersionedImportError(f"repository {text!r}: a file:// URL names an absolute path: file:///path")
        path = os.path.normpath(os.path.abspath(os.path.expanduser(path)))
        parent, name = os.path.split(path)
        name = name.removesuffix(".git")
        if not name or name in (".", ".."):
            raise VersionedImportError(f"repository {text!r}: expected the directory of a git repository")
        digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        return cls(LOCAL_HOST, f"{os.path.basename(parent)}-{digest}", name, path)

    def __str__(self) -> str:
        return self.path or f"{self.host}/{self.owner}/{self.name}"

    @property
    def url(self) -> str:
        return f"file://{self.path}" if self.path else f"https://{self.host}/{self.owner}/{self.name}"


@dataclass(frozen=True)
class Version:
    """``<date>-<commit>``: a commit prefix, and the date it must have (so that a typo cannot name another commit)."""

    date: str
    commit: str

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _VERSION.match(text) if isinstance(text, str) else None
        if match is None:
            raise VersionedImportError(
                f"version {text!r}: expected <date>-<commit>, e.g. 20221031-3bd01ac8d7b2 (date YYYYMMDD[HH[MM[SS]]], "
                f"at least 7 lowercase hex digits of the commit)"
            )
        return cls(match["date"], match["commit"])

    def __str__(self) -> str:
        return f"{self.date}-{self.commit}"

    def check(self, repo: Repo, full_commit: str, commit_date: str) -> None:
        """Refuses a resolved commit whose date does not start with this version's date."""
        if not full_commit.startswith(self.commit) or not commit_date.startswith(self.date):
            raise VersionedImportError(
                f"{repo} version {self}: commit {full_commit} is dated {commit_date}, not {self.date}: "
                f"the version would be {commit_date[:8]}-{full_commit[:12]}"
            )


def check_path(path: str) -> tuple[str, ...]:
    """The parts of a relative path inside a repository; refuses absolute paths, ``..`` and empty parts."""
    parts = tuple(path.split("/")) if isinstance(path, str) and path else ()
    if not parts or path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise VersionedImportError(f"path {path!r}: expected a relative path inside the repository, e.g. nn/base.py")
    return parts

"""Who a pinned library is (returnn, i6_models, torch, ...): not its files, which are many and the same for everyone
at one commit, but a name that fixes them, and only where such a name can be trusted:

- a git checkout whose loaded files are as committed: ``git <commit>``;
- a distribution installed from a package index (no ``direct_url.json``): ``version <version>``, since an index never
  serves other files under a released version; pip's record of a VCS install names its ``git <commit>``;
- anything else (a copy without ``.git``, local edits, an editable or directory install, no version): ``files
  <digest>`` of the files it loaded, since a version string there names whatever the files say today.

The files each library loaded are kept too (relative to its package, with their SHA-256): a job checks them where it
runs (:mod:`i6_rc_jobs._serialization.pinned_code`)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import metadata
from typing import Any, Optional

from i6_rc_jobs._util.loaded_modules import module_file


def package_root(module: Any) -> Optional[str]:
    """The directory of a top-level module's package (with a trailing separator), or None if it has no file."""
    path = module_file(module)
    return os.path.dirname(os.path.realpath(path)) + os.sep if path else None


def loaded_files(name: str) -> dict[str, str]:
    """The files of the loaded modules of top-level package ``name`` that lie in its package directory, relative to
    it, with the SHA-256 of each."""
    root = package_root(sys.modules[name])
    if root is None:
        return {}
    files = {}
    for module_name, module in list(sys.modules.items()):
        if module_name != name and not module_name.startswith(name + "."):
            continue
        path = module_file(module)
        if path and os.path.realpath(path).startswith(root):
            with open(path, "rb") as f:
                files[os.path.relpath(os.path.realpath(path), root)] = hashlib.sha256(f.read()).hexdigest()
    return dict(sorted(files.items()))


def identity(name: str, files: dict[str, str], installed: tuple[str, ...]) -> str:
    """The identity of loaded top-level package ``name`` whose loaded ``files`` are those given; ``installed`` are
    the directories of the Python's installed packages."""
    root = package_root(sys.modules[name])
    if root and not root.startswith(installed):
        top = os.path.dirname(root.rstrip(os.sep))
        commit = _git_commit(top)
        if commit and not _changed(top, root, files):
            return f"git {commit}"
    elif root:
        installed_as = _installed_identity(name)
        if installed_as:
            return installed_as
    return "files " + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def _installed_identity(name: str) -> Optional[str]:
    """``version <v>`` of a distribution installed from an index, ``git <commit>`` of one pip installed from a git
    URL; None for a local directory, an editable install or no distribution."""
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    direct = distribution.read_text("direct_url.json")
    if direct is None:
        return f"version {distribution.version}"
    commit = json.loads(direct).get("vcs_info", {}).get("commit_id")
    return f"git {commit}" if commit else None


def _changed(top: str, root: str, files: dict[str, str]) -> bool:
    """Whether any of ``files`` (relative to ``root``) differs from the commit of the checkout at ``top``, or is not
    committed; git cannot tell: changed (deny by default)."""
    paths = [os.path.join(root, path) for path in files]
    try:
        done = subprocess.run(
            ["git", "-C", top, "status", "--porcelain", "--untracked-files=all", "--ignored=matching", "--", *paths],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return True
    return done.returncode != 0 or bool(done.stdout.strip())


def _git_commit(directory: str) -> Optional[str]:
    """The commit HEAD names in the git checkout whose top is ``directory`` (a worktree's too), or None."""
    dot_git = os.path.join(directory, ".git")
    if os.path.isdir(dot_git):
        return _head(dot_git, dot_git)
    if not os.path.isfile(dot_git):
        return None
    with open(dot_git) as f:
        git_dir = os.path.join(directory, f.read().strip().removeprefix("gitdir: "))
    common = os.path.join(git_dir, "commondir")
    if os.path.isfile(common):
        with open(common) as f:
            return _head(git_dir, os.path.join(git_dir, f.read().strip()))
    return _head(git_dir, git_dir)


def _head(git_dir: str, common_dir: str) -> Optional[str]:
    with open(os.path.join(git_dir, "HEAD")) as f:
        head = f.read().strip()
    if not head.startswith("ref: "):
        return head
    ref = head.removeprefix("ref: ")
    for base in (git_dir, common_dir):
        loose = os.path.join(base, ref)
        if os.path.isfile(loose):
            with open(loose) as f:
                return f.read().strip()
    packed = os.path.join(common_dir, "packed-refs")
    if os.path.isfile(packed):
        with open(packed) as f:
            for line in f:
                commit, _, name = line.strip().partition(" ")
                if name == ref:
                    return commit
    return None

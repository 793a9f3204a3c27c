"""What proves that a tree in the cache is the version a user wrote, checkable without git: the commit object (whose
SHA-1 is the commit, and which names the tree and the date), and the listing of that tree (``git ls-tree -r``), from
which the tree's id is computed in Python as git does. A tree whose files differ from the listing, or a listing or
commit object that does not hash to what it claims, is refused: anyone who may write to a shared cache could
otherwise make others run code they never named."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from i6_rc_jobs._imports import proven
from i6_rc_jobs._imports.errors import VersionedImportError

#: The file in each tree that says which commit it is and when that was committed (for listings; not a proof).
STAMP = ".i6_rc_version"
#: The commit object, as git stores it (without its header).
COMMIT = ".i6_rc_commit"
#: The tree's listing: ``<mode> <type> <id>\t<path>\0`` per entry, as ``git ls-tree -r -z --full-tree`` prints it.
LISTING = ".i6_rc_tree"
#: Entries of a listing: path -> (git mode, object id).
Listing = dict[str, tuple[str, str]]
_verified: dict[Path, Listing] = {}  # trees checked in this process -> their listing


def object_id(kind: str, data: bytes) -> str:
    """The git object id (SHA-1) of an object of ``kind`` (blob, tree, commit) with the contents ``data``."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()


def parse_listing(data: bytes) -> Listing:
    entries = {}
    for entry in data.split(b"\0"):
        if entry:
            head, _, path = entry.partition(b"\t")
            mode, _, oid = head.decode().split(" ")
            entries[os.fsdecode(path)] = (mode, oid)
    return entries


def tree_id(listing: Listing) -> str:
    """The id git gives the tree of these entries (its subtrees made from the paths)."""
    root: dict = {}
    for path, entry in listing.items():
        *directories, name = path.split("/")
        node = root
        for directory in directories:
            node = node.setdefault(directory, {})
        node[name] = entry
    return _tree(root)


def _tree(node: dict) -> str:
    # git sorts a tree's entries by name, a subtree's name as if it ended in "/"
    names = sorted(node, key=lambda name: os.fsencode(name) + (b"/" if isinstance(node[name], dict) else b""))
    data = b""
    for name in names:
        child = node[name]
        mode, oid = ("40000", _tree(child)) if isinstance(child, dict) else child
        data += b"%s %s\0" % (mode.encode(), os.fsencode(name)) + bytes.fromhex(oid)
    return object_id("tree", data)


def commit_fields(data: bytes) -> tuple[str, str]:
    """(tree id, committer date YYYYMMDDHHMMSS in the commit's own time zone) of a commit object."""
    headers = dict(line.split(b" ", 1) for line in data.split(b"\n\n", 1)[0].split(b"\n") if b" " in line)
    *_, seconds, zone = headers[b"committer"].decode(errors="replace").split(" ")
    sign = -1 if zone.startswith("-") else 1
    offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])) * sign
    date = datetime.fromtimestamp(int(seconds), timezone(offset)).strftime("%Y%m%d%H%M%S")
    return headers[b"tree"].decode(), date


def verify(tree: Path, what: str) -> tuple[str, str]:
    """(full commit, date) of the tree ``tree`` (named by its full commit) once its files are checked: the commit
    object hashes to that commit, the listing to the commit's tree, and every file, link and directory is the
    listing's. Checked once per process, and in full only where no proof this user kept holds (:mod:`.proven`);
    refuses in one line naming ``what``, the file and the fix."""
    commit = tree.name
    fix = f"remove {tree} (as its owner: chmod -R u+w, rm -rf) and fetch the version again"
    try:
        commit_data, listing_data = (tree / COMMIT).read_bytes(), (tree / LISTING).read_bytes()
    except FileNotFoundError as e:
        raise VersionedImportError(
            f"{what}: {tree} lacks {Path(e.filename).name}, which proves its files: {fix}"
        ) from None
    if object_id("commit", commit_data) != commit:
        raise VersionedImportError(f"{what}: {COMMIT} in {tree} is not the commit {commit}: {fix}")
    commit_tree, date = commit_fields(commit_data)
    if tree in _verified:
        return commit, date
    if proven.holds(tree, listing_data):  # checked in full by this user before, unchanged since
        _verified[tree] = parse_listing(listing_data)
        return commit, date
    began_ns = time.time_ns()
    stats = proven.snapshot(tree)  # before the files are read: a change while they are read is seen later
    listing = parse_listing(listing_data)
    if tree_id(listing) != commit_tree:
        raise VersionedImportError(f"{what}: {LISTING} in {tree} is not the tree of commit {commit}: {fix}")
    found = _on_disk(tree, listing)
    for path in sorted(set(found) | set(listing)):
        if found.get(path) != listing.get(path):
            problem = "is not the commit's" if path in listing and path in found else "is not in the commit"
            problem = "is missing" if path not in found else problem
            raise VersionedImportError(f"{what}: {path!r} in {tree} {problem}: {fix}")
    _verified[tree] = listing
    proven.keep(tree, listing_data, stats, began_ns)
    return commit, date


def verified_listing(tree: Path, what: str) -> Listing:
    """The listing of ``tree``, verified (see :func:`verify`)."""
    verify(tree, what)
    return _verified[tree]


def _on_disk(tree: Path, listing: Listing) -> Listing:
    """The entries of the files and links under ``tree`` as a listing has them; a directory that a listing has as a
    submodule (which git leaves empty) is one, any other empty directory an entry that no listing has."""
    found: Listing = {}
    for directory, subdirectories, files in os.walk(tree):
        relative = os.path.relpath(directory, tree)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        for name in subdirectories + files:
            path, full = prefix + name, os.path.join(directory, name)
            if not prefix and name in (COMMIT, LISTING, STAMP):
                continue
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                found[path] = ("120000", object_id("blob", os.fsencode(os.readlink(full))))
            elif stat.S_ISDIR(mode):
                if listing.get(path, ("",))[0] == "160000":
                    found[path] = listing[path] if not os.listdir(full) else ("40000", "not empty")
                    subdirectories.remove(name)
                elif not os.listdir(full):
                    found[path] = ("40000", "empty")
            elif stat.S_ISREG(mode):
                with open(full, "rb") as f:
                    found[path] = ("100755" if mode & stat.S_IXUSR else "100644", object_id("blob", f.read()))
            else:
                found[path] = ("?", "not a file")
    return found

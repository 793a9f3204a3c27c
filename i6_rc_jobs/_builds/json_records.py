"""The JSON records of builds, as typed dicts (they are read from and written to disk as they are, so that the files
stay what they were): what the cache stores (a server's base, ``bases/<digest>.json``; a build's entry,
``entry.json``), what a build process leaves for the manager (``deps.json``), and the messages between the manager
and the build server (:mod:`.server`)."""

from __future__ import annotations

from typing import Optional, TypedDict

from i6_rc_jobs._builds.fingerprint import Fingerprint

#: A module name looked for: [name, the directories searched, where it resolved (None: nowhere)].
ModuleProbe = list


class Recorded(TypedDict):
    """What a build (or a server, before it forks builds) depended on, each kind as :mod:`.record` records it, and
    when it was recorded (the fingerprints' stats are trusted only for files changed well before)."""

    files: dict[str, Fingerprint]
    probes: dict[str, Optional[str]]
    listings: dict[str, Optional[str]]
    modules: list[ModuleProbe]
    env: dict[str, Optional[str]]
    recorded_ns: int


class Python(TypedDict):
    executable: str
    version: str


class Base(Recorded):
    """What a build server had loaded when it forked its builds; shared by the entries of those builds."""

    format: int
    python: Python
    sys_path: list[str]
    cwd: str
    changed_while_loading: list[str]


class Deps(Recorded):
    """What a build added to its server's base, and its result's Sisyphus hash."""

    sis_hash: str
    changed_while_building: list[str]


class EntryDeps(TypedDict):
    """What a build depended on beyond its base (each kind as in :class:`Recorded`), kept by its SHA-256
    (``deps/<digest>.json``): builds of one model with other arguments depend on the same files, and share it."""

    files: dict[str, Fingerprint]
    probes: dict[str, Optional[str]]
    listings: dict[str, Optional[str]]
    modules: list[ModuleProbe]
    env: dict[str, Optional[str]]


class NewEntry(TypedDict):
    """An entry as the manager makes it from a build's deps, before the store adds the digests it signs: its
    dependencies are ``deps`` (the SHA-256 of their :class:`EntryDeps`), recorded at ``recorded_ns``."""

    builder: str
    arguments: str
    key: str
    base: str
    deps: str
    recorded_ns: int
    sis_hash: str


class Entry(NewEntry):
    """An entry as stored (``entry.json``): the digests of its pickles are what its signature binds."""

    result_sha256: str
    call_sha256: str


class Setup(TypedDict):
    """The manager's first message to a build server."""

    sys_path: list[str]
    preload: list[str]
    results: list[str]
    base: str
    known: Optional[Base]


class Request(TypedDict):
    """The manager's request of one build."""

    id: int
    dir: str
    started_ns: int
    environ: dict[str, str]
    workers: int

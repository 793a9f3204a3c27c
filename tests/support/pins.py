"""The commits ``rwth-i6.lock`` pins the rwth-i6 projects to, for the tests and the benchmarks."""

from __future__ import annotations

import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    """Project name -> pinned commit."""
    lines = (REPO / "rwth-i6.lock").read_text().splitlines()
    return {parts[0]: parts[2] for parts in map(str.split, lines) if len(parts) == 3 and not parts[0].startswith("#")}


def version(name: str) -> str:
    """The pinned commit of ``name`` as a versioned import names it, ``<date>-<commit>`` (from its checkout)."""
    commit = pins()[name]
    date = subprocess.run(
        ["git", "-C", str(REPO / ".deps" / "src" / name), "log", "-1", "--format=%cd", "--date=format:%Y%m%d", commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{date}-{commit[:12]}"

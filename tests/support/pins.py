"""The commits ``rwth-i6.lock`` pins the rwth-i6 projects to, for the tests and the benchmarks."""

from __future__ import annotations

import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    """Project name -> pinned commit."""
    lines = (REPO / "rwth-i6.lock").read_text().splitlines()
    return {parts[0]: parts[2] for parts in map(str.split, lines) if len(parts) == 3 and not parts[0].startswith("#")}


def version(name: str, back: int = 0) -> str:
    """The pinned commit of ``name`` (or the one ``back`` commits before it, first parents) as a versioned import
    names it, ``<date>-<commit>`` (from its checkout)."""
    commit, date = subprocess.run(
        ["git", "-C", str(REPO / ".deps" / "src" / name), "log", "-1", "--format=%H %cd", "--date=format:%Y%m%d"]
        + [f"{pins()[name]}~{back}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return f"{date}-{commit[:12]}"

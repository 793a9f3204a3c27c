"""The fenced code blocks of the Markdown pages (README.md, docs/**/*.md), so that the tests can run every example.

A block says what it is by its language: ``python`` blocks run (all of a page's in order, as one program, after the
pages it continues: ``<!-- examples continue: other.md -->``), ``bash``/``console``/``text`` blocks are commands,
their output or other text, and ``{directive}`` blocks are Sphinx's. A block without one of these is an error, so
that no example goes untested by oversight."""

from __future__ import annotations

import json
import pathlib
import re
import textwrap
from typing import NamedTuple

from tests.support.sisyphus_setup import REPO

RUN = "python"
NOT_RUN = ("bash", "console", "text")
CONTINUES = re.compile(r"<!-- examples continue: (\S+) -->")
_FENCE = re.compile(r"^( *)(`{3,})(.*)$")


class Block(NamedTuple):
    path: pathlib.Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str


def pages() -> list[pathlib.Path]:
    """README.md and every page of the documentation."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: pathlib.Path) -> list[Block]:
    """The fenced blocks of a page, each dedented by its fence's indentation (fences may sit in list items)."""
    found, lines, i = [], path.read_text().split("\n"), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening.groups()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == fence and lines[j].startswith(indent))
        code = textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n"
        found.append(Block(path, i + 1, info.strip().split(" ")[0], code))
        i = end + 1
    return found


def unmarked(path: pathlib.Path) -> list[str]:
    """``path:line`` of each block that says neither that it runs nor what else it is."""
    return [
        f"{b.path.relative_to(REPO)}:{b.line}: {b.language or 'no language'!r}"
        for b in blocks(path)
        if b.language not in (RUN, *NOT_RUN) and not b.language.startswith("{")
    ]


def continued(path: pathlib.Path) -> list[pathlib.Path]:
    """The pages whose examples this page's go on from, the first one first."""
    before = CONTINUES.search(path.read_text())
    if not before:
        return []
    page = (path.parent / before.group(1)).resolve()
    return [*continued(page), page]


def program(path: pathlib.Path) -> list[Block]:
    """The page's python blocks in order, after those of the pages it continues."""
    return [b for page in (*continued(path), path) for b in blocks(page) if b.language == RUN]


#: Runs blocks given as JSON ``[[name, code], ...]`` on stdin in one namespace, each compiled under its ``page:line``
#: so that a traceback names the page and block it comes from.
RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for name, code in json.load(sys.stdin):
    exec(compile(code, name, "exec"), namespace)
print("examples ran")
"""


def runner_input(program_blocks: list[Block]) -> str:
    """The stdin of :data:`RUNNER` for these blocks."""
    return json.dumps([[f"{b.path.relative_to(REPO)}:{b.line}", b.code] for b in program_blocks])

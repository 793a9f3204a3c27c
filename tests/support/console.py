"""The ``console`` blocks of the Markdown pages: command lines with their output, each produced by a real run.

A console block follows a marker naming the scenario that makes its inputs (a function in
``tests/support/console_scenarios.py``) and the exit status the page promises::

    <!-- console: hash-diff-dims, exit status 1 -->

The block is ``$ command`` lines, each followed by its output. The test runs each command in the directory the
scenario made and compares; with ``DOCS_UPDATE=1`` it writes the real output into the page instead."""

from __future__ import annotations

import difflib
import pathlib
import re
from typing import NamedTuple

from tests.support.markdown import blocks
from tests.support.sisyphus_setup import REPO

MARKER = re.compile(r"<!-- console: (?P<scenario>[\w-]+), exit status (?P<status>\d+) -->\s*$")
PROMPT = "$ "


class Command(NamedTuple):
    line: str  # as typed, without the prompt
    output: str  # as the page has it, each line ending with a newline


class Example(NamedTuple):
    path: pathlib.Path
    line: int  # of the opening fence, 1-based
    scenario: str
    status: int
    commands: list[Command]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def examples(path: pathlib.Path) -> tuple[list[Example], list[str]]:
    """The page's console examples, and ``page:line`` of each console block without a marker before it."""
    lines, found, unmarked = path.read_text().split("\n"), [], []
    for block in blocks(path):
        if block.language != "console":
            continue
        before = next((lines[i] for i in range(block.line - 2, -1, -1) if lines[i].strip()), "")
        marker = MARKER.match(before.strip())
        if marker is None:
            unmarked.append(f"{path.relative_to(REPO)}:{block.line}: no '<!-- console: SCENARIO, exit status N -->'")
            continue
        commands: list[Command] = []
        for text in block.code.splitlines(keepends=True):
            if text.startswith(PROMPT):
                commands.append(Command(text[len(PROMPT) :].strip(), ""))
            elif commands:
                commands[-1] = commands[-1]._replace(output=commands[-1].output + text)
        found.append(Example(path, block.line, marker["scenario"], int(marker["status"]), commands))
    return found, unmarked


def mismatch(example: Example, command: Command, real: str) -> str:
    """What a test failure says: where, the diff, and how to take the real output."""
    diff = difflib.unified_diff(
        command.output.splitlines(), real.splitlines(), f"{example.where} (the page)", "a real run", lineterm=""
    )
    return (
        f"{example.where}: `{command.line}` printed other than the page says (scenario {example.scenario!r} of "
        "tests/support/console_scenarios.py):\n" + "\n".join(diff) + "\nIf the real output is right: "
        "DOCS_UPDATE=1 .venv/bin/python -m pytest tests/test_docs.py -k console writes it into the page; then read "
        "the prose around the block."
    )


def update(example: Example, outputs: list[str]) -> None:
    """Write the real outputs into the page's block, in place."""
    lines = example.path.read_text().split("\n")
    indent = re.match(r" *", lines[example.line - 1]).group()
    end = next(j for j in range(example.line, len(lines)) if lines[j].strip().startswith("```"))
    body = [f"{PROMPT}{c.line}\n{out}" for c, out in zip(example.commands, outputs)]
    new = [indent + text if text else text for text in "".join(body).rstrip("\n").split("\n")]
    example.path.write_text("\n".join(lines[: example.line] + new + lines[end:]))

"""``{cli-reference}``: a section per command of ``python -m i6_rc_jobs`` (``i6_rc_jobs.__main__.COMMANDS``) made from
what the command runs by (its ``parser()``, ``Exit`` and ``EXAMPLE``, see ``i6_rc_jobs/cli/command.py``), so that
the page cannot drift from the code and a new command appears on it without an edit."""

from __future__ import annotations

import argparse
import importlib
import re
from types import ModuleType

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from i6_rc_jobs.__main__ import COMMANDS
from i6_rc_jobs.cli.command import ExitStatus

_LITERAL = re.compile(r"``(.+?)``")


def command(name: str) -> ModuleType:
    """The command's module, refused in one line if it lacks what the reference is made from."""
    module = importlib.import_module(COMMANDS[name])
    lacking = [
        attribute
        for attribute, ok in (
            ("parser()", callable(getattr(module, "parser", None))),
            (
                "Exit (an ExitStatus)",
                isinstance(getattr(module, "Exit", None), type) and issubclass(module.Exit, ExitStatus),
            ),
            ("EXAMPLE", isinstance(getattr(module, "EXAMPLE", None), str)),
        )
        if not ok
    ]
    if lacking:
        raise ValueError(
            f"{module.__name__} (command {name!r}) lacks {', '.join(lacking)}: see i6_rc_jobs/cli/command.py"
        )
    return module


def _text(text: str) -> list[nodes.Node]:
    """Text with its ``literals``."""
    parts = _LITERAL.split(text)
    return [nodes.literal(part, part) if i % 2 else nodes.Text(part) for i, part in enumerate(parts) if part]


def _argument(action: argparse.Action) -> nodes.definition_list_item:
    """An argument as the page lists it: its name or options (with the value's metavar), its help and default."""
    if action.option_strings:
        term = ", ".join(action.option_strings) + (
            f" {action.metavar or action.dest.upper()}" if action.nargs != 0 else ""
        )
    else:
        term = action.metavar or action.dest
        term = " ".join([term] * action.nargs) if isinstance(action.nargs, int) else term
        term += " ..." if action.nargs in ("*", "+") else ""
    said = action.help or ""
    if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
        default = " ".join(map(str, action.default)) if isinstance(action.default, list) else str(action.default)
        said += f"{'; ' if said else ''}default: ``{default}``"
    return nodes.definition_list_item(
        "", nodes.term(term, "", nodes.literal(term, term)), nodes.definition("", nodes.paragraph("", "", *_text(said)))
    )


class CliReference(SphinxDirective):
    """Every command: what it does, usage, arguments, exit statuses and an example."""

    def run(self) -> list[nodes.Node]:
        sections = []
        for name in COMMANDS:
            module = command(name)
            parser = module.parser()
            section = nodes.section(ids=[nodes.make_id(f"command-{name}")], names=[f"command {name}"])
            section += nodes.title(name, "", nodes.literal(name, name))
            section += nodes.paragraph("", "", *_text(parser.description or ""))
            usage = parser.format_usage().removeprefix("usage: ").strip()
            section += nodes.literal_block(usage, usage, language="text")
            # argparse keeps the arguments only there (sphinx-argparse reads them there too); all but -h
            arguments = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
            if arguments:
                section += nodes.rubric("", "Arguments")
                section += nodes.definition_list("", *(_argument(action) for action in arguments))
            section += nodes.rubric("", "Exit status")
            section += nodes.definition_list(
                "",
                *[
                    nodes.definition_list_item(
                        "",
                        nodes.term(str(status.value), str(status.value)),
                        nodes.definition("", nodes.paragraph("", "", *_text(status.meaning))),
                    )
                    for status in module.Exit
                ],
            )
            section += nodes.rubric("", "Example")
            example = f"{parser.prog} {module.EXAMPLE}"
            section += nodes.literal_block(example, example, language="text")
            self.state.document.note_implicit_target(section)
            sections.append(section)
        return sections


def setup(app: Sphinx) -> dict:
    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

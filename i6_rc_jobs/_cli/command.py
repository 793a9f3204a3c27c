"""What every command defines besides ``main``, in one place that the command runs by, its ``--help`` says and the
command-line reference (``docs/reference/cli.md``, generated) shows, so that the three cannot disagree: ``parser()``
(made by :func:`command_parser`), ``Exit`` (its exit statuses, an :class:`ExitStatus`) and ``EXAMPLE``."""

from __future__ import annotations

import argparse
import enum
import sys
from typing import Optional


class ExitStatus(enum.IntEnum):
    """Base of a command's statuses: ``NAME = number, "what it means"``; a member is the int ``main`` returns."""

    meaning: str

    def __new__(cls, value: int, meaning: str) -> "ExitStatus":
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


def command_parser(
    module: str, statuses: type[ExitStatus], example: str, description: Optional[str] = None
) -> argparse.ArgumentParser:
    """The parser of the command in ``module`` (``__name__`` of ``i6_rc_jobs._cli.same_model``: ``python -m
    i6_rc_jobs same-model``); its description the module docstring after its first colon (after the usage it starts
    with) unless ``description`` is given; its ``--help`` ends with the exit statuses and ``example`` (the arguments
    of a typical use, which the reference shows and the tests parse)."""
    name = module.rsplit(".", 1)[-1].replace("_", "-")
    prog = f"python -m i6_rc_jobs {name}"
    if description is None:
        description = str(sys.modules[module].__doc__).split(":", 1)[1]
    description = " ".join(description.split())
    said = "; ".join(f"{status.value} {status.meaning}" for status in statuses)
    return argparse.ArgumentParser(
        prog=prog,
        description=description[:1].upper() + description[1:],
        epilog=f"exit status: {said}. e.g. {prog} {example}",
    )

"""What every command defines besides ``main``, in one place that the command runs by, its ``--help`` says and the
command-line reference (``docs/reference/cli.md``, generated) shows, so that the three cannot disagree: ``parser()``
(made by :func:`command_parser`), ``Exit`` (its exit statuses, an :class:`ExitStatus`) and ``EXAMPLE``."""

from __future__ import annotations

import argparse
import enum


class ExitStatus(enum.IntEnum):
    """Base of a command's statuses: ``NAME = number, "what it means"``; a member is the int ``main`` returns."""

    meaning: str

    def __new__(cls, value: int, meaning: str) -> "ExitStatus":
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


def command_parser(name: str, description: str, statuses: type[ExitStatus], example: str) -> argparse.ArgumentParser:
    """The parser of ``python -m i6_rc_jobs <name>``; its ``--help`` ends with the exit statuses and ``example`` (the
    arguments of a typical use)."""
    prog, description = f"python -m i6_rc_jobs {name}", " ".join(description.split())
    said = "; ".join(f"{status.value} {status.meaning}" for status in statuses)
    return argparse.ArgumentParser(
        prog=prog,
        description=description[:1].upper() + description[1:],
        epilog=f"exit status: {said}. e.g. {prog} {example}",
    )

"""``python -m i6_rc_jobs``: ``--help`` lists every command with a line and exits with 0; no command or an unknown one
lists them as an error, exit status 2."""

import subprocess
import sys

import pytest

from i6_rc_jobs.__main__ import COMMANDS
from tests.support.sisyphus_setup import REPO


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "i6_rc_jobs", *argv], capture_output=True, text=True, cwd=REPO)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_command_and_exits_with_0(flag):
    proc = _run(flag)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name in COMMANDS:
        (line,) = [line for line in lines if line.startswith(f"  {name} ")]
        assert len(line.split()) > 3 and len(line) <= 120, line


@pytest.mark.parametrize("argv", [[], ["no-such-command"]])
def test_no_or_an_unknown_command_lists_the_commands_as_an_error(argv):
    proc = _run(*argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "  same-model  whether two RETURNN configs define the same model" in proc.stderr
    assert ("unknown command 'no-such-command'" in proc.stderr) == bool(argv)

"""What a setup gets from installing the package: metadata with the runtime needs as ranges and no development tools,
the console script ``i6-rc``, and a pip install that leaves what the setup's Python has as it was."""

import email
import pathlib
import subprocess
import sys
import zipfile

import pytest

from tests.support.sisyphus_setup import REPO

DEV_TOOLS = ("pytest", "sphinx", "black", "hypothesis", "jedi", "myst-parser", "myst_parser")


def _run(*args: str, cwd=None) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel of a clean copy of the committed files (building in the worktree would leave build/ there)."""
    base = tmp_path_factory.mktemp("wheel")
    _run("git", "clone", "-q", "--no-hardlinks", str(REPO), str(base / "checkout"))
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(base),
        "./checkout",
        cwd=base,
    )
    (path,) = base.glob("i6_rc_jobs-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_declares_only_runtime_needs_as_ranges_and_the_console_script(wheel):
    (metadata_name,) = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(wheel.read(metadata_name))
    requires = metadata.get_all("Requires-Dist") or []
    assert requires, "numpy is imported by same-model"
    names = [
        requirement.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip().lower()
        for requirement in requires
    ]
    assert not set(names) & set(DEV_TOOLS), requires
    assert not any(name.startswith(("tensorflow", "returnn", "sisyphus", "i6")) for name in names), requires
    assert not any("==" in requirement for requirement in requires), requires
    assert metadata["Requires-Python"] == ">=3.11"
    assert "License :: OSI Approved :: Mozilla Public License 2.0 (MPL 2.0)" in metadata.get_all("Classifier")
    (entry_points,) = [name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")]
    assert "i6-rc = i6_rc_jobs.__main__:cli" in wheel.read(entry_points).decode()
    assert "i6_rc_jobs/py.typed" in wheel.namelist()
    assert any(name.endswith(".dist-info/LICENSE") for name in wheel.namelist())


def _others(freeze: str) -> list[str]:
    """``pip freeze`` without i6_rc_jobs."""
    return [line for line in freeze.splitlines() if not line.lower().replace("-", "_").startswith("i6_rc_jobs")]


@pytest.mark.slow  # (three pip installs into fresh venvs: 30 s)
def test_a_setups_pip_installs_it_without_changing_what_the_setup_has(wheel, tmp_path):
    """A fresh venv (no system site-packages) with a numpy of its own, as a setup's Python has: installing each way the
    install guide shows (a checkout's directory, ``git+file://...@<commit>``; with the dependencies) keeps every other
    package as it was, and the console script runs."""
    _run(sys.executable, "-m", "venv", str(tmp_path / "venv"))
    pip = [str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    _run(*pip, "install", "-q", "numpy==1.26.3")
    before = _run(*pip, "freeze")
    checkout = pathlib.Path(wheel.filename).parent / "checkout"
    commit = _run("git", "-C", str(checkout), "rev-parse", "HEAD").strip()
    for form in (str(checkout), f"git+file://{checkout}@{commit}"):
        _run(*pip, "install", "-q", "--force-reinstall", "--no-deps", form)
        _run(*pip, "install", "-q", form)
        assert _others(_run(*pip, "freeze")) == _others(before), form
    help_text = _run(str(tmp_path / "venv" / "bin" / "i6-rc"), "--help", cwd=tmp_path)
    assert "commands:" in help_text and "  same-model  " in help_text

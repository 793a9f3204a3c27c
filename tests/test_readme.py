"""The README's Usage snippet runs as written: a real returnn_common model, real Sisyphus jobs, and RETURNN
constructs the networks of the configs it makes (also each stage of the staged one); the documented errors are real."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

from tests.support.sisyphus_setup import REPO


def usage_snippet() -> str:
    """The first python block under the heading "## Usage" of README.md."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("\n## Usage\n") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```\n", start)]


def test_the_usage_snippet_runs_as_written_and_returnn_constructs_what_it_makes(tmp_path):
    check = textwrap.dedent("""

        from i6_rc_jobs.returnn_check import construct_networks
        from i6_rc_jobs.serialization.config_file import config_code

        for name, made, epochs in (("plain", config, (1,)), ("staged", staged_config, (1, 5))):
            with open(name + ".config", "w") as f:
                f.write(config_code(made))
            print(name, construct_networks(name + ".config", epochs, quiet=True))
        """)
    env = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", usage_snippet() + check], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "plain {1: [" in done.stdout and "staged {1: [" in done.stdout and ", 5: [" in done.stdout, done.stdout


def test_the_documented_error_for_a_lambda_in_the_dicts_is_the_one_users_get(tmp_path):
    """The example message in the docs, against the real one: a lambda in a net dict of a module ``model.py``."""
    spans = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = " ".join(page.read_text().split())
        spans += re.findall(r"`(network\['enc'\]\['subnetwork'\]\['ff'\]\['out_dim'\]: [^`]*)`", text)
    assert spans, "no documented example of the error"
    (tmp_path / "model.py").write_text(
        'NETWORK = {"enc": {"class": "subnetwork", "subnetwork": {"ff": {"class": "linear", "out_dim": lambda: 1}}}}\n'
    )
    code = (
        "import model\nfrom i6_rc_jobs import ReturnnCommonSerializer, SerializationError\ntry:\n"
        "    ReturnnCommonSerializer(network=model.NETWORK)\nexcept SerializationError as e:\n    print(e)\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}:{REPO}", CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert spans == [done.stdout.strip()] * len(spans)

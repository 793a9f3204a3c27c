"""The README's Usage snippet runs as written: a real returnn_common model, real Sisyphus jobs, and RETURNN
constructs the network of the config it makes; the documented errors are real. (The pages of docs/ run in
tests/test_docs.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

from tests.support.markdown import RUN, blocks
from tests.support.sisyphus_setup import REPO


def usage_snippet() -> str:
    """The first python block under the heading "## Usage" of README.md."""
    readme = REPO / "README.md"
    usage = readme.read_text().split("\n").index("## Usage") + 1
    return next(b.code for b in blocks(readme) if b.language == RUN and b.line > usage)


def test_the_usage_snippet_runs_as_written_and_returnn_constructs_what_it_makes(tmp_path):
    check = textwrap.dedent("""

        from i6_rc_jobs._verify.returnn_check import construct_networks
        from i6_rc_jobs.jobs.config_file import write_config_file

        write_config_file(config, "returnn.config")
        print("constructed", construct_networks("returnn.config", quiet=True))
        """)
    env = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", usage_snippet() + check], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "constructed {1: [" in done.stdout and "'output'" in done.stdout, done.stdout


#: Makes ``import torch`` fail, as in a Python without it.
NO_TORCH = textwrap.dedent("""
    import sys


    class NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "torch":
                raise ImportError(f"no torch in this Python: {name}")


    sys.meta_path.insert(0, NoTorch())
    """)


def test_a_setup_of_net_dicts_needs_no_torch(tmp_path):
    """The usage snippet (a returnn_common net dict: serialized, hashed, written, constructed by RETURNN with
    TensorFlow) in a Python that cannot import torch."""
    check = textwrap.dedent("""

        from i6_rc_jobs._verify.returnn_check import construct_networks
        from i6_rc_jobs.jobs.config_file import write_config_file

        write_config_file(config, "returnn.config")
        print("hash", serializer._sis_hash()[:20], "constructed", construct_networks("returnn.config", quiet=True))
        print("torch" in sys.modules)
        """)
    env = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    program = NO_TORCH + usage_snippet() + check
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "constructed {1: [" in done.stdout and done.stdout.splitlines()[-1] == "False", done.stdout


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

"""RETURNN's native ops from its git submodules, as a user's ``git clone --recursive`` of RETURNN has them: a config
with RETURNN's warp-transducer RNN-T loss passes the check, which compiles the op from the checked-out sources."""

import os
import subprocess
import sys

import pytest

from i6_rc_jobs._verify import returnn_check

CONFIG = """#!rnn.py
use_tensorflow = True
behavior_version = 21
extern_data = {"data": {"shape": (None, 5)}, "classes": {"shape": (None,), "sparse": True, "dim": 3}}


def rnnt_loss(source, **_kwargs):
    import tensorflow as tf
    from returnn.extern.HawkAaronWarpTransducer import rnnt_loss

    logits, targets = source(0, as_data=True, auto_convert=False), source(1, as_data=True, auto_convert=False)
    labels = targets.get_placeholder_as_batch_major()
    acts = tf.tile(logits.get_placeholder_as_batch_major()[:, :, None, :], [1, 1, tf.shape(labels)[1] + 1, 1])
    lengths = logits.get_sequence_lengths(), targets.get_sequence_lengths()
    return rnnt_loss(tf.nn.log_softmax(acts), labels, *lengths, blank_label=targets.dim)


def rnnt_loss_out_type(**_kwargs):
    from returnn.tensor import Tensor, batch_dim

    return Tensor("rnnt_loss", dims=[batch_dim], dtype="float32")


network = {
    "logits": {"class": "linear", "from": "data", "n_out": 4},
    "output": {
        "class": "eval",
        "from": ["logits", "data:classes"],
        "eval": rnnt_loss,
        "out_type": rnnt_loss_out_type,
        "loss": "as_is",
    },
}
"""


@pytest.mark.slow  # (RETURNN compiles the warp-transducer op: 20 s)
def test_a_config_with_the_warp_transducer_rnnt_loss_is_built_through_the_check(tmp_path):
    """With a cache of its own, RETURNN compiles the op with g++ (about 30 s on 2 cores)."""
    config = tmp_path / "rnnt.config"
    config.write_text(CONFIG)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3", RETURNN_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, returnn_check.__file__, str(config)], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "epoch 1: RETURNN constructed 4 layers" in proc.stdout
    assert list((tmp_path / "cache").glob("returnn_tf_cache/ops/warprnnt_kernels/*/warprnnt_kernels.so"))

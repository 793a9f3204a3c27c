#!/usr/bin/env bash
# The whole test suite, as CI runs it: ./test.sh [extra pytest arguments]
# Sets up (or checks) the pinned .venv and .deps first, and the older RETURNNs of returnn-range/ that
# tests/test_returnn_range.py trains with, runs pytest, then returnn_common's own test suite as our peer test
# (tests/rc_peer/run.py, 3 to 5 minutes on 2 CPUs; RC_PEER=0 skips it). Fails if either fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./setup.sh --returnn-range
# No GPU: with nvcc on the machine, RETURNN would otherwise compile its native TF ops with CUDA and fail.
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=3
status=0
.venv/bin/python -m pytest tests/ -ra --durations=15 "$@" || status=$?
if [[ "${RC_PEER:-1}" != 0 ]]; then
  .venv/bin/python -m tests.rc_peer.run || status=$((status ? status : 1))
fi
exit "$status"

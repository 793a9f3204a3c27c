#!/usr/bin/env bash
# The whole test suite, as CI runs it: ./test.sh [--fast] [extra pytest arguments]
# Sets up (or checks) the pinned .venv and .deps first, and the older RETURNNs of returnn-range/ that
# tests/test_returnn_range.py trains with, runs pytest, then returnn_common's own test suite as our peer test
# (tests/rc_peer/run.py, 3 to 5 minutes on 2 CPUs; RC_PEER=0 skips it). Fails if either fails.
# --fast: only the tests that need no training, no Slurm cluster and no older RETURNN (pytest -m "not slow and not
# slurm and not returnn_range"), without the older RETURNNs and the peer test: under 5 minutes on 2 CPUs. It changes
# nothing on the machine (the Slurm tests install packages and write /etc/slurm as root). CI runs everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
fast=0
if [[ "${1:-}" == --fast ]]; then
  fast=1
  shift
fi
if [[ "$fast" == 1 && "${I6_RC_REQUIRE_SLURM:-}" == 1 ]]; then
  echo "test.sh: --fast leaves out the Slurm tests, which I6_RC_REQUIRE_SLURM=1 (CI) requires" >&2
  exit 2
fi
if [[ "$fast" == 1 ]]; then
  ./setup.sh
else
  ./setup.sh --returnn-range
fi
# No GPU: with nvcc on the machine, RETURNN would otherwise compile its native TF ops with CUDA and fail.
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=3
status=0
if [[ "$fast" == 1 ]]; then
  .venv/bin/python -m pytest tests/ -ra --durations=15 -m "not slow and not slurm and not returnn_range" "$@" ||
    status=$?
else
  .venv/bin/python -m pytest tests/ -ra --durations=15 "$@" || status=$?
fi
if [[ "$fast" == 0 && "${RC_PEER:-1}" != 0 ]]; then
  .venv/bin/python -m tests.rc_peer.run || status=$((status ? status : 1))
fi
exit "$status"

#!/usr/bin/env bash
# The whole test suite, as CI runs it: ./test.sh [extra pytest arguments]
# Sets up (or checks) the pinned .venv and .deps first; the exit status is pytest's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
./setup.sh
# No GPU: with nvcc on the machine, RETURNN would otherwise compile its native TF ops with CUDA and fail.
export CUDA_VISIBLE_DEVICES="" TF_CPP_MIN_LOG_LEVEL=3
exec .venv/bin/python -m pytest tests/ -ra --durations=15 "$@"

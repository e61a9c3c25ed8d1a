#!/usr/bin/env bash
# The GPU check of the CUDA target. Artifacts come from `python benchmarks/gpu/prepare.py`
# (run where the compiler is installed); this runs them with numpy + ctypes (+ cupy and
# torch for the timed peers) on the GPU machine.
#
#   benchmarks/gpu/check.sh                 # on the GPU machine
#   benchmarks/gpu/check.sh --fake-driver   # anywhere: load and call with the fake driver
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-$(command -v python3.12 || command -v python3)}"
exec "$PYTHON" benchmarks/gpu/run_check.py "$@"

#!/usr/bin/env bash
# gpu-check.sh - the Python binding's device checks, for a machine with a GPU (not part of make test).
# usage: tests/python/gpu-check.sh [BUILD_DIR]     (needs a CUDA build: liblockstep_cuda.so; ends "N passed, N failed")
set -u
build=${1:-build}
src=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) ;; *) build=$src/$build ;; esac
export LOCKSTEP_BUILD=$build LOCKSTEP_SRC=$src PYTHONPATH=$src/agent/python PYTHONDONTWRITEBYTECODE=1
py=$(command -v python3)
# Prefer an interpreter whose torch has CUDA; Debian's /usr/bin/python3 has a CPU-only torch.
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    py=$(command -v "$p"); break
  fi
done
exec "$py" "$src/tests/python/gpu_check.py"

#!/usr/bin/env bash
# run.sh - the Python tier: the ctypes binding and lockstep.torch on real PyTorch training loops.
# usage: tests/python/run.sh BUILD_DIR      (ends with "N passed, N failed")
# Uses Debian's /usr/bin/python3 with python3-torch and python3-numpy (deploy/install-deps.sh):
# the python3 on PATH may be another build without torch.
set -u
build=${1:-build}
src=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) ;; *) build=$src/$build ;; esac
py=/usr/bin/python3

if ! $py -c 'import torch, numpy' 2>/dev/null; then
  echo "python tier: Debian's python3-torch or python3-numpy is missing"
  echo "hint: run deploy/install-deps.sh"
  echo "0 passed, 1 failed"
  exit 1
fi
for f in "$build/lib/liblockstep.so" "$build/bin/lockstep"; do
  if [ ! -e "$f" ]; then
    echo "python tier: $f is missing (hint: make)"; echo "0 passed, 1 failed"; exit 1
  fi
done

export LOCKSTEP_BUILD=$build LOCKSTEP_SRC=$src
export PYTHONPATH=$src/agent/python PYTHONDONTWRITEBYTECODE=1
# The sanitizer build's library needs the ASan runtime first in the process; Python itself leaks
# by design at exit, so leak checking is off (the C tiers check leaks).
if ldd "$build/lib/liblockstep.so" | grep -q libasan; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi
# Each training run sets its own thread count; keep BLAS from adding threads of its own.
export OPENBLAS_NUM_THREADS=1
unset LOCKSTEP_TRACE LOCKSTEP_TRACE_DIR LOCKSTEP_MODE LOCKSTEP_RANK LOCKSTEP_RUN_ID LOCKSTEP_LIB LOCKSTEP_SERVER

cd "$src/tests/python" && exec $py run_tests.py

#!/usr/bin/env bash
# run.sh - the lockstepd integration tier: each cmocka binary starts its own PostgreSQL and lockstepd.
# usage: tests/integration/run.sh BUILD_DIR   (ends with "N passed, N failed", counting cmocka tests)
set -u
build=${1:-build}
export LOCKSTEP_BUILD=$build LOCKSTEP_SRC=${LOCKSTEP_SRC:-$(pwd)}
pass=0; fail=0
for t in "$build"/tests/integration/test_*; do
  case "$t" in *.o|*.d) continue ;; esac
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -x "$t" ] && break; sleep 1; done  # a parallel build may be relinking it
  if [ ! -x "$t" ]; then echo "integration: $t is not executable"; fail=$((fail + 1)); continue; fi
  out=$("$t" 2>&1); rc=$?
  echo "$out"
  p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # a crash or a failed group setup
  pass=$((pass + p)); fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

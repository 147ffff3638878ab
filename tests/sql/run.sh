#!/usr/bin/env bash
# run.sh - the SQL tier: SQL that restates a C rule, run against that rule's case table (tests/data/) on a private
# PostgreSQL, and lockstepd's schema, fresh and upgraded (sql/README.md). Each cmocka binary starts its own cluster.
# usage: tests/sql/run.sh BUILD_DIR   (ends with "N passed, N failed", counting cmocka tests)
set -u
build=${1:-build}
export LOCKSTEP_BUILD=$build LOCKSTEP_SRC=${LOCKSTEP_SRC:-$(pwd)}
pass=0; fail=0
for t in "$build"/tests/sql/test_*; do
  case "$t" in *.o|*.d) continue ;; esac
  if [ ! -x "$t" ]; then echo "sql: $t is not executable"; fail=$((fail + 1)); continue; fi
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

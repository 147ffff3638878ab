#!/usr/bin/env bash
# run.sh - the demo tier: a short `make demo` (lockstepd, 4-node Slurm, twin jobs) whose summary is checked.
# usage: tests/demo/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=$(readlink -f "${1:-build}")
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/ls-demo-XXXXXX)
chmod 755 "$tmp"
trap '"$src/deploy/demo/stop.sh" "$tmp/demo" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
pass=0; fail=0
case $build in */san) export ASAN_OPTIONS=detect_leaks=0 ;; esac

if "$src/deploy/demo/demo.sh" -q -b "$build" -d "$tmp/demo" -s 12 >"$tmp/out" 2>&1; then
  pass=$((pass+1)); echo "ok   the demo's expectations hold (match, nondeterministic, faulty n3 at step 8, resume)"
else
  fail=$((fail+1)); echo "FAIL the demo"; sed 's/^/     /' "$tmp/out" | tail -40
fi
check_line() { # check_line NAME PATTERN: the printed summary has such a line
  if grep -Eq "$2" "$tmp/out"; then pass=$((pass+1)); echo "ok   $1"
  else fail=$((fail+1)); echo "FAIL $1: no line matching /$2/"; fi
}
check_line "summary: the deterministic pair matches" '^  demo-match +match +2 deterministic runs on n1 \| n2'
check_line "summary: the nondeterministic pair diverges" '^  demo-nondet +diverged +--nondeterministic .*first divergence at step'
check_line "summary: the faulty node is named" '^  demo-faulty +diverged +first divergence at step 8, .*odd one out runs on n3'
check_line "summary: the resumed run matches on its overlap" '^  demo-resume +match +resumed run compared on its overlap \(from step 11\)'
check_line "summary: the dashboard URL" '^dashboard: +http://127\.0\.0\.1:[0-9]+/$'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

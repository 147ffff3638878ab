#!/usr/bin/env bash
# demo.sh - the offline demo: a toy trainer runs as twin runs of two ranks, one with a
# one-bit fault at step 12, and `lockstep diff` shows where they part.
# usage: examples/demo.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
out=$build/demo
rm -rf "$out"
mkdir -p "$out"

run() { # run NAME [toy_train args...]: two ranks of one run, traced into $out/NAME
  local name=$1; shift
  for rank in 0 1; do
    LOCKSTEP_TRACE_DIR=$out/$name LOCKSTEP_RUN_ID=demo-$name LOCKSTEP_RANK=$rank LOCKSTEP_TRACE=modules \
      "$build/examples/toy_train" --steps 30 "$@"
  done
}

echo "== run A: 2 ranks, 30 steps"
run a
echo "== run B: the same program and inputs (a twin of A)"
run b
echo "== run C: a twin whose rank-1 weight gets one bit flipped at step 12"
LOCKSTEP_TRACE_DIR=$out/c LOCKSTEP_RUN_ID=demo-c LOCKSTEP_RANK=0 LOCKSTEP_TRACE=modules "$build/examples/toy_train" --steps 30
LOCKSTEP_TRACE_DIR=$out/c LOCKSTEP_RUN_ID=demo-c LOCKSTEP_RANK=1 LOCKSTEP_TRACE=modules "$build/examples/toy_train" --steps 30 --perturb-step 12

echo
echo "== lockstep diff A B   (twins: expect a match, exit 0)"
"$build/bin/lockstep" diff "$out/a" "$out/b"
echo
echo "== lockstep diff A C   (expect the first divergence at step 12 on rank 1: linear.weight; exit 1)"
set +e
"$build/bin/lockstep" diff "$out/a" "$out/c"
rc=$?
set -e
[ $rc -eq 1 ] || { echo "demo: expected diff to report a divergence (exit 1), got $rc" >&2; exit 1; }
echo
echo "Traces are in $out (one .lstrace file per rank); try:"
echo "  $build/bin/lockstep dump $out/c/rank-00001.lstrace | head"
echo "  $build/bin/lockstep diff --json $out/a $out/c"

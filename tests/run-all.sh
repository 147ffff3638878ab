#!/usr/bin/env bash
# run-all.sh - run the unit test binaries, then each tier script; print one total line.
# usage: tests/run-all.sh BUILD_DIR UNIT_BIN... -- TIER_SCRIPT...
set -u
build=$1; shift
units=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do units+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
tiers=("$@")

# The tiers run as on a clean machine: a shell that sourced build/demo/env (README.md) or set the agent's and the
# command's LOCKSTEP_* variables must not point them at the demo's lockstepd or Slurm (LOCKSTEP_KEEP, which keeps
# the tiers' temporary directories, stays).
for v in $(compgen -e); do
  case $v in LOCKSTEP_KEEP) ;; LOCKSTEP_*|SLURM_CONF) unset "$v" ;; esac
done
export LOCKSTEP_BUILD=$build
export LOCKSTEP_SRC=$(pwd)
failed_parts=()
pass=0; fail=0

for t in "${units[@]}"; do
  echo "== unit: $(basename "$t")"
  if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed_parts+=("$t"); fi
done
for t in "${tiers[@]}"; do
  echo "== tier: $t"
  if "$t" "$build"; then pass=$((pass+1)); else fail=$((fail+1)); failed_parts+=("$t"); fi
done

echo
[ ${#failed_parts[@]} -gt 0 ] && printf 'failed: %s\n' "${failed_parts[@]}"
echo "suites: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

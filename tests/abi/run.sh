#!/usr/bin/env bash
# run.sh - the ABI tier: each shared object exports exactly the symbols its version script lists, and the SPANK
# plugin's own symbols stay out of Slurm's spank_ namespace.
# usage: tests/abi/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=${1:-build}
pass=0; fail=0

# exports_match SO MAP: the defined dynamic symbols of SO equal the `global:` names of MAP (several may share a line).
exports_match() {
  local so=$1 map=$2
  [ -f "$so" ] || { echo "FAIL $so is missing"; return 1; }
  local want got
  want=$(sed -n '/global:/,/local:/p' "$map" | sed 's|/\*.*\*/||g' | grep -Eo '[A-Za-z_][A-Za-z0-9_]*;' | tr -d ';' |
    sort -u)
  got=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | grep -v '^LOCKSTEP_' | sort -u)
  if [ "$want" = "$got" ]; then
    echo "ok   $(basename "$so") exports exactly its $(echo "$want" | wc -l) listed symbols"
    return 0
  fi
  echo "FAIL $(basename "$so") exports differ from $map:"
  diff <(echo "$want") <(echo "$got") | sed 's/^/     /'
  return 1
}

# Every shared object the agent side ships (the CUDA ones only where nvcc built them).
for pair in "$build/lib/liblockstep.so:agent/liblockstep.map" "$build/lib/liblockstep_mpi.so:agent/mpi/liblockstep_mpi.map" \
            "$build/lib/liblockstep_nccl.so:agent/nccl/liblockstep_nccl.map" \
            "$build/lib/liblockstep_cuda.so:kernels/liblockstep_cuda.map"; do
  so=${pair%%:*}
  case $so in *_nccl.so | *_cuda.so) [ -f "$so" ] || { echo "skip $(basename "$so") (not built here: no nvcc)"; continue; } ;; esac
  if exports_match "$so" "${pair#*:}"; then pass=$((pass+1)); else fail=$((fail+1)); fi
done

# The SPANK plugin (where the Slurm headers let it be built): what Slurm looks up, nothing else, and none of its own
# functions or variables, exported or not, named spank_* (Slurm's namespace: slurmstepd loads other plugins beside it).
# The one spank_ name it defines is SPANK_PLUGIN's spank_plugin_version, which Slurm requires.
so=$build/lib/spank_lockstep.so
if [ -f "$so" ]; then
  if exports_match "$so" spank/spank_lockstep.map; then pass=$((pass+1)); else fail=$((fail+1)); fi
  own=$(nm --defined-only "$so" | awk '{print $3}' | grep -E '^_*spank_' | grep -vx 'spank_plugin_version' | sort -u)
  if [ -z "$own" ]; then
    echo "ok   spank_lockstep.so defines no spank_* symbol but spank_plugin_version"; pass=$((pass+1))
  else
    echo "FAIL spank_lockstep.so defines symbols in Slurm's spank_ namespace:"; echo "$own" | sed 's/^/     /'
    fail=$((fail+1))
  fi
else
  echo "skip spank_lockstep.so (not built here: no Slurm headers)"
fi

# The public header compiles on its own, as C and as C++.
for lang in c c++; do
  if echo '#include "lockstep.h"' | ${CC:-cc} -x $lang -Iinclude -fsyntax-only -Wall -Wextra -Werror - 2>/tmp/abi-hdr.$$; then
    echo "ok   include/lockstep.h compiles alone as $lang"; pass=$((pass+1))
  else
    echo "FAIL include/lockstep.h as $lang:"; cat /tmp/abi-hdr.$$; fail=$((fail+1))
  fi
  rm -f /tmp/abi-hdr.$$
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# gpu-check-nccl.sh - the agent's NCCL check, for a machine with a GPU: an unmodified NCCL program under
# LD_PRELOAD=liblockstep_nccl.so records every collective, each with its call site (main, in the program); two
# runs match, sites and all; the recorded allreduce fingerprint equals the CPU LSFP-1 of the same bytes
# (`lockstep fp`); LOCKSTEP_IGNORE leaves a collective out.
# usage: tests/agent/gpu-check-nccl.sh [BUILD_DIR]      (ends with "N passed, N failed")
set -u
B=$(cd "${1:-build}" && pwd)
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }
T=$(mktemp -d /tmp/ls-nccl-check.XXXXXX); trap 'rm -rf "$T"' EXIT
PROG=$B/tests/agent/nccl_allreduce
[ -x "$PROG" ] && [ -f "$B/lib/liblockstep_nccl.so" ] || { bad "build with CUDA=1 and nccl.h first"; echo "$pass passed, $fail failed"; exit 1; }
for r in 1 2; do
  if LD_PRELOAD="$B/lib/liblockstep_nccl.so" LOCKSTEP_TRACE_DIR="$T/run$r" LOCKSTEP_TRACE=ops LOCKSTEP_AUTOSTART=1 \
     "$PROG" "$T/out$r.bin" 3 >"$T/run$r.log" 2>&1; then ok "run $r: $(tail -1 "$T/run$r.log")"
  else bad "run $r: $(tail -3 "$T/run$r.log")"; fi
done
names=$("$B/bin/lockstep" dump "$T/run1/rank-00000.lstrace" | grep -v '"consensus.digest"' | python3 -c '
import json, sys; print(" ".join(sorted({json.loads(l)["name"] for l in sys.stdin})))')
case "$names" in
  *nccl.allgather*nccl.allreduce*nccl.broadcast*nccl.reduce_scatter*) ok "collectives recorded: $names" ;;
  *) bad "collectives recorded: '$names'" ;;
esac
if "$B/bin/lockstep" diff "$T/run1" "$T/run2" >"$T/diff.log" 2>&1; then ok "two runs match"; else bad "$(head -5 "$T/diff.log")"; fi
# The last record named nccl.allreduce is GPU 0's final allreduce (one process, GPUs issue in order).
want=$("$B/bin/lockstep" fp "$T/out1.bin" | cut -d' ' -f1)
got=$("$B/bin/lockstep" dump "$T/run1/rank-00000.lstrace" | grep -v '"consensus.digest"' | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin if "\"nccl.allreduce\"" in l]
n = max(r["shape"][0] for r in recs)     # one record per GPU per call; the last call is the last n records
print(" ".join(r["fp"] for r in recs[-n:]))')
case " $got " in *" $want "*) ok "recorded allreduce fingerprint equals the CPU LSFP-1 ($want)" ;;
  *) bad "allreduce fingerprint: CPU $want, recorded $got" ;; esac
# Call sites: every record names main (the program calls NCCL from main), the same in both runs.
sites() { "$B/bin/lockstep" dump "$1" | grep -v '"consensus.digest"' | python3 -c '
import json, sys
print(" ".join(sorted({(json.loads(l).get("site") or {}).get("text", "none") for l in sys.stdin})))'; }
s1=$(sites "$T/run1/rank-00000.lstrace"); s2=$(sites "$T/run2/rank-00000.lstrace")
case "$s1" in
  *none*|"") bad "a record without a call site: '$s1'" ;;
  main+0x*) [ "$s1" = "$s2" ] && ok "call sites: $s1 (equal in both runs)" || bad "call sites differ: '$s1' vs '$s2'" ;;
  *) bad "call sites: '$s1', want main+0x... (nccl_allreduce+0x...)" ;;
esac
# LOCKSTEP_IGNORE: no broadcast record is made (nothing hashed for it), the rest is.
LD_PRELOAD="$B/lib/liblockstep_nccl.so" LOCKSTEP_TRACE_DIR="$T/run3" LOCKSTEP_TRACE=ops LOCKSTEP_AUTOSTART=1 \
  LOCKSTEP_IGNORE=nccl.broadcast "$PROG" "$T/out3.bin" 3 >"$T/run3.log" 2>&1
n_b=$("$B/bin/lockstep" dump "$T/run3/rank-00000.lstrace" | grep -c '"nccl.broadcast"')
n_a=$("$B/bin/lockstep" dump "$T/run3/rank-00000.lstrace" | grep -c '"nccl.allreduce"')
if [ "$n_b" -eq 0 ] && [ "$n_a" -gt 0 ]; then ok "LOCKSTEP_IGNORE=nccl.broadcast: none made, $n_a allreduces kept"
else bad "LOCKSTEP_IGNORE: $n_b broadcasts, $n_a allreduces"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

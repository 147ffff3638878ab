#!/usr/bin/env bash
# gpu-check-nccl.sh - the agent's NCCL check, for a machine with a GPU: an unmodified NCCL program under
# LD_PRELOAD=liblockstep_nccl.so records every collective, each with its call site (main, in the program); two
# runs match, sites and all; the recorded allreduce fingerprint equals the CPU LSFP-1 of the same bytes
# (`lockstep fp`); LOCKSTEP_IGNORE leaves a collective out; a flipped input bit is found at its collective with its
# call site and cause; LOCKSTEP_NCCL_CONSENSUS=1 folds the collectives every member shares into consensus digests.
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
# A corrupted input: bit 12 of GPU 0's input flipped before step 1's allreduce. The first divergence is that
# allreduce (occurrence 1), at its call site, and the cause says where it came from, as for the MPI wrappers.
LD_PRELOAD="$B/lib/liblockstep_nccl.so" LOCKSTEP_TRACE_DIR="$T/runf" LOCKSTEP_TRACE=ops LOCKSTEP_AUTOSTART=1 \
  "$PROG" "$T/outf.bin" 3 1 >"$T/runf.log" 2>&1
"$B/bin/lockstep" diff "$T/run1" "$T/runf" >"$T/difff.txt" 2>&1; frc=$?
"$B/bin/lockstep" diff --json "$T/run1" "$T/runf" >"$T/difff.json" 2>/dev/null
first=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["ranks"] if x.get("status") == "diverged"][0]
a = r["a"]
print(d.get("cause"), a["name"], a["occurrence"], (a.get("site") or {}).get("text", "none"), len(a.get("inputs") or []))' \
  "$T/difff.json" 2>&1)
site1=$("$B/bin/lockstep" dump "$T/run1/rank-00000.lstrace" | python3 -c '
import json, sys
print([json.loads(l) for l in sys.stdin if "\"nccl.allreduce\"" in l][1]["site"]["text"])')
case "$frc $first" in
  "1 origin nccl.allreduce 1 $site1 1") ok "a flipped input bit: first divergence nccl.allreduce occurrence 1 at $site1, cause origin" ;;
  *) bad "a flipped input bit: diff rc $frc, first '$first' (want origin nccl.allreduce 1 $site1 1)"; head -20 "$T/difff.txt" ;;
esac
sed -n '1,/^$/p' "$T/difff.txt" | grep -E 'cause|DIVERGED' | sed 's/^/     /'
# Consensus places (LOCKSTEP_NCCL_CONSENSUS=1): the allreduces, broadcasts and allgathers fold into consensus
# digests (not the reduce-scatters: their outputs differ by rank); twins' digests agree, the faulted run's do not.
CONS=$B/tests/agent/cons_digests
# "step window records fold" of each digest; not its key, a hash of the run's own ncclUniqueId
digests() { "$CONS" "$1"/rank-*.lstrace | awk '$1 == "digest" { print $3, $5, $6, $7 }'; }
for r in c1 c2 cf; do
  LD_PRELOAD="$B/lib/liblockstep_nccl.so" LOCKSTEP_TRACE_DIR="$T/$r" LOCKSTEP_TRACE=ops LOCKSTEP_AUTOSTART=1 \
    LOCKSTEP_NCCL_CONSENSUS=1 "$PROG" "$T/$r.bin" 3 $([ $r = cf ] && echo 1) >"$T/$r.log" 2>&1
done
want=$("$B/bin/lockstep" dump "$T/c1/rank-00000.lstrace" | grep -c -E '"nccl\.(allreduce|broadcast|allgather)"')
folded=$(digests "$T/c1" | awk '{ n += $3 } END { print n + 0 }')
plain=$(digests "$T/run1" | wc -l)
if [ -x "$CONS" ] && [ "$folded" -gt 0 ] && [ "$folded" = "$want" ] && [ "$plain" = 0 ] &&
   [ "$(digests "$T/c1")" = "$(digests "$T/c2")" ] && [ "$(digests "$T/c1")" != "$(digests "$T/cf")" ]; then
  ok "consensus digests: $folded NCCL records folded, twins agree, the flipped bit changes them (none without the option)"
else bad "consensus digests: folded $folded of $want, $plain without the option, c1 '$(digests "$T/c1" | tr '\n' ';')' cf '$(digests "$T/cf" | tr '\n' ';')'"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# run.sh - bench/relay: real agents (tests/agent/agentprog, liblockstep.so, digest streaming) on one lockstepd, each
# rank posting its own batches, and the same ranks on "nodes" of PER_NODE sharing a node relay (LOCKSTEP_RELAY,
# agent/relay.h), rounds alternating; prints one JSON line: lockstepd's CPU a batch each way (its own process, not
# PostgreSQL's), how many batches a request carried, and the ratio. The ranks' steps are not synchronized (as a
# real job's collectives synchronize them), so a bundle here holds fewer batches than a node's ranks would give it.
# usage: bench/relay/run.sh [BUILD_DIR]
#   env: RANKS (32), PER_NODE (8), STEPS (300), ROUNDS (2)
set -u
build=${1:-build}
B=$(cd "$build" && pwd)
RANKS=${RANKS:-32}; PER_NODE=${PER_NODE:-8}; STEPS=${STEPS:-300}; ROUNDS=${ROUNDS:-2}
LOCKSTEPD=$B/bin/lockstepd PROG=$B/tests/agent/agentprog
for f in "$LOCKSTEPD" "$PROG" "$B/lib/liblockstep.so"; do
  [ -e "$f" ] || { echo "bench/relay: $f is missing (run make)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/ls-bench-relay.XXXXXX); chmod 755 "$T"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
"$LOCKSTEPD" --listen "127.0.0.1:$PORT" --state-dir "$T/state" --log-file "$T/lockstepd.log" --threads 2 \
  >"$T/lockstepd.out" 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 1 150); do curl -sf "$URL/api/v1/health" >/dev/null && break; sleep 0.2; done
curl -sf "$URL/api/v1/health" >/dev/null || { echo "bench/relay: lockstepd did not start" >&2; exit 1; }

cpu() { awk '{print $14 + $15}' "/proc/$SRV/stat"; } # lockstepd's own CPU, in clock ticks
metric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m {s += $2} END {print s + 0}'; }
requests() { curl -s "$URL/metrics" | awk '/^lockstepd_http_requests_total\{route="records"/ {s += $2} END {print s + 0}'; }

# one_run MODE ROUND: every rank of a run of RANKS, alone or through relays; prints "cpu_ticks batches requests"
one_run() {
  local mode=$1 round=$2 c0 b0 q0 pids=()
  c0=$(cpu); b0=$(metric 'lockstepd_batches_total{result="stored"}'); q0=$(requests)
  for ((r = 0; r < RANKS; r++)); do
    local relay=()
    [ "$mode" = relay ] && relay=(LOCKSTEP_RELAY="$T/relay-$round-$((r / PER_NODE))")
    env LOCKSTEP_SERVER="$URL" LOCKSTEP_JOB_ID="J-$mode-$round" LOCKSTEP_STEP_ID=0 LOCKSTEP_TRACE=collectives \
      LOCKSTEP_RANK=$r LOCKSTEP_RANKS="$RANKS" LOCKSTEP_SPOOL_DIR="$T/spool" LOCKSTEP_BATCH_MS=50 \
      LOCKSTEP_STREAM=digests "${relay[@]}" "$PROG" --steps "$STEPS" --sleep-ms 20 --layers 8 >/dev/null 2>>"$T/err" &
    pids+=($!)
  done
  wait "${pids[@]}"
  sleep 1 # the last replies' comparisons
  echo "$(($(cpu) - c0)) $(($(metric 'lockstepd_batches_total{result="stored"}') - b0)) $(($(requests) - q0))"
}

tck=$(getconf CLK_TCK)
: >"$T/rows"
for ((k = 0; k < ROUNDS; k++)); do
  if ((k % 2 == 0)); then order=(alone relay); else order=(relay alone); fi
  for m in "${order[@]}"; do echo "$m $(one_run "$m" "$k")" >>"$T/rows"; done
done
[ -s "$T/err" ] && { echo "bench/relay: the ranks said: $(head -c 300 "$T/err")" >&2; exit 1; }
python3 - "$T/rows" "$tck" "$RANKS" "$PER_NODE" "$STEPS" "$ROUNDS" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
tck = float(sys.argv[2])
def side(mode):
    per = [float(c) / tck * 1e6 / int(b) for m, c, b, q in rows if m == mode and int(b) > 0]
    bpr = [int(b) / int(q) for m, c, b, q in rows if m == mode and int(q) > 0]
    return statistics.median(per), statistics.median(bpr), sum(int(b) for m, c, b, q in rows if m == mode)
a, abpr, ab = side("alone")
r, rbpr, rb = side("relay")
print(json.dumps({"bench": "relay", "ranks": int(sys.argv[3]), "per_node": int(sys.argv[4]), "steps": int(sys.argv[5]),
                  "rounds": int(sys.argv[6]), "alone_lockstepd_us_per_batch": round(a, 1),
                  "relay_lockstepd_us_per_batch": round(r, 1), "ratio": round(r / a, 3),
                  "alone_batches_per_request": round(abpr, 2), "relay_batches_per_request": round(rbpr, 2),
                  "alone_batches": ab, "relay_batches": rb}))
PY

#!/usr/bin/env bash
# run.sh - bench/agent: an allreduce-heavy MPI program without the agent, with it streaming to a live lockstepd,
# and with it while lockstepd is down (spooling), interleaved in one run; prints one JSON line.
# usage: bench/agent/run.sh [BUILD_DIR]   env: RANKS (2), ITERS (1000), COUNT (65536 floats), REPS (5)
set -u
build=${1:-build}
B=$(cd "$build" && pwd)
RANKS=${RANKS:-2}; ITERS=${ITERS:-1000}; COUNT=${COUNT:-65536}; REPS=${REPS:-5}
LOCKSTEPD=${LOCKSTEPD:-$B/bin/lockstepd}
PROG=$B/bench/agent/allreduce
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
for f in "$LOCKSTEPD" "$PROG" "$B/lib/liblockstep_mpi.so"; do
  [ -e "$f" ] || { echo "bench/agent: $f is missing (run make)" >&2; exit 1; }
done

T=$(mktemp -d /tmp/ls-bench-agent.XXXXXX); chmod 755 "$T"
SRV=
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cleanup() {
  [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
UP=$(port); DOWN=$(port)
"$LOCKSTEPD" --listen "127.0.0.1:$UP" --state-dir "$T/state" --port-file "$T/port" --log-file "$T/log" &
SRV=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$UP/api/v1/health" >/dev/null 2>&1 && break; sleep 0.1; done

# one MODE REP: the rank-0 seconds of the timed loop. Modes: base (no agent), hash (the agent fingerprints and
# numbers every allreduce but has nowhere to send: its own cost), up (streaming to lockstepd), down (spooling).
one() {
  local agent=()
  case $1 in
    hash) agent=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_TRACE=collectives) ;;
    up|down)
      local url=http://127.0.0.1:$UP; [ "$1" = down ] && url=http://127.0.0.1:$DOWN
      agent=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_SERVER="$url" -x LOCKSTEP_JOB_ID="bench-$1-$2-$$"
             -x LOCKSTEP_STEP_ID=0 -x LOCKSTEP_TRACE=collectives -x LOCKSTEP_SPOOL_DIR="$T/spool") ;;
  esac
  mpirun --allow-run-as-root --oversubscribe -np "$RANKS" "${agent[@]}" "$PROG" "$ITERS" "$COUNT" 2>>"$T/err" |
    tail -1
}
declare -A times
for rep in $(seq 1 "$REPS"); do
  for mode in base hash up down; do times[$mode]+="$(one $mode $rep) "; done
done
# The agent's own cost per call, without the network's noise: one rank (the allreduce is a local copy), the
# fastest of REPS runs with and without the agent.
np1() {
  local agent=()
  [ "$1" = hash ] && agent=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_TRACE=collectives)
  mpirun --allow-run-as-root -np 1 "${agent[@]}" "$PROG" 2000 "$COUNT" 2>>"$T/err" | tail -1
}
for rep in $(seq 1 "$REPS"); do
  times[np1base]+="$(np1 base) "; times[np1hash]+="$(np1 hash) "
done
python3 - "$RANKS" "$ITERS" "$COUNT" "$REPS" "${times[base]}" "${times[up]}" "${times[down]}" "${times[hash]}" "${times[np1base]}" "${times[np1hash]}" <<'PY'
import json, statistics, sys
ranks, iters, count, reps = map(int, sys.argv[1:5])
base, up, down, hsh, n1b, n1h = ([float(x) for x in a.split()] for a in sys.argv[5:11])
mb, mu, md, mh = (statistics.median(x) for x in (base, up, down, hsh))
print(json.dumps({"bench": "agent", "ranks": ranks, "iters": iters, "count": count, "dtype": "f32",
                  "reps": reps, "base_s": round(mb, 4), "server_up_s": round(mu, 4), "server_down_s": round(md, 4), "hash_only_s": round(mh, 4),
                  "overhead_up_pct": round(100 * (mu / mb - 1), 2), "overhead_down_pct": round(100 * (md / mb - 1), 2),
                  "overhead_hash_only_pct": round(100 * (mh / mb - 1), 2),
                  "us_per_allreduce_base": round(1e6 * mb / iters, 1),
                  # the fastest of the repetitions: the least disturbed by other load on a shared machine
                  "min_overhead_up_pct": round(100 * (min(up) / min(base) - 1), 2),
                  "min_overhead_down_pct": round(100 * (min(down) / min(base) - 1), 2),
                  "min_overhead_hash_only_pct": round(100 * (min(hsh) / min(base) - 1), 2),
                  "agent_us_per_call": round(1e6 * (min(n1h) - min(n1b)) / 2000, 2),
                  "fingerprinted_bytes_per_call": 2 * 4 * count,
                  "base_spread_pct": round(100 * (max(base) - min(base)) / mb, 1)}))
PY

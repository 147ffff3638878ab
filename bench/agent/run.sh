#!/usr/bin/env bash
# run.sh - bench/agent: an allreduce-heavy MPI program without the agent, with it streaming to a live lockstepd,
# and with it while lockstepd is down (spooling), interleaved in one run; prints one JSON line.
# Two sizes: COUNT floats per call (a gradient), and one float (a loss or a counter: the agent's fixed cost).
# usage: bench/agent/run.sh [BUILD_DIR]   env: RANKS (2), ITERS (1000), COUNT (65536 floats), SMALL_ITERS (20000),
#        REPS (7)
set -u
build=${1:-build}
B=$(cd "$build" && pwd)
RANKS=${RANKS:-2}; ITERS=${ITERS:-1000}; COUNT=${COUNT:-65536}; SMALL_ITERS=${SMALL_ITERS:-20000}; REPS=${REPS:-7}
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

# one MODE REP ITERS COUNT: the rank-0 seconds of the timed loop. Modes: base (no agent), hash (the agent fingerprints and
# numbers every allreduce but has nowhere to send: its own cost), up (streaming to lockstepd), down (spooling).
one() {
  local agent=()
  case $1 in
    hash) agent=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_TRACE=collectives) ;;
    up|down)
      local url=http://127.0.0.1:$UP; [ "$1" = down ] && url=http://127.0.0.1:$DOWN
      agent=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_SERVER="$url" -x LOCKSTEP_JOB_ID="bench-$1-$4-$2-$$"
             -x LOCKSTEP_STEP_ID=0 -x LOCKSTEP_TRACE=collectives -x LOCKSTEP_SPOOL_DIR="$T/spool") ;;
  esac
  mpirun --allow-run-as-root --oversubscribe -np "$RANKS" "${agent[@]}" "$PROG" "$3" "$4" 2>>"$T/err" |
    tail -1
}
# One size: REPS rounds of the four modes back to back, so each mode's run is paired with the base run of its
# own round (load on this shared machine drifts between rounds far more than within one).
declare -A times
measure() {
  local count=$1 iters=$2 rep mode
  for rep in $(seq 1 "$REPS"); do
    for mode in base hash up down; do times[$count.$mode]+="$(one $mode $rep "$iters" "$count") "; done
  done
}
measure "$COUNT" "$ITERS"
measure 1 "$SMALL_ITERS"
# The agent's own cost per call, without the network's noise: one rank (the allreduce is a local copy), the
# fastest of REPS runs with and without the agent.
np1() {
  local agent=()
  [ "$1" = hash ] && agent=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_TRACE=collectives)
  mpirun --allow-run-as-root -np 1 "${agent[@]}" "$PROG" "$2" "$3" 2>>"$T/err" | tail -1
}
for rep in $(seq 1 "$REPS"); do
  times[np1base]+="$(np1 base 2000 "$COUNT") "; times[np1hash]+="$(np1 hash 2000 "$COUNT") "
  times[np1sbase]+="$(np1 base 200000 1) "; times[np1shash]+="$(np1 hash 200000 1) "
done
python3 - "$RANKS" "$ITERS" "$COUNT" "$REPS" "$SMALL_ITERS" "${times[$COUNT.base]}" "${times[$COUNT.hash]}" \
  "${times[$COUNT.up]}" "${times[$COUNT.down]}" "${times[1.base]}" "${times[1.hash]}" "${times[1.up]}" \
  "${times[1.down]}" "${times[np1base]}" "${times[np1hash]}" "${times[np1sbase]}" "${times[np1shash]}" <<'PY'
import json, statistics, sys
ranks, iters, count, reps, small_iters = map(int, sys.argv[1:6])
big = [[float(x) for x in a.split()] for a in sys.argv[6:10]]
small = [[float(x) for x in a.split()] for a in sys.argv[10:14]]
n1b, n1h, n1sb, n1sh = ([float(x) for x in a.split()] for a in sys.argv[14:18])

def pct(mode, base):
    """median over rounds of the round's mode/base ratio, in percent"""
    return round(100 * (statistics.median(m / b for m, b in zip(mode, base)) - 1), 2)

def figures(prefix, runs, n):
    base, hsh, up, down = runs
    return {prefix + "us_per_allreduce_base": round(1e6 * statistics.median(base) / n, 1),
            prefix + "overhead_hash_only_pct": pct(hsh, base), prefix + "overhead_up_pct": pct(up, base),
            prefix + "overhead_down_pct": pct(down, base),
            prefix + "base_spread_pct": round(100 * (max(base) - min(base)) / statistics.median(base), 1)}

out = {"bench": "agent", "ranks": ranks, "iters": iters, "count": count, "dtype": "f32", "reps": reps}
out.update(figures("", big, iters))
out["agent_us_per_call"] = round(1e6 * (min(n1h) - min(n1b)) / 2000, 2)
out["fingerprinted_bytes_per_call"] = 2 * 4 * count
# the same with one float per call (a loss or a counter): the agent's fixed cost per record
out["small_count"] = 1
out.update(figures("small_", small, small_iters))
out["small_agent_us_per_call"] = round(1e6 * (min(n1sh) - min(n1sb)) / 200000, 3)
print(json.dumps(out))
PY

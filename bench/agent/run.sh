#!/usr/bin/env bash
# run.sh - bench/agent: allreduce-heavy MPI programs without the agent, with it streaming to a live lockstepd, and
# with it while lockstepd is down (spooling), and in the consensus mode (--lockstep=consensus: only the collectives
# whose output every rank holds alike, outputs only, digests streamed), every collective of it and one in
# CONS_EVERY (LOCKSTEP_CONSENSUS_EVERY), interleaved in one run; prints one JSON line.
# Three workloads, all unmodified MPI programs under LD_PRELOAD at collective level:
#   cg_*     bench/agent/cg: a conjugate-gradient solver (2 one-double allreduces and a halo exchange an iteration)
#   (plain)  bench/agent/allreduce with COUNT floats per call: nothing but gradient-sized allreduces
#   small_*  bench/agent/allreduce with one float per call: the agent's fixed cost per record
# usage: bench/agent/run.sh [BUILD_DIR]
#   env: RANKS (2), REPS (7), ITERS (1200) and COUNT (65536), SMALL_ITERS (24000), CG_ITERS (4400) and CG_NX (64),
#        CONS_EVERY (16)
set -u
build=${1:-build}
B=$(cd "$build" && pwd)
RANKS=${RANKS:-2}; REPS=${REPS:-7}; ITERS=${ITERS:-1200}; COUNT=${COUNT:-65536}; SMALL_ITERS=${SMALL_ITERS:-24000}
CG_ITERS=${CG_ITERS:-4400}; CG_NX=${CG_NX:-64}; CONS_EVERY=${CONS_EVERY:-16}
LOCKSTEPD=${LOCKSTEPD:-$B/bin/lockstepd}
AR=$B/bench/agent/allreduce CG=$B/bench/agent/cg
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
for f in "$LOCKSTEPD" "$AR" "$CG" "$B/lib/liblockstep_mpi.so"; do
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

# agent_args MODE TAG: the mpirun options of a mode, in the array AGENT. Modes: base (no agent), hash (the
# agent fingerprints and numbers every collective but has nowhere to send: its own cost), up (streaming to
# lockstepd), down (lockstepd away: spooling), cons (the consensus mode streaming to lockstepd, as the plugin sets it),
# sample (the same at one collective in CONS_EVERY).
agent_args() {
  AGENT=()
  case $1 in
    hash) AGENT=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_TRACE=collectives) ;;
    up|down)
      local url=http://127.0.0.1:$UP; [ "$1" = down ] && url=http://127.0.0.1:$DOWN
      AGENT=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_SERVER="$url" -x LOCKSTEP_JOB_ID="bench-$1-$2-$$"
             -x LOCKSTEP_STEP_ID=0 -x LOCKSTEP_TRACE=collectives -x LOCKSTEP_SPOOL_DIR="$T/spool") ;;
    cons|sample)
      AGENT=(-x LD_PRELOAD="$B/lib/liblockstep_mpi.so" -x LOCKSTEP_SERVER="http://127.0.0.1:$UP" -x LOCKSTEP_MODE=consensus
             -x LOCKSTEP_JOB_ID="bench-$1-$2-$$" -x LOCKSTEP_STEP_ID=0 -x LOCKSTEP_SPOOL_DIR="$T/spool")
      [ "$1" = sample ] && AGENT+=(-x LOCKSTEP_CONSENSUS_EVERY="$CONS_EVERY") ;;
  esac
}

# one MODE TAG PROG ARGS...: rank 0's first output line, RANKS ranks.
one() {
  agent_args "$1" "$2"; shift 2
  mpirun --allow-run-as-root --oversubscribe -np "$RANKS" "${AGENT[@]}" "$@" 2>>"$T/err" | head -1
}

# Each workload runs its loop in blocks that alternate recording on and off (MPI_Pcontrol), so each overhead
# is measured within one process, its halves milliseconds apart: on a shared machine whose speed drifts from
# one run to the next by tens of percent, only that comparison resolves a percent. Without the agent the two
# halves do the same, and their difference is the noise floor. REPS rounds of the four modes; medians.
declare -A runs
measure() { # measure NAME PROG ARGS...
  local name=$1 rep mode; shift
  for rep in $(seq 1 "$REPS"); do
    for mode in base hash up down cons sample; do runs[$name.$mode]+="$(one $mode "$name$rep" "$@")"$'\n'; done
  done
}
measure cg "$CG" "$CG_ITERS" "$CG_NX" 100
measure big "$AR" "$ITERS" "$COUNT" 50
measure small "$AR" "$SMALL_ITERS" 1 1000
# The agent's whole cost per call on one rank bound to one core, the allreduce a local copy (no network
# noise): the fastest of REPS runs with it less the fastest without. lockstepd and PostgreSQL have the other
# core to themselves, as on a cluster where they run elsewhere, so the up and down figures are what a rank's
# core pays per record, sender thread included.
np1() { # np1 MODE TAG ITERS COUNT
  agent_args "$1" "1-$2"
  mpirun --allow-run-as-root -np 1 --bind-to core "${AGENT[@]}" "$AR" "$3" "$4" 2>>"$T/err" | head -1
}
for rep in $(seq 1 "$REPS"); do
  for mode in base hash cons sample; do runs[np1big.$mode]+="$(np1 $mode "$rep" 2000 "$COUNT")"$'\n'; done
  for mode in base hash up down cons sample; do runs[np1small.$mode]+="$(np1 $mode "$rep" 200000 1)"$'\n'; done
done
for k in "${!runs[@]}"; do printf '%s' "${runs[$k]}" >"$T/runs.$k"; done
python3 - "$T" "$RANKS" "$REPS" "$ITERS" "$COUNT" "$SMALL_ITERS" "$CG_ITERS" "$CG_NX" "$CONS_EVERY" <<'PY'
import json, statistics, sys
d = sys.argv[1]
ranks, reps, iters, count, small_iters, cg_iters, cg_nx, cons_every = map(int, sys.argv[2:10])

def load(name, mode):
    return [[float(x) for x in l.split()] for l in open(f"{d}/runs.{name}.{mode}") if l.strip()]

def on_off(name, mode):
    """median over rounds of the recording blocks' time over the paused blocks' time, in percent"""
    col = 3 if name == "cg" else 1
    if any(r[col] == 0 or r[col + 1] == 0 for r in load(name, mode)):
        sys.exit(f"bench/agent: {name} has too few iterations for 4 warm-up blocks and both halves")
    return round(100 * (statistics.median(r[col] / r[col + 1] for r in load(name, mode)) - 1), 2)

def figures(prefix, name, per, calls):
    base = [r[0] for r in load(name, "base")]
    f = {prefix + "us_per_" + per: round(1e6 * statistics.median(base) / calls, 1)}
    for mode, key in (("hash", "hash_only"), ("up", "up"), ("down", "down"), ("cons", "consensus"),
                      ("sample", "consensus_sampled")):
        f[prefix + "overhead_" + key + "_pct"] = on_off(name, mode)
    # the consensus mode's overhead as a share of today's (streaming every record): what leaving it on costs
    up = f[prefix + "overhead_up_pct"]
    f[prefix + "consensus_to_up_ratio"] = round(f[prefix + "overhead_consensus_pct"] / up, 2) if up > 0 else None
    f[prefix + "noise_floor_pct"] = on_off(name, "base")
    return f

def per_call(name, calls, mode="hash"):
    """the agent's cost per call in microseconds: fastest run with it less fastest run without"""
    return (min(r[0] for r in load(name, mode)) - min(r[0] for r in load(name, "base"))) * 1e6 / calls

out = {"bench": "agent", "ranks": ranks, "reps": reps, "cg_iters": cg_iters, "cg_nx": cg_nx}
out.update(figures("cg_", "cg", "iter", cg_iters))
out["cg_allreduce_share_pct"] = round(100 * statistics.median(r[1] for r in load("cg", "base")), 1)
# the agent never changes what the program computes
out["cg_residuals_equal"] = len({r[2] for m in ("base", "hash", "up", "down", "cons", "sample") for r in load("cg", m)}) == 1
out.update({"iters": iters, "count": count, "dtype": "f32"})
out.update(figures("", "big", "allreduce", iters))
out["agent_us_per_call"] = round(per_call("np1big", 2000), 2)
# the consensus mode's own cost per large call, and at one in CONS_EVERY, as a share of the two-rank allreduce
for mode, key in (("cons", "consensus"), ("sample", "consensus_sampled")):
    us = per_call("np1big", 2000, mode)
    out["agent_us_per_call_" + key] = round(us, 2)
    out["agent_pct_of_allreduce_" + key] = round(100 * us / out["us_per_allreduce"], 2)
out["fingerprinted_bytes_per_call"] = 2 * 4 * count
out["small_count"] = 1
out.update(figures("small_", "small", "allreduce", small_iters))
out["small_agent_us_per_call"] = round(per_call("np1small", 200000), 3)
out["small_agent_us_per_call_up"] = round(per_call("np1small", 200000, "up"), 3)
out["small_agent_us_per_call_down"] = round(per_call("np1small", 200000, "down"), 3)
out["small_agent_us_per_call_consensus"] = round(per_call("np1small", 200000, "cons"), 3)
out["small_agent_us_per_call_consensus_sampled"] = round(per_call("np1small", 200000, "sample"), 3)
for mode, key in (("cons", "consensus"), ("sample", "consensus_sampled")):
    out["small_agent_pct_of_allreduce_" + key] = round(
        100 * out["small_agent_us_per_call_" + key] / out["small_us_per_allreduce"], 2)
out["consensus_every"] = cons_every
out["consensus_goal_pct"] = 1.0
out["consensus_within_goal"] = all(out[k] <= 1.0 for k in ("cg_overhead_consensus_pct", "overhead_consensus_pct"))
out["consensus_sampled_within_goal"] = all(out[k] <= 1.0 for k in ("cg_overhead_consensus_sampled_pct",
                                                                    "overhead_consensus_sampled_pct"))
print(json.dumps(out))
PY

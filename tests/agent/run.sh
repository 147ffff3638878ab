#!/usr/bin/env bash
# run.sh - the agent tier: streaming to a real lockstepd (embedded PostgreSQL), spool and replay, a server that
# dies or never answers, fork, LD_PRELOAD self-start, an unmodified 4-rank Open MPI program under LD_PRELOAD, and
# real programs (tests/apps: C, C++ over a stripped library, Fortran: tests/agent/fortran.sh) judged by lockstepd:
# call sites, causes, ignore rules.
# usage: tests/agent/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=${1:-build}
B=$(cd "$build" && pwd)
SRC=$(pwd)
LS=$B/bin/lockstep
LOCKSTEPD=${LOCKSTEPD:-$B/bin/lockstepd}   # override to test against another build of the server
PROG=$B/tests/agent/agentprog
MPIPROG=$B/tests/agent/mpi_collectives
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }

for f in "$LOCKSTEPD" "$LS" "$PROG" "$B/lib/liblockstep.so"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "FAIL missing $f (build first)"; echo "0 passed, 1 failed"; exit 1; }
done

T=$(mktemp -d /tmp/ls-agent-tier.XXXXXX)
chmod 755 "$T"                       # the embedded PostgreSQL runs as postgres under it
SRV_PID=; HANG_PID=; TLS_ARGS=()
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT

# Under SAN=1 the agent carries ASan: a preloaded ASan library needs the ASan runtime first in LD_PRELOAD.
PRE=
if [[ "$B" == */san ]]; then
  PRE="$(${CC:-gcc} -print-file-name=libasan.so):"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fi

start_server() {
  rm -f "$T/port"
  "$LOCKSTEPD" --listen "127.0.0.1:$PORT" --state-dir "$T/state" --port-file "$T/port" \
    --log-file "$T/lockstepd.log" --threads 2 "${TLS_ARGS[@]}" >>"$T/lockstepd.out" 2>&1 &
  SRV_PID=$!
  for _ in $(seq 1 600); do   # up to a minute: a loaded machine restarts PostgreSQL slowly
    [ -s "$T/port" ] && curl -sf ${TLS_ARGS[0]:+--cacert "$T/cert.pem"} "$URL/api/v1/health" >/dev/null 2>&1 && return 0
    kill -0 "$SRV_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "lockstepd did not start:"; tail -5 "$T/lockstepd.log" "$T/lockstepd.out" 2>/dev/null
  return 1
}
stop_server() {   # $1: signal
  [ -n "$SRV_PID" ] || return 0
  kill "-${1:-TERM}" "$SRV_PID" 2>/dev/null
  for _ in $(seq 1 300); do
    st=$(ps -o stat= -p "$SRV_PID" 2>/dev/null | tr -d ' ')
    { [ -z "$st" ] || [[ "$st" == Z* ]]; } && break
    sleep 0.1
  done
  wait "$SRV_PID" 2>/dev/null
  SRV_PID=
}
cleanup() {
  stop_server TERM
  [ -n "$HANG_PID" ] && kill "$HANG_PID" 2>/dev/null
  # a SIGKILLed lockstepd leaves its embedded PostgreSQL running: stop the one this tier started
  if [ -f "$T/state/pgdata/postmaster.pid" ]; then
    su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl stop -D '$T/state/pgdata' -m fast -w" >/dev/null 2>&1
  fi
  rm -rf "$T"
}
trap cleanup EXIT

# run_prog NAME JOB [ENV...] -- ARGS: run agentprog as one rank with a trace and a spool; times it.
run_prog() {
  local name=$1 job=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local t0; t0=$(date +%s.%N)
  env LOCKSTEP_SERVER="$URL" LOCKSTEP_JOB_ID="$job" LOCKSTEP_STEP_ID=0 LOCKSTEP_TRACE=collectives \
      LOCKSTEP_TRACE_DIR="$T/$name/trace" LOCKSTEP_SPOOL_DIR="$T/$name/spool" LOCKSTEP_BATCH_MS=50 "${envs[@]}" \
      "$PROG" "$@" >"$T/$name.out" 2>"$T/$name.err"
  local rc=$?
  ELAPSED=$(python3 -c "import time; print(round(time.time() - $t0, 2))")
  return $rc
}
check() {   # JOB TRACEDIR RANKS
  python3 "$SRC/tests/agent/check_run.py" "$URL" "$1" "$2" "$3" --lockstep "$LS" >"$T/check.out" 2>&1
  local rc=$?
  sed 's/^/     /' "$T/check.out"
  return $rc
}
spooled() { find "$1" -name 'batch-*.lsbatch' 2>/dev/null | wc -l; }
run_status() {
  curl -s "$URL/api/v1/runs?job=$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["items"]; print(r[0]["status"] if r else "none")'
}

if ! start_server; then bad "lockstepd starts"; echo "$pass passed, $fail failed"; exit 1; fi
ok "lockstepd is up on $URL (embedded PostgreSQL)"

# 1. Server up: two ranks stream; the server holds exactly the traces' records, a manifest per rank, both ends.
mkdir -p "$T/up"
(run_prog up1 J-up LOCKSTEP_RANK=1 LOCKSTEP_RANKS=2 -- --steps 40) & p1=$!
run_prog up J-up LOCKSTEP_RANK=0 LOCKSTEP_RANKS=2 -- --steps 40; r0=$?
wait $p1; r1=$?
cp "$T/up1/trace/"* "$T/up/trace/" 2>/dev/null
if [ $r0 -eq 0 ] && [ $r1 -eq 0 ] && check J-up "$T/up/trace" 2 && [ "$(run_status J-up)" = ended ] &&
   [ "$(spooled "$T/up/spool")" -eq 0 ] && [ ! -s "$T/up.err" ]; then
  ok "server up: 2 ranks streamed, server records equal the traces, manifests and ends stored, spool empty"
else bad "server up (stderr: $(head -c 300 "$T/up.err"))"; fi

# 1a. Rank 0 records nothing (its trace window leaves it out) but called ls_init: it still registers the run,
#     sends its manifest and its end, so rank 1's records land in a run that ends.
mkdir -p "$T/quiet/trace"
(run_prog quiet1 J-quiet LOCKSTEP_RANK=1 LOCKSTEP_RANKS=2 LOCKSTEP_TRACE='collectives:ranks=1' -- --steps 20) & q1=$!
run_prog quiet J-quiet LOCKSTEP_RANK=0 LOCKSTEP_RANKS=2 LOCKSTEP_TRACE='collectives:ranks=1' -- --steps 20; q0=$?
wait $q1; q1=$?
cp "$T/quiet1/trace/"* "$T/quiet/trace/" 2>/dev/null
if [ $q0 -eq 0 ] && [ $q1 -eq 0 ] && check J-quiet "$T/quiet/trace" 2 && [ "$(run_status J-quiet)" = ended ] &&
   [ "$(spooled "$T/quiet1/spool")" -eq 0 ]; then
  ok "a rank 0 that records nothing still registers, sends its manifest and end; the run ends"
else bad "quiet rank 0 (rc $q0/$q1, status $(run_status J-quiet)): $(head -c 300 "$T/quiet1.err")"; fi

# 1b. Two live processes claiming one rank of one job: the second says so and does not stream (its batch_seq
#     would collide with the first's and be taken for replays); the first's data arrive whole.
run_prog dupA J-dup -- --steps 40 --sleep-ms 25 & pa=$!
sleep 0.4
run_prog dupB J-dup LOCKSTEP_SPOOL_DIR="$T/dupA/spool" -- --steps 5; rb=$?
wait $pa; ra=$?
if [ $ra -eq 0 ] && [ $rb -eq 0 ] && grep -q "already streams as rank 0" "$T/dupB.err" && check J-dup "$T/dupA/trace" 1; then
  ok "a second live process with the same rank is refused streaming, with one warning; the first is whole"
else bad "duplicate rank (rc $ra/$rb): $(head -c 300 "$T/dupB.err")"; fi

# 1c. A job id used again over an old spool whose run lockstepd does not know (a new database, or a cluster that
#     numbers its jobs from 1 again): the earlier process spooled its batches with the server away, and its spool
#     names a run lockstepd never heard of. The new process says so, streams to a run of its own (its records
#     exactly, none of the old ones), and sets the old batches aside as *.orphaned.
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
run_prog reuseA J-reuse LOCKSTEP_SERVER="http://127.0.0.1:$DEAD" LOCKSTEP_FLUSH_TIMEOUT=1 -- --steps 10; rA=$?
old_batches=$(spooled "$T/reuseA/spool")
python3 - "$T/reuseA/spool" <<'PY'
import glob, re, sys, uuid
for meta in glob.glob(sys.argv[1] + "/*/rank-*/spool.meta"):
    text = open(meta).read()
    open(meta, "w").write(re.sub(r"(?m)^run_id=.*$", "run_id=" + str(uuid.uuid4()), text))
PY
run_prog reuseB J-reuse LOCKSTEP_SPOOL_DIR="$T/reuseA/spool" -- --steps 20; rB=$?
orphaned=$(find "$T/reuseA/spool" -name 'batch-*.lsbatch.orphaned' | wc -l)
if [ $rA -eq 0 ] && [ $rB -eq 0 ] && [ "$old_batches" -gt 0 ] && [ "$orphaned" = "$old_batches" ] &&
   grep -q "which lockstepd does not know" "$T/reuseB.err" && check J-reuse "$T/reuseB/trace" 1 &&
   [ "$(run_status J-reuse)" = ended ] && [ "$(spooled "$T/reuseA/spool")" -eq 0 ]; then
  ok "a spool naming a run lockstepd does not know: the new process streams to its own run, $orphaned old batches set aside"
else bad "reused job id over an old spool (rc $rA/$rB, $old_batches spooled, $orphaned set aside, status $(run_status J-reuse)): $(head -c 400 "$T/reuseB.err")"; fi

# 2. Server killed (SIGKILL) and restarted mid-run: nothing lost, nothing doubled.
run_prog kill J-kill -- --steps 60 --sleep-ms 50 & pk=$!
sleep 1; stop_server KILL; sleep 1; start_server || bad "lockstepd restarts"
wait $pk; rk=$?
if [ $rk -eq 0 ] && check J-kill "$T/kill/trace" 1 && [ "$(run_status J-kill)" = ended ]; then
  ok "server killed with SIGKILL and restarted mid-run: nothing lost, nothing doubled, run ended"
else bad "server killed mid-run (rc $rk; stderr: $(head -c 300 "$T/kill.err"))"; fi

# 3. Server absent for the whole run: the job is not slowed, everything is spooled and said once; then
#    `lockstep replay` (a later process) sends it all.
stop_server TERM
run_prog down J-down LOCKSTEP_FLUSH_TIMEOUT=10 -- --steps 30; rd=$?
n_said=$(grep -c "did not take" "$T/down.err")
n_spool=$(spooled "$T/down/spool")
if [ $rd -eq 0 ] && [ "$n_said" -eq 1 ] && [ "$n_spool" -gt 0 ] && python3 -c "exit(0 if $ELAPSED < 3 else 1)"; then
  ok "server absent: job took ${ELAPSED}s, $n_spool batch(es) spooled, said once on stderr"
else bad "server absent: rc $rd, ${ELAPSED}s, $n_spool spooled, said $n_said times: $(head -c 300 "$T/down.err")"; fi
start_server || bad "lockstepd restarts"
"$LS" replay --server "$URL" "$T/down/spool" >"$T/replay.out" 2>&1; rr=$?
if [ $rr -eq 0 ] && check J-down "$T/down/trace" 1 && [ "$(spooled "$T/down/spool")" -eq 0 ] &&
   [ "$(run_status J-down)" = ended ]; then
  ok "lockstep replay: $(tail -1 "$T/replay.out" | cut -c1-80); server equals the trace; spool emptied"
else bad "lockstep replay (rc $rr): $(cat "$T/replay.out" | head -c 400)"; fi
"$LS" replay --server "$URL" "$T/down/spool" >"$T/replay2.out" 2>&1
if check J-down "$T/down/trace" 1 >/dev/null; then ok "a second replay doubles nothing"; else bad "second replay"; fi

# 4. Server absent at start, back mid-run: the agent itself replays its spool in order, nothing lost.
stop_server TERM
run_prog late J-late -- --steps 60 --sleep-ms 50 & pl=$!
sleep 0.7; start_server || bad "lockstepd restarts"
wait $pl; rl=$?
if [ $rl -eq 0 ] && check J-late "$T/late/trace" 1 && [ "$(spooled "$T/late/spool")" -eq 0 ]; then
  ok "server back mid-run: the agent replayed its spool itself; server equals the trace"
else bad "server back mid-run (rc $rl): $(head -c 300 "$T/late.err")"; fi

# 4b. lockstepd refuses the run (here: a mode it does not know, as an older lockstepd refuses a newer mode): the
#     job is not held to the flush bound waiting for it to change its mind, and the refusal is said, not "unreachable".
run_prog refused J-refused LOCKSTEP_MODE=bogus LOCKSTEP_FLUSH_TIMEOUT=10 -- --steps 10; rf=$?
if [ $rf -eq 0 ] && python3 -c "exit(0 if $ELAPSED < 3 else 1)" && [ "$(grep -c "refused the run" "$T/refused.err")" -eq 2 ] &&
   ! grep -q unreachable "$T/refused.err" && [ "$(spooled "$T/refused/spool")" -gt 0 ]; then
  ok "lockstepd refuses the run: job took ${ELAPSED}s (flush bound 10 s), the refusal said, batches kept in the spool"
else bad "lockstepd refuses the run: rc $rf, ${ELAPSED}s: $(head -c 400 "$T/refused.err")"; fi

# 5. A server that accepts connections and never answers: wall time grows by at most the flush bound (2 s
#    here), memory stays under a small cap (batches go to the spool), and nothing is lost (replayed later).
HPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $HPORT)); s.listen(64); conns = []
while True:
    c, _ = s.accept(); conns.append(c)   # accept, read nothing, answer nothing
" & HANG_PID=$!
sleep 0.3
run_prog base J-base LOCKSTEP_SERVER= -- --steps 40 --kib 64 --sleep-ms 20; base=$ELAPSED
run_prog hang J-hang LOCKSTEP_SERVER="http://127.0.0.1:$HPORT" LOCKSTEP_FLUSH_TIMEOUT=2 LOCKSTEP_MAX_MEM=16K \
  LOCKSTEP_BATCH_BYTES=4K LOCKSTEP_HTTP_TIMEOUT=30 -- --steps 40 --kib 64 --sleep-ms 20; rh=$?
kill "$HANG_PID" 2>/dev/null; wait "$HANG_PID" 2>/dev/null; HANG_PID=
extra=$(python3 -c "print(round($ELAPSED - $base, 2))")
if [ $rh -eq 0 ] && python3 -c "exit(0 if $extra <= 2 + 1.0 else 1)" && grep -q "did not take" "$T/hang.err"; then
  ok "server never answers: +${extra}s over ${base}s (flush bound 2 s); the rest was left in the spool"
else bad "server never answers: rc $rh, +${extra}s over ${base}s: $(head -c 300 "$T/hang.err")"; fi
"$LS" replay --server "$URL" "$T/hang/spool" >"$T/replay3.out" 2>&1
if check J-hang "$T/hang/trace" 1; then ok "what the hung server never took is replayed whole"
else bad "replay after the hung server: $(head -c 300 "$T/replay3.out")"; fi

# 5b. The memory cap: while the sender is stuck in a request that never ends, a burst of records is spilled
#     to the spool by the caller in bounded memory (many 4K batches), none lost.
python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $HPORT)); s.listen(64); conns = []
while True:
    c, _ = s.accept(); conns.append(c)
" & HANG_PID=$!
sleep 0.3
run_prog cap J-cap LOCKSTEP_SERVER="http://127.0.0.1:$HPORT" LOCKSTEP_FLUSH_TIMEOUT=1 LOCKSTEP_MAX_MEM=16K \
  LOCKSTEP_BATCH_BYTES=4K LOCKSTEP_BATCH_MS=100000 LOCKSTEP_HTTP_TIMEOUT=60 -- --steps 3000 --kib 1; rc_cap=$?
kill "$HANG_PID" 2>/dev/null; wait "$HANG_PID" 2>/dev/null; HANG_PID=
n_cap=$(spooled "$T/cap/spool")
"$LS" replay --server "$URL" "$T/cap/spool" >"$T/replay4.out" 2>&1
if [ $rc_cap -eq 0 ] && [ "$n_cap" -ge 50 ] && check J-cap "$T/cap/trace" 1; then
  ok "memory cap 16K with a stuck sender: $n_cap batches spilled to the spool, all 9000 records replayed"
else bad "memory cap: rc $rc_cap, $n_cap spooled: $(head -c 300 "$T/cap.err")"; fi

# 6. fork(): the child records nothing (one warning), its exit does not end the rank or flush twice.
run_prog fork J-fork -- --steps 10 --fork; rf=$?
if [ $rf -eq 0 ] && check J-fork "$T/fork/trace" 1 && [ "$(grep -c 'fork' "$T/fork.err")" -eq 1 ] &&
   ! "$LS" dump "$T/fork/trace/rank-00000.lstrace" | grep -q child.metric && [ "$(run_status J-fork)" = ended ]; then
  ok "fork: the child's record is dropped with one warning; parent's records whole, once"
else bad "fork (rc $rf): $(head -c 300 "$T/fork.err")"; fi

# 7. LD_PRELOAD self-start: the program never calls ls_init; its exit code becomes the rank's end.
run_prog auto J-auto LD_PRELOAD="$PRE$B/lib/liblockstep.so" -- --steps 12 --no-init --exit 3; ra=$?
if [ $ra -eq 3 ] && check J-auto "$T/auto/trace" 1 && [ "$(run_status J-auto)" = failed ]; then
  ok "LD_PRELOAD self-start without ls_init: streamed and traced; exit code 3 recorded (run failed)"
else bad "LD_PRELOAD self-start (rc $ra, status $(run_status J-auto)): $(head -c 300 "$T/auto.err")"; fi

# 7b. liblockstep_mpi.so exports exactly the MPI functions it interposes, and preloading it (with the agent)
#     into a program without MPI is harmless.
MPI_SO=$B/lib/liblockstep_mpi.so
want=$(sed -n '/global:/,/local:/p' "$SRC/agent/mpi/liblockstep_mpi.map" | grep -v '^ */\*' | grep -Eo '[A-Za-z_][A-Za-z0-9_]*;' | tr -d ';' | sort)
got=$(nm -D --defined-only "$MPI_SO" 2>/dev/null | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | grep -v '^LOCKSTEP_' | sort)
if [ -n "$want" ] && [ "$want" = "$got" ] && ! ldd "$MPI_SO" | grep -q libmpi; then
  ok "liblockstep_mpi.so exports exactly its $(echo "$want" | wc -l) MPI wrappers and does not link libmpi"
else bad "liblockstep_mpi.so exports: $(diff <(echo "$want") <(echo "$got") | tr '\n' ' ')"; fi
run_prog nompi J-nompi LD_PRELOAD="$PRE$MPI_SO" -- --steps 5 --no-init; rn=$?
if [ $rn -eq 0 ] && check J-nompi "$T/nompi/trace" 1 >/dev/null; then
  ok "liblockstep_mpi.so preloaded into a program without MPI: harmless, the agent still self-starts"
else bad "liblockstep_mpi.so in a non-MPI program (rc $rn): $(head -c 300 "$T/nompi.err")"; fi

# 7c. Where CUDA and NCCL are present, liblockstep_nccl.so is built: it exports exactly its NCCL wrappers and is
#     harmless in a program without NCCL. (Its GPU behaviour is tests/agent/gpu-check-nccl.sh, run on a GPU.)
NCCL_SO=$B/lib/liblockstep_nccl.so
if [ -f "$NCCL_SO" ]; then
  want=$(sed -n '/global:/,/local:/p' "$SRC/agent/nccl/liblockstep_nccl.map" | grep -Eo '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;' | tr -d ' ;' | sort)
  got=$(nm -D --defined-only "$NCCL_SO" 2>/dev/null | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | grep -v '^LOCKSTEP_' | sort)
  run_prog nonccl J-nonccl LD_PRELOAD="$PRE$NCCL_SO" -- --steps 5 --no-init; rn=$?
  if [ -n "$want" ] && [ "$want" = "$got" ] && ! ldd "$NCCL_SO" | grep -q libnccl && [ $rn -eq 0 ] &&
     check J-nonccl "$T/nonccl/trace" 1 >/dev/null; then
    ok "liblockstep_nccl.so exports its $(echo "$want" | wc -l) NCCL wrappers, links no libnccl, is harmless without NCCL"
  else bad "liblockstep_nccl.so (rc $rn): $(diff <(echo "$want") <(echo "$got") | tr '\n' ' ') $(head -c 200 "$T/nonccl.err")"; fi
fi

# 8. An unmodified 4-rank Open MPI program under LD_PRELOAD, twice in one twin group: every rank records its
#    collectives, the two runs' traces match, and lockstepd holds both runs whole.
if [ -x "$MPIPROG" ] && [ -f "$B/lib/liblockstep_mpi.so" ] && command -v mpirun >/dev/null; then
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
  mpi_ok=1
  for r in 1 2; do
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 \
      -x LD_PRELOAD="$PRE$B/lib/liblockstep_mpi.so" -x LOCKSTEP_SERVER="$URL" -x LOCKSTEP_JOB_ID="J-mpi$r" \
      -x LOCKSTEP_STEP_ID=0 -x LOCKSTEP_TWIN_GROUP="g-mpi-$$" -x LOCKSTEP_TRACE=collectives \
      -x LOCKSTEP_TRACE_DIR="$T/mpi$r/trace" -x LOCKSTEP_SPOOL_DIR="$T/mpi$r/spool" -x LOCKSTEP_BATCH_MS=50 \
      -x LOCKSTEP_STEP_ON=mpi.reduce \
      ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$MPIPROG" 3 >"$T/mpi$r.out" 2>&1 || { mpi_ok=0; tail -5 "$T/mpi$r.out"; }
  done
  names=$("$LS" dump "$T/mpi1/trace/rank-00003.lstrace" 2>/dev/null | grep -v '"consensus.digest"' | python3 -c '
import json, sys; print(" ".join(sorted({json.loads(l)["name"] for l in sys.stdin})))')
  steps=$("$LS" dump "$T/mpi1/trace/rank-00003.lstrace" 2>/dev/null | grep -v '"consensus.digest"' | python3 -c '
import json, sys; print(" ".join(map(str, sorted({json.loads(l)["step"] for l in sys.stdin}))))')
  want="mpi.allgather mpi.allgatherv mpi.allreduce mpi.alltoall mpi.alltoallv mpi.bcast mpi.reduce mpi.reduce_scatter mpi.reduce_scatter_block"
  if [ $mpi_ok -eq 1 ] && [ "$names" = "$want" ] && [ "$(ls "$T/mpi1/trace" | wc -l)" -eq 4 ]; then
    ok "MPI under LD_PRELOAD: every rank recorded all 9 interposed collectives"
  else bad "MPI under LD_PRELOAD: ok=$mpi_ok names='$names'"; fi
  if [ "$steps" = "0 1 2 3" ]; then ok "LOCKSTEP_STEP_ON=mpi.reduce gave the unmodified program steps 0-3"
  else bad "LOCKSTEP_STEP_ON: steps '$steps', want '0 1 2 3'"; fi
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_PRELOAD="$PRE$B/lib/liblockstep_mpi.so" \
    -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_TRACE_DIR="$T/mpinoin" -x LOCKSTEP_MPI_INPUTS=0 \
    ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$MPIPROG" 1 >"$T/mpinoin.out" 2>&1
  n_in1=$("$LS" dump "$T/mpi1/trace/rank-00000.lstrace" | grep -c '"inputs"')
  n_in0=$("$LS" dump "$T/mpinoin/rank-00000.lstrace" 2>/dev/null | grep -c '"inputs"')
  n_rec0=$("$LS" dump "$T/mpinoin/rank-00000.lstrace" 2>/dev/null | grep -c mpi.allreduce)
  if [ "$n_in1" -gt 0 ] && [ "$n_in0" -eq 0 ] && [ "$n_rec0" -gt 0 ]; then
    ok "input fingerprints by default ($n_in1 records); LOCKSTEP_MPI_INPUTS=0 records outputs only"
  else bad "LOCKSTEP_MPI_INPUTS: $n_in1 with inputs by default, $n_in0 with them off, $n_rec0 records"; fi
  # Datatypes freed and rebuilt (Open MPI hands the freed handle out again): every record has the bytes of the
  # type it was called with, against the program's own packing and LSFP-1.
  timeout 60 mpirun --allow-run-as-root -np 1 -x LD_PRELOAD="$PRE$B/lib/liblockstep_mpi.so" -x LOCKSTEP_AUTOSTART=1 \
    -x LOCKSTEP_TRACE_DIR="$T/mpidt" ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$B/tests/agent/mpi_dtypes" >"$T/mpidt.out" 2>&1
  dt_got=$("$LS" dump "$T/mpidt/rank-00000.lstrace" 2>/dev/null | grep -v '"consensus.digest"' | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["name"] == "mpi.bcast": print("expect", r["occurrence"], r["fp"], r["nbytes"])')
  dt_want=$(grep '^expect' "$T/mpidt.out")
  if [ -n "$dt_want" ] && [ "$dt_got" = "$dt_want" ]; then
    ok "MPI datatypes freed and rebuilt: each broadcast fingerprinted with its own type ($(grep -o 'reused: .*' "$T/mpidt.out")); none recorded while MPI_Pcontrol(0) paused it"
  else bad "MPI datatypes: want '$dt_want', got '$dt_got' ($(tail -2 "$T/mpidt.out"))"; fi
  if "$LS" diff "$T/mpi1/trace" "$T/mpi2/trace" >"$T/mpidiff.out" 2>&1; then ok "MPI twins match (lockstep diff)"
  else bad "MPI twins: $(head -5 "$T/mpidiff.out")"; fi
  if check J-mpi1 "$T/mpi1/trace" 4 && check J-mpi2 "$T/mpi2/trace" 4; then
    ok "MPI: lockstepd holds both 4-rank runs whole (rank 0 registered, ranks 1-3 found the run)"
  else bad "MPI runs on the server"; fi
  st=none
  for _ in $(seq 1 50); do
    st=$(curl -s "$URL/api/v1/twins/g-mpi-$$" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("status"))' 2>/dev/null)
    [ "$st" = match ] && break; sleep 0.2
  done
  if [ "$st" = match ]; then ok "MPI twins match on lockstepd too"; else bad "lockstepd twin status: $st"; fi
else
  bad "MPI test programs or mpirun missing"
fi

# 8b. Consensus without a twin: a clean 4-rank run's consensus digests (allreduce, allgather(v), bcast) agree across
#     the ranks; with the fault shim preloaded after the wrappers (one bit of rank 2's 31st MPI_Allreduce output
#     flipped after the reduction: iteration 10's first allreduce, consensus place 70), exactly rank 2's digest of
#     window 1 differs; with steps (LOCKSTEP_STEP_ON=mpi.reduce: iteration 10 is step 10), rank 2's digest of step 10.
SHIM=$B/tests/agent/shim_corrupt.so
CONS=$B/tests/agent/cons_digests
if [ -x "$MPIPROG" ] && [ -f "$SHIM" ] && [ -x "$CONS" ] && command -v mpirun >/dev/null; then
  traced_run() {   # NAME PROGRAM ITERATIONS PRELOAD [ENV=VALUE...]: 4 ranks, traces only; digests in NAME.dig
    local name=$1 prog=$2 iters=$3 pre=$4; shift 4
    local xs=()
    for kv in "$@"; do xs+=(-x "$kv"); done
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_PRELOAD="$PRE$pre" -x LOCKSTEP_AUTOSTART=1 \
      -x LOCKSTEP_TRACE_DIR="$T/$name" "${xs[@]}" ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$prog" "$iters" \
      >"$T/$name.out" 2>&1 || tail -3 "$T/$name.out"
    "$CONS" "$T/$name"/rank-*.lstrace | awk '$1 == "digest"' >"$T/$name.dig"
  }
  cons_run() { local name=$1; shift; traced_run "$name" "$MPIPROG" 30 "$@"; }   # NAME PRELOAD [ENV=VALUE...]
  odd() {   # DIGEST_FILE: "rank step window" of each digest that differs from the one most ranks sent
    python3 -c '
import collections, sys
by = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    _, rank, step, key, window, n, fold, size = l.split()
    by[(int(step), key, int(window), int(size))][int(rank)] = (n, fold)
out = []
for (step, key, window, size), copies in sorted(by.items()):
    common = collections.Counter(copies.values()).most_common(1)[0][0]
    out += [f"{rank} {step} {window}" for rank, c in sorted(copies.items()) if c != common or len(copies) != size]
print(",".join(out) or "none")' "$1"
  }
  srv_run() {   # NAME PROGRAM ITERATIONS [ENV=VALUE...]: 4 ranks under the fault shim, consensus mode, digests streamed
    local name=$1 prog=$2 iters=$3; shift 3   # to lockstepd as job J-NAME-PID; output in NAME.out
    local xs=()
    for kv in "$@"; do xs+=(-x "$kv"); done
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_PRELOAD="$PRE$B/lib/liblockstep_mpi.so:$SHIM" \
      -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_MODE=consensus -x LOCKSTEP_SERVER="$URL" -x LOCKSTEP_JOB_ID="J-$name-$$" \
      -x LOCKSTEP_SPOOL_DIR="$T/$name-spool" -x LOCKSTEP_MANIFEST_HASH=0 -x LOCKSTEP_SHIM_RANK=2 "${xs[@]}" \
      ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$prog" "$iters" >"$T/$name.out" 2>&1
  }
  cons_first_named() {   # JOB NAME: "status name occurrence odd_ranks function" of the job's run's first consensus
    local line=""         # disagreement, once it names a record NAME (10 s at most)
    for _ in $(seq 1 50); do
      line=$(curl -s "$URL/api/v1/runs?job=$1" | python3 -c '
import json, sys, urllib.request
items = json.load(sys.stdin)["items"]
c = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/runs/%s/consensus" % items[0]["run_id"])) if items else {}
f = c.get("first") or {}
print(c.get("status"), f.get("name"), f.get("occurrence"), f.get("odd_ranks"), (f.get("site") or {}).get("function"))' "$URL" 2>/dev/null)
      case "$line" in "disagree $2 "*) break ;; esac
      sleep 0.2
    done
    echo "$line"
  }
  cons_run cons-clean "$B/lib/liblockstep_mpi.so"
  cons_run cons-shim "$B/lib/liblockstep_mpi.so:$SHIM" LOCKSTEP_SHIM_RANK=2 LOCKSTEP_SHIM_CALL=30
  cons_run cons-step "$B/lib/liblockstep_mpi.so:$SHIM" LOCKSTEP_SHIM_RANK=2 LOCKSTEP_SHIM_CALL=30 LOCKSTEP_STEP_ON=mpi.reduce
  n_clean=$(wc -l <"$T/cons-clean.dig")
  n_places=$("$CONS" "$T/cons-clean/rank-00001.lstrace" | awk '$1 == "place"' | wc -l)
  if [ "$n_clean" -eq 16 ] && [ "$n_places" -eq 210 ] && [ "$(odd "$T/cons-clean.dig")" = none ]; then
    ok "consensus: a clean run's 210 places per rank fold into 4 windows whose digests agree on all 4 ranks"
  else bad "consensus clean run: $n_clean digests, $n_places places, odd '$(odd "$T/cons-clean.dig")'"; fi
  if grep -q "rank 2, MPI_Allreduce call 30" "$T/cons-shim.out" && [ "$(odd "$T/cons-shim.dig")" = "2 0 1" ]; then
    ok "consensus: one bit flipped in rank 2's allreduce output (fault shim) differs at rank 2, window 1 only"
  else bad "consensus with the shim: odd '$(odd "$T/cons-shim.dig")' ($(tail -2 "$T/cons-shim.out"))"; fi
  if [ "$(odd "$T/cons-step.dig")" = "2 10 0" ]; then
    ok "consensus with steps: the shim's flip differs at rank 2, step 10, window 0 only"
  else bad "consensus with steps: odd '$(odd "$T/cons-step.dig")'"; fi
  # The consensus mode at one collective in 4 (LOCKSTEP_CONSENSUS_EVERY=4): every rank fingerprints the same quarter
  # of each communicator's consensus collectives (agent/mode.h, mode_sampled), so the places still line up: the same
  # places on all 4 ranks, about a quarter of the full run's, digests that agree; and a rank whose every allreduce
  # output is corrupted (the shim at every call: a NIC that stays bad) is the one odd rank.
  cons_run cons-every "$B/lib/liblockstep_mpi.so" LOCKSTEP_MODE=consensus LOCKSTEP_CONSENSUS_EVERY=4
  cons_run cons-every-bad "$B/lib/liblockstep_mpi.so:$SHIM" LOCKSTEP_MODE=consensus LOCKSTEP_CONSENSUS_EVERY=4 \
    LOCKSTEP_SHIM_RANK=2 LOCKSTEP_SHIM_CALL=-1
  same_places=$("$CONS" "$T/cons-every"/rank-*.lstrace | python3 -c '
import collections, sys
by = collections.defaultdict(set)
for l in sys.stdin:
    f = l.split()
    if f[0] == "place":
        by[f[1]].add(tuple(f[2:]))
print(len(next(iter(by.values()))) if len(by) == 4 and len({frozenset(v) for v in by.values()}) == 1 else -1)')
  bad_odd=$(odd "$T/cons-every-bad.dig")
  if [ "$same_places" -ge 26 ] && [ "$same_places" -le 105 ] && [ "$(odd "$T/cons-every.dig")" = none ] &&
     [ -n "$(sed -n 1p "$T/cons-every.dig")" ] && [ "$bad_odd" != none ] &&
     [ -z "$(echo "$bad_odd" | tr ',' '\n' | grep -v '^2 ')" ]; then
    ok "consensus at 1 in 4: the same $same_places of 210 places on every rank, digests agree; a rank always corrupted is the odd one"
  else bad "consensus at 1 in 4: $same_places places alike on all ranks, odd '$(odd "$T/cons-every.dig")' clean, '$bad_odd' with the shim"; fi
  # Quantum ESPRESSO's pw.x (Fortran, ScaLAPACK) on 4 ranks, clean: its 2x2 grid for the dense algebra adds row and
  # column groups of 2 ranks, where a BLACS broadcast's root calls from Czgebs2d and its receivers from Czgebr2d, and
  # the members' counts of a name over all their groups differ. Every group's windows (the world's and the pairs')
  # must agree on every member: neither the call site nor the occurrence is part of a copy (common/consensus.h).
  if command -v pw.x >/dev/null; then
    mkdir -p "$T/pw-out" && sed "s|OUTDIR|$T/pw-out|" "$SRC/tests/apps/pw-si.in" >"$T/pw-si.in"
    (cd "$T" && timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_PRELOAD="$PRE$B/lib/liblockstep_mpi.so" \
      -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_MODE=consensus -x LOCKSTEP_TRACE_DIR="$T/cons-pw" \
      ${ASAN_OPTIONS:+-x ASAN_OPTIONS} pw.x -in "$T/pw-si.in" >"$T/cons-pw.out" 2>&1)
    "$CONS" "$T/cons-pw"/rank-*.lstrace | awk '$1 == "digest"' >"$T/cons-pw.dig"
    pw_pairs=$(awk '$8 == 2' "$T/cons-pw.dig" | wc -l)
    pw_world=$(awk '$8 == 4' "$T/cons-pw.dig" | wc -l)
    if grep -q '^!    total energy' "$T/cons-pw.out" && [ "$pw_pairs" -gt 0 ] && [ "$pw_world" -gt 0 ] &&
       [ "$(odd "$T/cons-pw.dig")" = none ]; then
      ok "consensus: pw.x on 4 ranks, clean: $pw_world world and $pw_pairs row/column digests, all agree"
    else bad "consensus pw.x: odd '$(odd "$T/cons-pw.dig")', $pw_world world and $pw_pairs pair digests ($(tail -2 "$T/cons-pw.out"))"; fi
  else bad "consensus pw.x: pw.x is not installed (deploy/install-deps.sh installs quantum-espresso)"; fi
  # Nonblocking collectives (tests/agent/mpi_nbc.c, tests/apps/fortran_nbc.f90): started in program order, completed
  # in a different order on each rank (Waitall, Wait in reverse, Testany and Testsome polls, Waitsome), recorded at
  # completion with the place of their start. Each iteration's MPI_Ibcast opens a step (LOCKSTEP_STEP_ON) while the
  # MPI_Iallreduce before it is open: the agent completes it first, in the step that started it. Clean: every window
  # agrees on every rank; one bit of rank 2's 22nd MPI_Iallreduce output flipped (iteration 10's small one, step 11):
  # rank 2 alone is odd, at step 11.
  # An intercommunicator (even and odd ranks): its broadcast leaves the root's peers' buffers as they were, its
  # allgather fills the other group's count of blocks, so its copies differ by design and none of its collectives is
  # a consensus place. The consensus mode records only MPI_COMM_WORLD's allreduce, and its windows agree; the fp mode
  # still records the intercommunicator's calls, as plain collective records.
  IC=$B/tests/agent/mpi_intercomm
  traced_run ic-cons "$IC" 6 "$B/lib/liblockstep_mpi.so" LOCKSTEP_MODE=consensus
  traced_run ic-fp "$IC" 6 "$B/lib/liblockstep_mpi.so" LOCKSTEP_MODE=fp
  ic_places=$("$CONS" "$T/ic-cons"/rank-*.lstrace | awk '$1 == "place" { print $6 }' | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
  ic_fp=$("$LS" dump "$T/ic-fp/rank-00002.lstrace" | grep -c '"mpi\.')
  if [ "$(odd "$T/ic-cons.dig")" = none ] && [ "$ic_places" = "mpi.allreduce:24 " ] && [ "$ic_fp" -eq 24 ]; then
    ok "consensus on an intercommunicator: none of its calls is a place (no false disagreement); fp records them"
  else bad "intercommunicator: odd '$(odd "$T/ic-cons.dig")', places '$ic_places', fp records $ic_fp ($(tail -2 "$T/ic-cons.out"))"; fi
  nbc_run() { local name=$1 prog=$2; shift 2; traced_run "$name" "$prog" 20 "$@"; }   # NAME PROGRAM PRELOAD [ENV...]
  NBC=$B/tests/agent/mpi_nbc
  nbc_run nbc-clean "$NBC" "$B/lib/liblockstep_mpi.so" LOCKSTEP_MODE=consensus LOCKSTEP_STEP_ON=mpi.ibcast
  nbc_run nbc-bad "$NBC" "$B/lib/liblockstep_mpi.so:$SHIM" LOCKSTEP_MODE=consensus LOCKSTEP_STEP_ON=mpi.ibcast \
    LOCKSTEP_SHIM_RANK=2 LOCKSTEP_SHIM_ICALL=21
  nbc_names=$("$CONS" "$T/nbc-clean/rank-00003.lstrace" | awk '$1 == "place" { print $6 }' | sort | uniq -c |
    awk '{ printf "%s:%s ", $2, $1 }')
  nbc_steps=$(awk '{ print $3 }' "$T/nbc-clean.dig" | sort -u | wc -l)
  if [ "$(odd "$T/nbc-clean.dig")" = none ] && [ "$nbc_steps" -eq 21 ] &&
     [ "$nbc_names" = "mpi.iallgather:20 mpi.iallgatherv:20 mpi.iallreduce:40 mpi.ibcast:20 " ] &&
     [ "$(odd "$T/nbc-bad.dig")" = "2 11 0" ] && grep -q 'MPI_Iallreduce call 21' "$T/nbc-bad.out"; then
    ok "consensus, nonblocking collectives completed in 4 orders: $nbc_steps steps agree; a flipped bit is rank 2's, step 11"
  else bad "nonblocking consensus: names '$nbc_names', $nbc_steps steps, odd '$(odd "$T/nbc-clean.dig")' clean, '$(odd "$T/nbc-bad.dig")' with the shim"; fi
  # Twins (records, LOCKSTEP_STEP_ON=mpi.reduce: an MPI_Iallreduce is open across each step change): every record
  # alike, and each step holds its two MPI_Iallreduce records, occurrences 0 and 1, whichever completed first.
  nbc_run nbc-twin-a "$NBC" "$B/lib/liblockstep_mpi.so" LOCKSTEP_STEP_ON=mpi.reduce
  nbc_run nbc-twin-b "$NBC" "$B/lib/liblockstep_mpi.so" LOCKSTEP_STEP_ON=mpi.reduce
  nbc_occ=$("$LS" dump "$T/nbc-twin-a/rank-00002.lstrace" | grep '"mpi.iallreduce"' | python3 -c '
import collections, json, sys
by = collections.defaultdict(list)
for l in sys.stdin:
    r = json.loads(l)
    by[r["step"]].append(r["occurrence"])
print(len(by), all(sorted(v) == [0, 1] for v in by.values()))')
  if "$LS" diff "$T/nbc-twin-a" "$T/nbc-twin-b" >"$T/nbc-twin.diff" 2>&1 && grep -q '^MATCH' "$T/nbc-twin.diff" &&
     [ "$nbc_occ" = "20 True" ]; then
    ok "nonblocking collectives, twins: every record alike; each of 20 steps holds its two MPI_Iallreduce records"
  else bad "nonblocking twins: $(head -2 "$T/nbc-twin.diff"); steps and occurrences '$nbc_occ'"; fi
  # A legal order the drain cannot complete: rank 1 starts the collectives only after a message rank 0 sends after
  # its step change. The drain gives up after 5 s and says so; the job ends; rank 0's record of that collective
  # (and its window) is left out, rank 1's is there: an absent copy, never judged.
  late_t=$(date +%s)
  timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_PRELOAD="$PRE$B/lib/liblockstep_mpi.so" \
    -x LOCKSTEP_AUTOSTART=1 -x LOCKSTEP_STEP_ON=mpi.iallreduce -x LOCKSTEP_TRACE_DIR="$T/nbc-late" \
    ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$NBC" 1 late >"$T/nbc-late.out" 2>&1; late_rc=$?
  late_t=$(( $(date +%s) - late_t ))
  late_n=$(for r in 0 1; do "$LS" dump "$T/nbc-late/rank-0000$r.lstrace" | grep -c '"mpi.iallreduce"'; done | tr '\n' ' ')
  if [ "$late_rc" = 0 ] && [ "$late_t" -lt 40 ] && grep -q 'stayed open across a step change for 5 s' "$T/nbc-late.out" &&
     [ "$late_n" = "1 2 " ]; then
    ok "nonblocking collective another rank starts later: the drain gives up after 5 s, the job ends (${late_t}s), the record is left out"
  else bad "nonblocking late start: rc $late_rc in ${late_t}s, iallreduce records per rank '$late_n': $(tail -2 "$T/nbc-late.out")"; fi
  # Through lockstepd (consensus mode, digests streamed, no steps): it names the odd record from the records the agents
  # hold, an MPI_Iallreduce at its occurrence of the start, rank 2, in main. 5,000 iterations (about 2 s): the agents
  # must still run when lockstepd asks for their held records.
  srv_run nbc-srv "$NBC" 5000 LOCKSTEP_SHIM_ICALL=21
  nbc_srv=$(cons_first_named "J-nbc-srv-$$" mpi.iallreduce)
  if [ "$nbc_srv" = "disagree mpi.iallreduce 21 [2] main" ]; then
    ok "nonblocking collectives, digests streamed: lockstepd names the odd MPI_Iallreduce (#21, rank 2, main)"
  else bad "nonblocking consensus through lockstepd: '$nbc_srv'; $(tail -2 "$T/nbc-srv.out")"; fi
  # The same from Fortran (use mpi_f08: MPI_Waitall, MPI_Waitany, MPI_Testsome polls, MPI_Test, MPI_Wait).
  if [ -x "$B/tests/apps/fortran_nbc" ]; then
    nbc_run fnbc-clean "$B/tests/apps/fortran_nbc" "$B/lib/liblockstep_mpi.so" LOCKSTEP_MODE=consensus
    nbc_run fnbc-bad "$B/tests/apps/fortran_nbc" "$B/lib/liblockstep_mpi.so:$SHIM" LOCKSTEP_MODE=consensus \
      LOCKSTEP_SHIM_RANK=1 LOCKSTEP_SHIM_ICALL=35
    fnbc_places=$("$CONS" "$T/fnbc-clean"/rank-*.lstrace | awk '$1 == "place"' | wc -l)
    if [ "$(odd "$T/fnbc-clean.dig")" = none ] && [ "$fnbc_places" -eq 320 ] &&
       [ "$(odd "$T/fnbc-bad.dig")" = "1 0 1" ]; then
      ok "consensus, Fortran nonblocking collectives: 320 places agree; a flipped bit is rank 1's"
    else bad "Fortran nonblocking consensus: $fnbc_places places, odd '$(odd "$T/fnbc-clean.dig")' clean, '$(odd "$T/fnbc-bad.dig")' with the shim ($(tail -2 "$T/fnbc-clean.out"))"; fi
  else bad "Fortran nonblocking consensus: $B/tests/apps/fortran_nbc is not built (mpifort)"; fi
  # The production mode on a program without steps (every record at step 0, the step never ends while it runs),
  # streaming digests to lockstepd: the disagreement is named (record, occurrence, site) from the held records the
  # agents send on demand while the run goes, and no agent's held records are refused (each sends only the records
  # a step digest lockstepd already has stands for).
  srv_run cons-nostep "$MPIPROG" 2000 LOCKSTEP_SHIM_CALL=30
  cns=$(cons_first_named "J-cons-nostep-$$" mpi.allreduce)
  if [ "$cns" = "disagree mpi.allreduce 30 [2] main" ] && ! grep -q "refused the held records" "$T/cons-nostep.out"; then
    ok "consensus mode, no steps, digests streamed: lockstepd names the odd allreduce (#30, rank 2, main) while it runs"
  else bad "consensus without steps: '$cns'; $(grep -m1 'refused' "$T/cons-nostep.out")"; fi
  # A short run whose last window holds the fault (31 iterations, the flip in the last MPI_Allreduce): the window is
  # complete only once the last rank's final batch arrived. Each rank's MPI_Finalize sends what it recorded, waits for
  # lockstepd to take it, then for the other ranks, so every rank still holds its records when its end's reply asks.
  srv_run cons-short "$MPIPROG" 31 LOCKSTEP_SHIM_CALL=30
  csh=$(cons_first_named "J-cons-short-$$" mpi.allreduce)
  if [ "$csh" = "disagree mpi.allreduce 30 [2] main" ]; then
    ok "consensus mode, a short run faulty in its last window: lockstepd names the allreduce (#30, rank 2, main)"
  else bad "consensus of a short run: '$csh'; $(tail -2 "$T/cons-short.out")"; fi
else
  bad "consensus: the fault shim, the digest reader or mpirun missing"
fi

# 10. Real programs, unmodified, under LD_PRELOAD (tests/apps): call sites, causes, the ignore rule, configuration,
#     failures. heat (C) reduces its residual each step from relax_step and ends by reducing its timings from
#     report_timings; solver (C++) calls MPI from Solver::iterate and, at the end, from a static helper inside the
#     stripped libsolver.so. Every finding below is lockstepd's (tests/agent/findings.py), read like a user would.
HEAT=$B/tests/apps/heat
SOLVER=$B/tests/apps/solver
# app NAME GROUP PROGRAM [ENV=V...] -- ARGS: PROGRAM on 4 ranks under the agent, traced and streamed, twin group GROUP
# (APP_PRELOAD: the library preloaded instead of liblockstep_mpi.so).
app() {
  local name=$1 group=$2 prog=$3; shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=(-x "$1"); shift; done
  shift
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_PRELOAD="$PRE${APP_PRELOAD:-$B/lib/liblockstep_mpi.so}" \
    -x LOCKSTEP_SERVER="${APP_SERVER:-$URL}" -x LOCKSTEP_JOB_ID="J-$name" -x LOCKSTEP_STEP_ID=0 -x LOCKSTEP_TWIN_GROUP="$group" \
    -x LOCKSTEP_TRACE_DIR="$T/app-$name/trace" -x LOCKSTEP_SPOOL_DIR="$T/app-$name/spool" -x LOCKSTEP_BATCH_MS=50 \
    "${envs[@]}" ${ASAN_OPTIONS:+-x ASAN_OPTIONS} "$prog" "$@" >"$T/app-$name.out" 2>&1
}
findings() { python3 "$SRC/tests/agent/findings.py" "$URL" "$1" 4 --timeout 40; } # GROUP: one JSON line
field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])" "$1" "$2"; }

if [ -x "$HEAT" ] && [ -x "$SOLVER" ] && [ -f "$B/lib/liblockstep_mpi.so" ]; then
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp

  # 10a. Rank 3 alone changes its share before the 22nd allreduce (18th residual): every rank's output of that
  #      collective differs, but the inputs differed on rank 3 only. lockstepd names rank 3 and relax_step.
  g=g-origin-$$
  app oa "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings -- --steps 30
  app ob "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings HEAT_PERTURB=3:18 -- --steps 30
  v=$(findings "$g")
  if [ "$(field "$v" status)" = diverged ] && [ "$(field "$v" cause)" = origin ] && [ "$(field "$v" origin_ranks)" = "[3]" ] &&
     [ "$(field "$v" rank)" = 3 ] && [ "$(field "$v" function)" = relax_step ] && [ "$(field "$v" per_rank)" = 4 ]; then
    ok "origin: rank 3 named (not rank 0), at $(field "$v" site)"
  else bad "origin: $v"; fi
  "$LS" diff "$T/app-oa/trace" "$T/app-ob/trace" >"$T/origin-diff.out" 2>&1
  if grep -q '^  cause: origin: the inputs of mpi.allreduce (occurrence 21) at step 0 differed on rank 3 only' "$T/origin-diff.out" &&
     grep -q '^rank 3 .*<- origin' "$T/origin-diff.out" && grep -q 'at relax_step+0x' "$T/origin-diff.out"; then
    ok "origin from the trace files too (lockstep diff): rank 3, relax_step"
  else bad "lockstep diff origin: $(head -8 "$T/origin-diff.out")"; fi
  # The same twin, lockstepd away: spooled, sent later (a spool send); the findings are the same.
  g=g-replay-$$
  app ra "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings -- --steps 30
  APP_SERVER=http://127.0.0.1:1 app rb "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings LOCKSTEP_FLUSH_TIMEOUT=1 HEAT_PERTURB=3:18 -- --steps 30
  "$LS" replay --server "$URL" "$T/app-rb/spool" >"$T/replay-app.out" 2>&1
  v=$(findings "$g")
  if [ "$(field "$v" cause)" = origin ] && [ "$(field "$v" origin_ranks)" = "[3]" ] && [ "$(field "$v" function)" = relax_step ]; then
    ok "origin after a spool replay: rank 3, relax_step"
  else bad "origin after replay: $v ($(tail -2 "$T/replay-app.out"))"; fi

  # 10b. The closing reduction of timings: every rank's input differs at once, at report_timings: every-rank,
  #      software (no node scored), and the report gives the ignore rule; with it the twins match.
  g=g-timings-$$
  app ta "$g" "$HEAT" -- --steps 12
  app tb "$g" "$HEAT" -- --steps 12
  v=$(findings "$g")
  if [ "$(field "$v" cause)" = every-rank ] && [ "$(field "$v" origin_ranks)" = "[]" ] &&
     [ "$(field "$v" function)" = report_timings ] && [ "$(field "$v" suggest_ignore)" = report_timings ]; then
    ok "closing timings: every-rank at $(field "$v" site), ignore rule report_timings"
  else bad "closing timings: $v"; fi
  "$LS" twins "$g" --server "$URL" >"$T/twins-timings.out" 2>&1; rc_tw=$?
  scored=
  for _ in $(seq 1 50); do
    scored=$(curl -s "$URL/api/v1/alerts?kind=divergence" | python3 -c "import json,sys; print(' '.join(a['classification'] for a in json.load(sys.stdin)['items'] if a['group']=='$g'))")
    [ -n "$scored" ] && break; sleep 0.2
  done
  involved=$(curl -s "$URL/api/v1/nodes" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(n["involvements"] for n in d["items"]))')
  if [ $rc_tw -eq 1 ] && grep -q "lockstep-ignore='report_timings'" "$T/twins-timings.out" && [ "$scored" = software ] &&
     python3 -c "exit(0 if float('$involved') == 0 else 1)"; then
    ok "closing timings: software, no node scored ($involved involvements); lockstep twins gives the rule"
  else bad "closing timings: exit $rc_tw, classification '$scored', involvements '$involved': $(head -12 "$T/twins-timings.out")"; fi
  g=g-timings-ign-$$
  app tia "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings -- --steps 12
  app tib "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings -- --steps 12
  v=$(findings "$g")
  n_red=$("$LS" dump "$T/app-tia/trace/rank-00000.lstrace" | grep -c '"mpi.reduce"')
  if [ "$(field "$v" status)" = match ] && [ "$n_red" -eq 0 ]; then ok "LOCKSTEP_IGNORE=report_timings: no such record is made; the twins match"
  else bad "with the ignore rule: $v, $n_red reduce records"; fi

  # 10c. C++ over a stripped library: the helper that reduces the timings has no symbol; its site names the
  #      nearest caller that has one, Solver::finish(), and a pattern on that caller covers the helper.
  g=g-solver-$$
  app sa "$g" "$SOLVER" -- 8
  app sb "$g" "$SOLVER" -- 8
  v=$(findings "$g")
  if [ "$(field "$v" cause)" = every-rank ] && [ "$(field "$v" caller)" = "Solver::finish()" ] &&
     [ "$(field "$v" function)" = "" ] && [ "$(field "$v" suggest_ignore)" = "Solver::finish" ] &&
     echo "$(field "$v" site)" | grep -q '^libsolver.so+0x[0-9a-f]* (no symbol), called from Solver::finish()$'; then
    ok "stripped library: $(field "$v" site); every-rank, rule Solver::finish"
  else bad "stripped library: $v"; fi
  site_a=$("$LS" dump "$T/app-sa/trace/rank-00002.lstrace" | grep -v '"consensus.digest"' | python3 -c 'import json,sys; print([json.loads(l)["site"]["text"] for l in sys.stdin][0])')
  site_b=$("$LS" dump "$T/app-sb/trace/rank-00002.lstrace" | grep -v '"consensus.digest"' | python3 -c 'import json,sys; print([json.loads(l)["site"]["text"] for l in sys.stdin][0])')
  if [ "$site_a" = "$site_b" ] && echo "$site_a" | grep -q '^Solver::iterate(int)+0x[0-9a-f]* (libsolver.so+0x[0-9a-f]*)$'; then
    ok "C++ sites demangled and equal in both twins: $site_a"
  else bad "C++ sites: '$site_a' vs '$site_b'"; fi
  g=g-solver-ign-$$
  app sia "$g" "$SOLVER" LOCKSTEP_IGNORE=Solver::finish -- 8
  app sib "$g" "$SOLVER" LOCKSTEP_IGNORE=Solver::finish -- 8
  v=$(findings "$g")
  if [ "$(field "$v" status)" = match ]; then ok "LOCKSTEP_IGNORE=Solver::finish covers its symbol-less helper: match"
  else bad "solver with the ignore rule: $v"; fi

  # 10d. Another process grid: configuration, with the command line in the manifest diff and no library noise.
  g=g-grid-$$
  app ga "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings -- --steps 6 --grid 2x2
  app gb "$g" "$HEAT" LOCKSTEP_IGNORE=report_timings -- --steps 6 --grid 4x1
  v=$(findings "$g")
  "$LS" manifest-diff "$g" --server "$URL" >"$T/grid-md.out" 2>&1
  curl -s "$URL/api/v1/twins/$g/manifest-diff" >"$T/grid-md.json"
  keys=$(python3 -c 'import json,sys; print(" ".join(sorted({d["key"] for d in json.load(open(sys.argv[1]))["diffs"] if d["class"] == "configuration"})))' "$T/grid-md.json")
  if [ "$(field "$v" cause)" = configuration ] && echo "$(field "$v" configuration)" | grep -q 'argv' &&
     [ "$keys" = "argv command" ] && ! grep -q 'library:' "$T/grid-md.out" && grep -q -- '--grid' "$T/grid-md.out"; then
    ok "process grid: configuration; the manifest diff shows argv and no library"
  else bad "process grid: $v; configuration keys '$keys'"; fi

  # 10e. Twins that both fail at once (a missing input file, MPI_Abort) after a handful of records: not a match.
  g=g-fail-$$
  app fa "$g" "$HEAT" -- --input "$T/no-such-deck"; rfa=$?
  app fb "$g" "$HEAT" -- --input "$T/no-such-deck"; rfb=$?
  v=$(findings "$g")
  "$LS" twins "$g" --server "$URL" >"$T/twins-fail.out" 2>&1; rc_tw=$?
  if [ $rfa -ne 0 ] && [ $rfb -ne 0 ] && [ "$(field "$v" status)" = incomplete ] && [ "$(field "$v" exits)" = "[3, 3]" ] &&
     [ $rc_tw -eq 1 ] && grep -q 'incomplete: 2 of 2 runs failed' "$T/twins-fail.out"; then
    ok "failed twins (MPI_Abort): incomplete, each run's exit 3, not a match"
  else bad "failed twins: rc $rfa/$rfb, $v, twins exit $rc_tw"; fi

  # 10f. LOCKSTEP_STEP_ON as a call-site pattern: each residual reduction issued from relax_step opens a step.
  app step "g-step-$$" "$HEAT" LOCKSTEP_STEP_ON=relax_step LOCKSTEP_IGNORE=report_timings -- --steps 9
  steps=$("$LS" dump "$T/app-step/trace/rank-00001.lstrace" | grep -v '"consensus.digest"' | python3 -c 'import json,sys; print(" ".join(map(str, sorted({json.loads(l)["step"] for l in sys.stdin}))))')
  if [ "$steps" = "0 1 2 3 4 5 6 7 8 9" ]; then ok "LOCKSTEP_STEP_ON=relax_step (a function): steps 0-9"
  else bad "LOCKSTEP_STEP_ON=relax_step: steps '$steps'"; fi

  # 10g. An invalid ignore pattern is said, not ignored: the agent does not start, with the reason, once.
  app bad "g-bad-$$" "$HEAT" "LOCKSTEP_IGNORE=report_timings,[x" -- --steps 2
  if grep -q "LOCKSTEP_IGNORE is invalid: pattern '\[x' has a '\[' without its '\]'" "$T/app-bad.out" &&
     [ ! -e "$T/app-bad/trace" ]; then
    ok "an invalid LOCKSTEP_IGNORE is refused with the reason; nothing is recorded"
  else bad "invalid LOCKSTEP_IGNORE: $(grep lockstep "$T/app-bad.out" | head -2)"; fi
else
  bad "tests/apps (heat, solver) or liblockstep_mpi.so missing"
fi
. "$SRC/tests/agent/fortran.sh"

# 11. Digest streaming (LOCKSTEP_STREAM=digests): the same twins streamed in full, as digests, and mixed find the
#     same first divergence (run B's rank 1 differs from step 7 on); bytes on the wire per step in both modes; a
#     trace window's steps go in full; a run that ended keeps its held records for `lockstep replay --steps`.
# twin_run GROUP RUN MODE FLIP [ENV...]: one 2-rank run of agentprog, 20 steps of 2 metrics and 9 collectives;
# rank 1 diverges from step FLIP (none: -1). Waits for it.
twin_run() {
  local g=$1 run=$2 mode=$3 flip=$4 pids=(); shift 4
  for rank in 0 1; do
    local fl=(); [ "$flip" -ge 0 ] && [ $rank = 1 ] && fl=(--flip-at "$flip")
    env LOCKSTEP_SERVER="$URL" LOCKSTEP_JOB_ID="J-$g-$run" LOCKSTEP_STEP_ID=0 LOCKSTEP_TRACE=collectives \
      LOCKSTEP_TWIN_GROUP="$g-$$" LOCKSTEP_RANK=$rank LOCKSTEP_RANKS=2 LOCKSTEP_SPOOL_DIR="$T/$g-$run/spool" \
      LOCKSTEP_BATCH_MS=50 LOCKSTEP_STREAM="$mode" LOCKSTEP_STATS_FILE="$T/$g-$run.stats" "$@" \
      "$PROG" --steps 20 --sleep-ms 30 --layers 8 "${fl[@]}" >"$T/$g-$run-$rank.out" 2>"$T/$g-$run-$rank.err" &
    pids+=($!)
  done
  wait "${pids[@]}"
}
first_div() {   # GROUP STATUS: waits for the status, prints the first divergence's key fields (and per_rank's)
  local o
  for _ in $(seq 1 100); do
    o=$(curl -s "$URL/api/v1/twins/$1-$$")
    [ "$(echo "$o" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("status"))')" = "$2" ] && break
    sleep 0.1
  done
  echo "$o" | python3 -c '
import json, sys
o = json.load(sys.stdin)
key = lambda d: d and [d[k] for k in ("step", "rank", "name", "occurrence", "seq", "kind")]
print(o["status"], key(o["first_divergence"]), [key(d) for d in o["per_rank"]], len(o.get("awaiting_records", [])))'
}
twin_pair() {   # GROUP MODE_A MODE_B: runs A and B at once, as twin jobs run; B's rank 1 diverges from step 7
  twin_run "$1" A "$2" -1 & local a=$!
  twin_run "$1" B "$3" 7 & local b=$!
  wait $a $b
}
twin_pair dfull records records; twin_pair ddig digests digests; twin_pair dmix records digests
full=$(first_div dfull diverged); dig=$(first_div ddig diverged); mix=$(first_div dmix diverged)
if [[ "$full" == "diverged [7, 1, 'layer0.allreduce', 0, "* ]] && [ "$dig" = "$full" ] && [ "$mix" = "$full" ] &&
   ! grep -q . "$T"/ddig-*-*.err; then
  ok "digest streaming: the same first divergence as full streaming, and mixed ($full)"
else bad "digest streaming: full '$full', digests '$dig', mixed '$mix' ($(head -c 300 "$T"/ddig-B-1.err))"; fi
wire=$(python3 - "$T/dfull-A.stats" "$T/ddig-A.stats" <<'PY'
import json, sys
full = [json.loads(l) for l in open(sys.argv[1])]
dig = [json.loads(l) for l in open(sys.argv[2])]
bf = sum(r["bytes_posted"] for r in full) / 40.0   # 2 ranks x 20 steps
bd = sum(r["bytes_posted"] for r in dig) / 40.0
held = sum(r["held"] for r in dig)
print("%.0f %.0f %d" % (bf, bd, held))
PY
)
read -r bfull bdig held <<<"$wire"
if [ -n "$bdig" ] && [ "$held" -eq 360 ] && [ "$bdig" -lt $((bfull / 2)) ]; then
  ok "bytes on the wire per rank and step (11 records: 2 metrics, 9 collectives of 4 KiB): $bfull streaming records, $bdig streaming digests"
else bad "wire bytes: records $bfull, digests $bdig, held $held"; fi
# a trace window (steps 3-4) goes in full
twin_run dwin A digests -1 LOCKSTEP_TRACE="collectives;collectives:steps=3-4"
wid=$(curl -s "$URL/api/v1/runs?job=J-dwin-A" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["run_id"])')
n3=$(curl -s "$URL/api/v1/runs/$wid/records?rank=0&step=3" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
n5=$(curl -s "$URL/api/v1/runs/$wid/records?rank=0&step=5" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
if [ "$n3" = 11 ] && [ "$n5" = 2 ]; then ok "digest streaming: a trace window's steps go in full (step 3: $n3 records), the rest as digests and metrics (step 5: $n5)"
else bad "trace window in digest streaming: step 3 has $n3 records, step 5 $n5"; fi
# a run that ended before its twin came: its held records wait in its spool until lockstep replay --steps
twin_run dlate A digests -1
held_files=$(find "$T/dlate-A/spool" -name 'held-*' | wc -l)
twin_run dlate B records 7
late=$(first_div dlate pending)
late_why=$(curl -s "$URL/api/v1/twins/dlate-$$" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status_reason"])')
LOCKSTEP_SERVER=$URL "$LS" twins "dlate-$$" >"$T/dlate-twins.out" 2>&1
grep -q "records asked for, not received yet" "$T/dlate-twins.out" || late_why="lockstep twins lists no records asked for"
"$LS" replay --server "$URL" --steps asked "$T/dlate-A/spool" >"$T/dlate-replay.out" 2>&1; rr=$?
after=$(first_div dlate diverged)
if [ "$held_files" -eq 2 ] && [[ "$late" == "pending None [] "[1-9]* ]] && [ $rr -eq 0 ] && [ "$after" = "$full" ] &&
   grep -q "held record(s) of steps asked" "$T/dlate-replay.out" && [[ "$late_why" == *"lockstep replay --steps asked"* ]]; then
  ok "an ended digest run keeps its held records; lockstepd asks for step 7 and its status says how to send them; lockstep replay --steps asked sends them: $after"
else bad "late twin: $held_files held files; before '$late' ($late_why), replay rc $rr ($(tail -1 "$T/dlate-replay.out")), after '$after'"; fi

# a node relay (LOCKSTEP_RELAY): each run's two ranks share one, so their batches reach lockstepd as bundles (the
# relay waits up to 2 s for the other rank's: two batches a bundle); the twins' first divergence is the one found
# without it (the held records asked for go through the relay too)
bmetric() { curl -s "$URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
bb0=$(bmetric lockstepd_bundled_batches_total); bn0=$(bmetric lockstepd_bundles_total)
twin_run drly A digests -1 LOCKSTEP_RELAY="$T/relay-A" LOCKSTEP_RELAY_MS=2000 & rly_a=$!
twin_run drly B digests 7 LOCKSTEP_RELAY="$T/relay-B" LOCKSTEP_RELAY_MS=2000 & rly_b=$!
wait $rly_a $rly_b
rly=$(first_div drly diverged); bb=$(( $(bmetric lockstepd_bundled_batches_total) - bb0 ))
bn=$(( $(bmetric lockstepd_bundles_total) - bn0 ))
if [ "$rly" = "$full" ] && [ "$bb" -ge 20 ] && [ "$bb" -gt "$bn" ] && ! grep -q . "$T"/drly-*-*.err &&
   [ "$(stat -c %a "$T/relay-A")" = 700 ] && [ ! -e "$T/relay-A/relay.sock" ]; then
  ok "a node relay: $bb batches reached lockstepd in $bn bundles; the same first divergence ($rly)"
else bad "node relay: '$rly' (want '$full'), $bb batches in $bn bundles, $(cat "$T"/drly-*-*.err | head -c 300)"; fi
# the relay's leader killed (-9) while its ranks stream: the others post themselves, one of them leads again, and
# every record of theirs is stored (none spooled, none lost)
rlk() { exec env LOCKSTEP_SERVER="$URL" LOCKSTEP_JOB_ID=J-rlk LOCKSTEP_STEP_ID=0 LOCKSTEP_TRACE=collectives \
  LOCKSTEP_RANK=$1 LOCKSTEP_RANKS=4 LOCKSTEP_SPOOL_DIR="$T/rlk/spool" LOCKSTEP_BATCH_MS=50 LOCKSTEP_STREAM=digests \
  LOCKSTEP_RELAY="$T/rlk/relay" LOCKSTEP_STATS_FILE="$T/rlk.stats" "$PROG" --steps 100 --sleep-ms 30 --layers 8 \
  >"$T/rlk-$1.out" 2>"$T/rlk-$1.err"; } # exec: $! is the rank's own process
mkdir -p "$T/rlk"
rlk 0 & rlk0=$!
sleep 0.5 # rank 0 leads
rlk 1 & rlk1=$!; rlk 2 & rlk2=$!; rlk 3 & rlk3=$!
sleep 1.2; kill -9 $rlk0; wait $rlk1 $rlk2 $rlk3; wait $rlk0 2>/dev/null
rlk_id=$(curl -s "$URL/api/v1/runs?job=J-rlk" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["run_id"])')
curl -s "$URL/api/v1/runs/$rlk_id" >"$T/rlk.run"
rlk_ok=$(python3 - "$T/rlk.stats" "$T/rlk.run" <<'PY'
import json, sys
rows = {r["rank"]: r for r in map(json.loads, open(sys.argv[1]))}
stored = {r["rank"]: r["records"] for r in json.load(open(sys.argv[2]))["rank_status"]}
ok = sorted(rows) == [1, 2, 3] and all(r["batches_spooled"] == 0 and r["dropped"] == 0 and
                                       stored.get(k) == r["records"] for k, r in rows.items())
print("%s %s" % (ok, " ".join("%s:%s" % (k, stored.get(k)) for k in sorted(stored))))
PY
)
if [[ "$rlk_ok" == True* ]] && ! grep -q . "$T"/rlk-[123].err; then
  ok "the relay's leader killed: the other ranks' records all stored (rank:records ${rlk_ok#True })"
else bad "relay leader killed: $rlk_ok, $(cat "$T"/rlk-[123].err | head -c 300)"; fi
# a relay directory others may enter is not used: the ranks say so once and post their batches themselves
mkdir -p "$T/relay-open" && chmod 755 "$T/relay-open"
twin_run dropen A digests -1 LOCKSTEP_RELAY="$T/relay-open"
ropen=$(curl -s "$URL/api/v1/runs?job=J-dropen-A" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["status"])')
if [ "$ropen" = ended ] && grep -q "no node relay: the relay directory .* must be this user's" "$T/dropen-A-0.err" &&
   [ "$(grep -c "no node relay" "$T/dropen-A-0.err")" = 1 ] && [ ! -e "$T/relay-open/relay.sock" ]; then
  ok "a relay directory others may enter is refused (said once); the run streams without it and ends"
else bad "open relay directory: run $ropen, $(head -c 300 "$T/dropen-A-0.err")"; fi

# 12. Several lockstepd on one database: two more on the first one's PostgreSQL, and the agents, the SPANK
#     plugin's registration path and the lockstep command given the list of those two. Twin runs stream through
#     them (A in full, with traces; B as digests, its rank 1 differing from step 7), and the instance the agents
#     use first is killed -9 mid-run, once B's divergence is found (where a single lockstepd finds it): the agents
#     move on to the next one, A's records are stored once each, one alert is raised, and the command reads
#     through the list with its first lockstepd gone. (Killed before it found the divergence, the group's
#     comparison would move on only after lease_s, 5 s: a digest run that ends sooner leaves the records asked for
#     in its spool, for lockstep replay. Under ASan the agents start slowly enough for a fixed 0.8 s to be that.)
multi_pids=(); multi_urls=()
for k in 2 3; do
  mp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$LOCKSTEPD" --listen "127.0.0.1:$mp" --db "host=$T/state/pgsock dbname=lockstep user=lockstep" \
    --log-file "$T/lockstepd$k.log" --threads 2 >>"$T/lockstepd$k.out" 2>&1 &
  multi_pids+=($!); multi_urls+=("http://127.0.0.1:$mp")
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$mp/api/v1/health" >/dev/null 2>&1 && break; sleep 0.1; done
done
MULTI="${multi_urls[0]},${multi_urls[1]}"
multi_run() {   # RUN MODE FLIP: a 2-rank run of group multi through the list, 120 steps
  local run=$1 mode=$2 flip=$3 pids=()
  for rank in 0 1; do
    local fl=(); [ "$flip" -ge 0 ] && [ $rank = 1 ] && fl=(--flip-at "$flip")
    env LOCKSTEP_SERVER="$MULTI" LOCKSTEP_JOB_ID="J-multi-$run" LOCKSTEP_STEP_ID=0 LOCKSTEP_TRACE=collectives \
      LOCKSTEP_TWIN_GROUP="multi-$$" LOCKSTEP_RANK=$rank LOCKSTEP_RANKS=2 LOCKSTEP_SPOOL_DIR="$T/multi-$run/spool" \
      LOCKSTEP_TRACE_DIR="$T/multi-$run/trace" LOCKSTEP_BATCH_MS=50 LOCKSTEP_STREAM="$mode" \
      "$PROG" --steps 120 --sleep-ms 30 --layers 8 "${fl[@]}" >"$T/multi-$run-$rank.out" 2>"$T/multi-$run-$rank.err" &
    pids+=($!)
  done
  wait "${pids[@]}"
}
multi_run A records -1 & ma=$!
multi_run B digests 7 & mb=$!
sleep 0.8
for _ in $(seq 1 80); do # the divergence found (8 s at most), then the kill
  curl -s "${multi_urls[0]}/api/v1/twins/multi-$$" | grep -q '"status": *"diverged"' && break
  sleep 0.1
done
kill -KILL "${multi_pids[0]}"; wait "${multi_pids[0]}" 2>/dev/null
wait $ma; ra=$?; wait $mb; rb=$?
mdiv=$(first_div multi diverged)
mtook=$(curl -s "${multi_urls[1]}/metrics" | awk '/^lockstepd_http_requests_total\{route="records",code="2xx"\}/ {print $2}')
malerts=$(curl -s "$URL/api/v1/alerts?limit=500" | python3 -c "
import json, sys
print(sum(1 for a in json.load(sys.stdin)['items'] if a.get('group') == 'multi-$$'))")
LOCKSTEP_SERVER="$MULTI" "$LS" twins "multi-$$" >"$T/multi-twins.out" 2>&1; rl=$?   # 1: the group diverged
if [ $ra -eq 0 ] && [ $rb -eq 0 ] && check J-multi-A "$T/multi-A/trace" 2 && [ "$(run_status J-multi-A)" = ended ] &&
   [[ "$mdiv" == "diverged [7, 1, 'layer0.allreduce', 0, "* ]] && [ "$malerts" = 1 ] && [ $rl -eq 1 ] &&
   [ "${mtook:-0}" -gt 0 ] &&
   grep -q "diverged" "$T/multi-twins.out"; then
  ok "three lockstepd on one database, the agents' first killed -9 mid-run ($mtook batches then went to the next): records once each, $mdiv, one alert, the command reads through the list"
else bad "several lockstepd: rc $ra/$rb, '$mdiv', $malerts alerts, ${mtook:-no} batches on the second, lockstep twins rc $rl ($(head -c 300 "$T/multi-twins.out")) ($(head -c 300 "$T/multi-B-1.err"))"; fi
kill -TERM "${multi_pids[1]}" 2>/dev/null; wait "${multi_pids[1]}" 2>/dev/null

# 13. https:// with LOCKSTEP_CA_FILE: lockstepd restarted with a self-signed certificate for 127.0.0.1.
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1
  stop_server TERM
  TLS_ARGS=(--tls-cert "$T/cert.pem" --tls-key "$T/key.pem")
  URL=https://127.0.0.1:$PORT
  export CURL_CA_BUNDLE=$T/cert.pem   # for this script's own curl and python checks
  export SSL_CERT_FILE=$T/cert.pem
  if start_server; then
    run_prog tls J-tls LOCKSTEP_CA_FILE="$T/cert.pem" -- --steps 10; rt=$?
    run_prog tlsbad J-tlsbad LOCKSTEP_FLUSH_TIMEOUT=2 -- --steps 3; rb=$?   # no CA file: the server is not trusted
    if [ $rt -eq 0 ] && check J-tls "$T/tls/trace" 1 && [ $rb -eq 0 ] && [ "$(spooled "$T/tlsbad/spool")" -gt 0 ]; then
      ok "https with LOCKSTEP_CA_FILE streams; without it the unverified server gets nothing (spooled)"
    else bad "https (rc $rt/$rb): $(head -c 300 "$T/tls.err")"; fi
  else bad "lockstepd with TLS"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

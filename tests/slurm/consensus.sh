# consensus.sh - the Slurm tier's consensus checks (sourced by tests/slurm/run.sh beside its other real programs, whose
# helpers it uses): real programs run once with --lockstep=consensus and no twin, as a user would. Clean, each run's
# first report is `consensus: agree` over windows it checked, with no node scored and no alert; with a fault shim
# flipping one bit of one rank's MPI_Allreduce output, the run disagrees at that rank, its attested node is scored
# and a `consensus` alert is raised.

shim=$tmp/tests/agent/shim_corrupt.so
[ -f "$build/tests/agent/shim_corrupt.so" ] && mkdir -p "$tmp/tests/agent" && cp "$build/tests/agent/shim_corrupt.so" "$shim"

# cjob SRUN_OPTS... -- PROGRAM ARGS: PROGRAM once under --lockstep=consensus (CJOB_PRELOAD: the job's own LD_PRELOAD);
# the run's id in $tmp/cons.rid.
cjob() {
  local opts=() exp="ALL"
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload${CJOB_PRELOAD:+:$CJOB_PRELOAD}"
  [ -z "$user_preload" ] && [ -n "${CJOB_PRELOAD:-}" ] && exp="ALL,LD_PRELOAD=$CJOB_PRELOAD"
  rm -f "$tmp"/cons.rid*
  timeout 90 srun --immediate=10 --mpi=pmix --export="$exp" --lockstep=consensus "${opts[@]}" \
    bash -c 'echo "$LOCKSTEP_RUN_ID" >'"$tmp"'/cons.rid.$SLURM_PROCID; exec "$@"' cjob "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  cp "$tmp/cons.rid.0" "$tmp/cons.rid" 2>/dev/null
  [ -s "$tmp/cons.rid" ] || { echo "the plugin registered no run" >>"$tmp/err"; return 1; }
  return $rc
}
# cons_line RUN: the consensus line of `lockstep run RUN` once the run has ended and its count of checked windows has
# stopped moving (and, for a disagreement, its first record has arrived); in $tmp/cons.line.
cons_line() {
  local prev= line= st
  for _ in $(seq 1 150); do
    "$lockstep_cli" run "$1" --server "http://127.0.0.1:$lsd_port" >"$tmp/cons.run" 2>>"$tmp/err"
    line=$(grep '^consensus:' "$tmp/cons.run")
    st=$(api "http://127.0.0.1:$lsd_port/api/v1/runs/$1" | json 'd["status"]' 2>/dev/null)
    if [ "$st" != running ] && [ -n "$line" ] && [ "$line" = "$prev" ] && ! grep -q 'none checked\|records awaited' <<<"$line"; then
      break
    fi
    prev=$line
    sleep 0.3
  done
  echo "$line" >"$tmp/cons.line"
  echo "run $1 ($st): $line" >>"$tmp/err"
}
# cons_api RUN EXPR: EXPR over GET /api/v1/runs/RUN/consensus as `d`.
cons_api() { api "http://127.0.0.1:$lsd_port/api/v1/runs/$1/consensus" | json "$2"; }
# cons_scored RUN: the nodes whose history holds a consensus involvement from RUN (space-separated, sorted).
cons_scored() {
  local n out=
  for n in n1 n2 n3 n4; do
    api "http://127.0.0.1:$lsd_port/api/v1/nodes/$n/history?limit=1000" 2>/dev/null | python3 -c '
import json, sys
try: d = json.load(sys.stdin)
except Exception: sys.exit(1)
sys.exit(0 if any(e["kind"] == "involvement" and e.get("run_id") == sys.argv[1] and
                  (e.get("detail") or "").startswith("consensus:") for e in d.get("items", [])) else 1)' "$1" && out="$out $n"
  done
  echo "${out# }"
}
# cons_alerts RUN: the run's consensus alerts, one line each: node, classification, state; fails when the list
# cannot be read.
cons_alerts() {
  api "http://127.0.0.1:$lsd_port/api/v1/alerts?kind=consensus&limit=1000" | python3 -c '
import json, sys
t = sys.stdin.read()
try: items = json.loads(t)["items"]
except Exception: sys.exit("GET /api/v1/alerts: %s" % t[:300])
for a in items:
    if sys.argv[1] in json.dumps(a): print(a.get("node"), a.get("classification"), a.get("state"))' "$1" 2>>"$tmp/err"
}
# cons_clean: the run just made agrees over the windows it checked; no node scored, no alert. Once the fleet has had
# a sweep to see it (nothing is there to see: it must still find nothing).
cons_clean() {
  local rid; rid=$(cat "$tmp/cons.rid")
  cons_line "$rid"
  grep -Eq '^consensus: agree \([1-9][0-9]* windows checked\)$' "$tmp/cons.line" &&
    [ "$(cons_api "$rid" 'd["status"]')" = agree ] || return 1
  sleep 1
  local s a; s=$(cons_scored "$rid") && a=$(cons_alerts "$rid") || return 1
  [ -z "$s" ] && [ -z "$a" ] || { echo "scored: '$s'; alerts: '$a'" >>"$tmp/err"; return 1; }
}

t_cons_heat() { # C: heat on 4 ranks over 2 nodes, 30 steps (residual and checksum allreduces, the closing timings)
  cjob -N2 -n4 -- "$apps/heat" --steps 30 && cons_clean
}
t_cons_solver() { # C++: solver on 4 ranks, its iterations and the closing reduction inside the stripped libsolver.so
  cjob -N2 -n4 -- "$apps/solver" 8 && cons_clean
}
t_cons_fortran() { # Fortran (use mpi_f08) on 4 ranks
  cjob -N2 -n4 -- "$apps/fortran_f08" 3 && cons_clean
}
# Nonblocking collectives (tests/agent/mpi_nbc.c, tests/apps/fortran_nbc.f90) on 4 ranks over 2 nodes, each rank
# completing them in its own order: recorded at completion with the place of their start, every window agrees.
t_cons_nbc() {
  [ -x "$apps/mpi_nbc" ] && [ -x "$apps/fortran_nbc" ] || { echo "mpi_nbc or fortran_nbc is not built" >>"$tmp/err"; return 1; }
  cjob -N2 -n4 -- "$apps/mpi_nbc" 200 && cons_clean || return 1
  cjob -N2 -n4 -- "$apps/fortran_nbc" 200 && cons_clean
}

# Quantum ESPRESSO's pw.x on 4 ranks over 2 nodes: its 2x2 grid for the dense algebra makes row and column groups of
# 2 ranks, whose BLACS broadcasts the root and the receivers call from different functions, and the members' counts
# of a name over all their groups differ (common/consensus.h: neither is part of a copy).
t_cons_pw() {
  mkdir -p "$tmp/pwc" && sed "s|OUTDIR|$tmp/pwc|" "$src/tests/apps/pw-si.in" >"$tmp/pwc/si.in" || return 1
  OMPI_MCA_btl=self,tcp cjob -N2 -n4 -- /usr/bin/pw.x -in "$tmp/pwc/si.in" || return 1
  grep -q '^!    total energy' "$tmp/out" || return 1
  cons_clean
}
cons_train_steps=${CONS_TRAIN_STEPS:-10000}
# lockstep-train, data parallel on 4 ranks over 2 nodes: its gradient broadcast and allgathers each step, a consensus
# window per step and group. Four ranks on the tier's shared cores: ranks that spin while they wait take the cores of
# the ranks they wait for (about 35 ms a step here, 10 s for 10,000 steps with yield_when_idle).
t_cons_train() {
  local t; t=$(date +%s%N)
  OMPI_MCA_mpi_yield_when_idle=1 cjob -N2 -n4 -- "$tmp/bin/lockstep-train" --quiet --steps "$cons_train_steps" --hidden 8 --batch 4 || return 1
  echo "lockstep-train: $cons_train_steps steps in $(( ($(date +%s%N) - t) / 1000000 )) ms" >>"$tmp/err"
  cons_clean
}

# One bit of rank 2's 21st MPI_Allreduce output (heat: the residual of step 17; no steps, so step 0) flipped after
# the reduction, as a bad NIC or memory would, by the fault shim the user preloads after the MPI wrappers. Ranks 0-3
# on n1-n4: rank 2, on n3, is odd; n3 alone is scored, and one consensus alert names it.
t_cons_fault() {
  [ -f "$shim" ] || { echo "$shim is not built" >>"$tmp/err"; return 1; }
  local before; before=$(api "http://127.0.0.1:$lsd_port/api/v1/nodes/n3" 2>/dev/null |
    json 'int((d["node"].get("involvements") or 0) > 0)' 2>/dev/null || echo 0)
  CJOB_PRELOAD="$agent:$tmp/lib/liblockstep_mpi.so:$shim" LOCKSTEP_SHIM_RANK=2 LOCKSTEP_SHIM_CALL=20 \
    LOCKSTEP_STEP_ON=mpi.allreduce cjob -N4 -n4 --nodelist=n1,n2,n3,n4 -- "$apps/heat" --steps 200 || return 1
  grep -q 'shim_corrupt: rank 2, MPI_Allreduce call 20' "$tmp/err" || { echo "the shim did not fire" >>"$tmp/err"; return 1; }
  local rid; rid=$(cat "$tmp/cons.rid")
  cons_line "$rid"
  grep -Eq '^consensus: DISAGREE at step 21, mpi\.allreduce #0 on ranks \{0,1,2,3\}: rank 2 is odd \(node n3\) at site relax_step \(heat\+0x[0-9a-f]+\) \([1-9][0-9]* windows checked\)$' \
    "$tmp/cons.line" || return 1
  [ "$(cons_api "$rid" '"%s %s %s %s" % (d["status"], d["first"]["odd_ranks"], d["first"]["clear"], d["first"]["node"])')" = \
    "disagree [2] True n3" ] || return 1
  local s= a=
  for _ in $(seq 1 100); do
    s=$(cons_scored "$rid"); a=$(cons_alerts "$rid")
    [ -n "$s" ] && [ -n "$a" ] && break
    sleep 0.2
  done
  echo "scored: '$s'; alerts: '$a'" >>"$tmp/err"
  [ "$s" = n3 ] && [ "$a" = "n3 hardware open" ] || return 1
  # One involvement makes no suspect: a node with no evidence before stays ok. Earlier checks of the tier may have
  # put their own faults' evidence on n3, and then this involvement can make it a suspect, as docs/suspects.md says.
  # Either way it stays in service for the checks after this one (the tier's lockstepd drains nothing).
  local st; st=$(api "http://127.0.0.1:$lsd_port/api/v1/nodes/n3" | json 'd["node"]["state"]')
  echo "n3: $st (evidence before this run: $before), in Slurm $(sinfo -h -n n3 -o %T)" >>"$tmp/err"
  { [ "$st" = ok ] || [ "$before" = 1 ]; } && ! sinfo -h -n n3 -o %T | grep -q drain
}

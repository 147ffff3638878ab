#!/usr/bin/env bash
# run.sh - the Slurm tier: spank_lockstep.so in a real local Slurm (4 slurmd "nodes" on loopback) that it starts and stops.
# usage: tests/slurm/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=$(readlink -f "${1:-build}")
src=$(cd "$(dirname "$0")/../.." && pwd)
plugin=$build/lib/spank_lockstep.so
agent=$build/lib/liblockstep.so
lockstepd=$build/bin/lockstepd
tmp=$(mktemp -d /tmp/ls-slurm-XXXXXX)
chmod 755 "$tmp"
run=
srv_pid=
pass=0; fail=0; skip=0

cleanup() {
  [ -n "$srv_pid" ] && stop_pid "$srv_pid"
  [ -n "$run" ] && "$src/deploy/slurm/down.sh" "$run" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

# alive PID / stop_pid PID: a zombie counts as dead; stop only our own pid.
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }
stop_pid() {
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 1 50); do alive "$1" || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
}

# excerpt FILE...: the files' lines, indented; past 40 lines the first 15 and the last 25 (a task's crash, and srun's
# word on which task it was, come last).
excerpt() {
  local n; n=$(cat "$@" | wc -l)
  if [ "$n" -le 40 ]; then sed 's/^/     /' "$@"
  else cat "$@" | sed 's/^/     /' | head -15; echo "     [$((n - 40)) lines left out]"; cat "$@" | sed 's/^/     /' | tail -25; fi
}
check() { # check NAME FUNCTION: the function must succeed
  local name=$1; shift
  : >"$tmp/out"; : >"$tmp/err"
  if "$@"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; excerpt "$tmp/out" "$tmp/err"; fi
}

if [ "$(id -u)" -ne 0 ]; then echo "the Slurm tier needs root (slurmd runs job steps as their user)"; echo "0 passed, 1 failed"; exit 1; fi
for f in "$plugin" "$agent"; do
  [ -f "$f" ] || { echo "$f is missing; run make first"; echo "0 passed, 1 failed"; exit 1; }
done

# Work on copies: a concurrent `make` in the shared tree must not swap libraries under a running cluster.
mkdir -p "$tmp/lib" "$tmp/bin" "$tmp/tests/slurm" && cp "$plugin" "$agent" "$tmp/lib/" || { echo "0 passed, 1 failed"; exit 1; }
plugin=$tmp/lib/spank_lockstep.so
agent=$tmp/lib/liblockstep.so
for f in bin/lockstepd bin/lockstep bin/lockstep-train tests/slurm/mpi_twin; do [ -x "$build/$f" ] && cp "$build/$f" "$tmp/$f"; done
# The MPI wrappers and the real programs of tests/apps (the stripped library beside its program).
[ -f "$build/lib/liblockstep_mpi.so" ] && cp "$build/lib/liblockstep_mpi.so" "$tmp/lib/"
mkdir -p "$tmp/tests/apps"
for f in heat solver libsolver.so blacs_solve fortran_f08 fortran_nbc; do [ -f "$build/tests/apps/$f" ] && cp "$build/tests/apps/$f" "$tmp/tests/apps/"; done
[ -f "$build/tests/agent/mpi_nbc" ] && cp "$build/tests/agent/mpi_nbc" "$tmp/tests/apps/"
lockstepd=$tmp/bin/lockstepd
lockstep_cli=$tmp/bin/lockstep

# A sanitized agent (SAN=1) needs the ASan runtime loaded first: the tasks get it as the user's own
# LD_PRELOAD entry, which the plugin keeps in front of the agent.
user_preload=
case $build in */san)
  user_preload=$(gcc -print-file-name=libasan.so)
  export ASAN_OPTIONS=detect_leaks=0 ;;
esac

# Jobs inherit this shell's environment: start from one without lockstep or determinism settings.
for v in $(compgen -e | grep -E '^(LOCKSTEP_|SLURM_|NCCL_|OMPI_MCA_coll)'); do unset "$v"; done
unset LD_PRELOAD OMP_NUM_THREADS CUBLAS_WORKSPACE_CONFIG PYTHONHASHSEED MKL_CBWR NVTE_ALLOW_NONDETERMINISTIC_ALGO

# The site secret; a closed port stands for a lockstepd that is down.
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/secret"
chmod 600 "$tmp/secret"
secret=$(cat "$tmp/secret")
free_port() { # a TCP port nothing listens on
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 30000))
    ss -Htan "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}
dead_port=$(free_port)
args="agent=$agent secret=$tmp/secret spool=$tmp/spool server=http://127.0.0.1:$dead_port timeout_ms=1500"
# ($tmp/spool does not exist yet: slurmstepd creates it, sticky and world-writable.)

t0=$(date +%s%N)
run=$("$src/deploy/slurm/up.sh" -d "$tmp/cluster" -n 4 -p "$plugin" -a "$args" -o required 2>"$tmp/up.err") || {
  echo "the local cluster did not start:"; cat "$tmp/up.err"; run=$tmp/cluster; echo "0 passed, 1 failed"; exit 1; }
export SLURM_CONF=$run/slurm.conf
echo "cluster up in $(( ($(date +%s%N) - t0) / 1000000 )) ms"

plugstack() { echo "required $plugin $*" >"$run/plugstack.conf"; }

# job ARGS... : srun with a time limit; output in $tmp/out, $tmp/err. Tasks write their env to
# $tmp/env.RANK (and, if they get that far, touch $tmp/ran.RANK).
job() {
  rm -f "$tmp"/env.* "$tmp"/ran.*
  local exp="ALL"
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload${JOB_PRELOAD:+:$JOB_PRELOAD}"
  [ -z "$user_preload" ] && [ -n "${JOB_PRELOAD:-}" ] && exp="ALL,LD_PRELOAD=$JOB_PRELOAD"
  # Options up to the first word that is not one; then an optional command (default: record and mark).
  local opts=() 
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do opts+=("$1"); shift; done
  [ $# -eq 0 ] && set -- true
  timeout 30 srun --immediate=10 --export="$exp" "${opts[@]}" \
    bash -c 'env >'"$tmp"'/env.$SLURM_PROCID; touch '"$tmp"'/ran.$SLURM_PROCID; exec "$@"' job "$@" >"$tmp/out" 2>"$tmp/err"
}
envof() { grep "^$2=" "$tmp/env.$1" | head -1 | cut -d= -f2-; } # envof RANK NAME
want() { # want RANK NAME VALUE
  local got; got=$(envof "$1" "$2")
  [ "$got" = "$3" ] || { echo "rank $1: $2='$got', wanted '$3'" >>"$tmp/err"; return 1; }
}
absent() { ! grep -q "^$2=" "$tmp/env.$1" || { echo "rank $1: $2 is set: $(grep "^$2=" "$tmp/env.$1")" >>"$tmp/err"; return 1; }; }
token_of() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$secret" | awk '{print $NF}'; }

# --- the build: exports and hardening
t_exports() {
  nm -D --defined-only "$plugin" | awk '{print $3}' | sort >"$tmp/out"
  printf '%s\n' plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt \
    slurm_spank_task_exit slurm_spank_task_init spank_plugin_version | sort | diff - "$tmp/out" >"$tmp/err"
}
t_hardened() {
  readelf -d "$plugin" | grep -q 'BIND_NOW' && readelf -l "$plugin" | grep -q GNU_RELRO &&
    nm -D "$plugin" | grep -q __stack_chk_fail
}

# --- the examples for sites are valid
t_example_lockstepd_conf() { "$lockstepd" --config "$src/deploy/examples/lockstepd.conf" --help >/dev/null 2>"$tmp/err"; }
t_example_unit() { # systemd-analyze finds nothing wrong but the binary not being installed here
  grep -q '^ExecStart=/usr/local/sbin/lockstepd --config /etc/lockstep/lockstepd.conf$' "$src/deploy/examples/lockstepd.service" || return 1
  command -v systemd-analyze >/dev/null || return 0
  timeout 20 systemd-analyze verify "$src/deploy/examples/lockstepd.service" 2>&1 |
    grep -v 'Command /usr/local/sbin/lockstepd is not executable' >"$tmp/err"
  [ ! -s "$tmp/err" ]
}

# --- options
t_help() { srun --help 2>&1 | grep -q -- '--lockstep=\[off|consensus|fp|det\]' && sbatch --help 2>&1 | grep -q -- '--lockstep-twin=NAME'; }
t_bad_mode() { ! job -N1 --lockstep=bogus && grep -q 'not a mode' "$tmp/err" && [ ! -e "$tmp/ran.0" ]; }
t_bad_trace() { ! job -N1 --lockstep-trace='bogus:x' && grep -q 'not a trace spec' "$tmp/err"; }
t_bad_twin() { ! job -N1 --lockstep-twin='a b' && grep -q 'not a twin group' "$tmp/err"; }

# --- det on two nodes: runtime, agent, identity, token, secret
t_det() {
  job -N2 --lockstep=det --lockstep-twin=g --lockstep-trace='metrics;ops:steps=3-4' || return 1
  local jid; jid=$(envof 0 SLURM_JOB_ID)
  for r in 0 1; do
    want $r LOCKSTEP_MODE det && want $r LOCKSTEP_TWIN_GROUP g && want $r LOCKSTEP_JOB_ID "$jid" &&
      want $r LOCKSTEP_STEP_ID "$(envof $r SLURM_STEP_ID)" && want $r LOCKSTEP_RANKS 2 &&
      want $r LOCKSTEP_NODES 'n[1-2]' && want $r LOCKSTEP_PARTITION debug && want $r LOCKSTEP_USER root &&
      want $r LOCKSTEP_TRACE 'metrics;ops:steps=3-4' && want $r LOCKSTEP_SPOOL_DIR "$tmp/spool" &&
      want $r LOCKSTEP_SERVER "http://127.0.0.1:$dead_port" &&
      want $r NCCL_ALGO Ring && want $r NCCL_PROTO Simple && want $r NCCL_NVLS_ENABLE 0 &&
      want $r NCCL_COLLNET_ENABLE 0 && want $r NCCL_MIN_NCHANNELS 8 && want $r NCCL_MAX_NCHANNELS 8 &&
      want $r CUBLAS_WORKSPACE_CONFIG :4096:8 && want $r NVTE_ALLOW_NONDETERMINISTIC_ALGO 0 &&
      want $r MKL_CBWR COMPATIBLE && want $r PYTHONHASHSEED 0 && want $r OMP_NUM_THREADS 1 &&
      want $r OMPI_MCA_coll_tuned_use_dynamic_rules 1 && want $r OMPI_MCA_coll_tuned_allreduce_algorithm 4 &&
      want $r NCCL_GRAPH_DUMP_FILE "$tmp/spool/nccl-graph.$jid.$(envof $r SLURM_STEP_ID).xml" &&
      want $r LOCKSTEP_TOKEN "$(token_of "$jid")" || return 1
    case $(envof $r LD_PRELOAD) in *"$agent") ;; *) echo "rank $r: LD_PRELOAD lacks the agent" >>"$tmp/err"; return 1 ;; esac
  done
  [ "$(envof 0 SLURMD_NODENAME)" != "$(envof 1 SLURMD_NODENAME)" ] || { echo "both ranks on one node" >>"$tmp/err"; return 1; }
}
t_spool_made() { [ "$(stat -c %a "$tmp/spool")" = 1777 ]; }
t_secret_hidden() {
  job -N1 --lockstep=det || return 1
  ! grep -qF "$secret" "$tmp/env.0" && ! grep -qF "$tmp/secret" "$tmp/env.0"
}
t_token_per_job() { # two jobs, two different tokens, each the HMAC of its own job id
  job -N1 --lockstep=fp || return 1
  local j1 t1; j1=$(envof 0 SLURM_JOB_ID); t1=$(envof 0 LOCKSTEP_TOKEN)
  job -N1 --lockstep=fp || return 1
  local j2 t2; j2=$(envof 0 SLURM_JOB_ID); t2=$(envof 0 LOCKSTEP_TOKEN)
  [ "$j1" != "$j2" ] && [ "$t1" != "$t2" ] && [ "$t1" = "$(token_of "$j1")" ] && [ "$t2" = "$(token_of "$j2")" ]
}
t_user_preload_kept() {
  JOB_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 job -N1 --lockstep=det || return 1
  local want_pre="/lib/x86_64-linux-gnu/libm.so.6:$agent"
  [ -n "$user_preload" ] && want_pre="$user_preload:$want_pre"
  want 0 LD_PRELOAD "$want_pre"
}
t_user_values_kept() { # values that keep determinism stay as the user set them
  OMP_NUM_THREADS=3 CUBLAS_WORKSPACE_CONFIG=:16:8 NCCL_MIN_NCHANNELS=4 job -N1 --lockstep=det &&
    want 0 OMP_NUM_THREADS 3 && want 0 CUBLAS_WORKSPACE_CONFIG :16:8 && want 0 NCCL_MAX_NCHANNELS 4
}
t_det_cpus_per_task() { job -N1 --cpus-per-task=2 --lockstep=det && want 0 OMP_NUM_THREADS 2; }

# --- conflicts: det refuses, fp records
t_det_conflict() {
  ! NCCL_ALGO=Tree job -N2 --lockstep=det && [ ! -e "$tmp/ran.0" ] && [ ! -e "$tmp/ran.1" ] &&
    grep -q 'NCCL_ALGO=Tree breaks --lockstep=det' "$tmp/err" && grep -q 'set NCCL_ALGO=Ring' "$tmp/err"
}
t_det_conflicts_all_named() {
  ! NCCL_PROTO=LL PYTHONHASHSEED=random NCCL_MIN_NCHANNELS=2 NCCL_MAX_NCHANNELS=4 job -N1 --lockstep=det &&
    grep -q 'NCCL_PROTO=LL' "$tmp/err" && grep -q 'PYTHONHASHSEED=random' "$tmp/err" &&
    grep -q 'NCCL_MIN_NCHANNELS=2' "$tmp/err"
}
t_fp_records() {
  NCCL_ALGO=Tree job -N1 --lockstep=fp && want 0 LOCKSTEP_MODE fp && want 0 NCCL_ALGO Tree &&
    want 0 LOCKSTEP_CONFLICTS NCCL_ALGO=Tree && absent 0 CUBLAS_WORKSPACE_CONFIG
}
t_bare_is_fp() { job -N1 --lockstep && want 0 LOCKSTEP_MODE fp && absent 0 NCCL_ALGO && absent 0 LOCKSTEP_CONFLICTS; }

# --- off and untouched jobs
t_off() {
  JOB_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 job -N1 --lockstep=off || return 1
  ! grep -q '^LOCKSTEP_' "$tmp/env.0" && absent 0 NCCL_ALGO && ! grep -q "^LD_PRELOAD=.*liblockstep" "$tmp/env.0"
}
t_untouched() {
  job -N2 || return 1
  for r in 0 1; do
    ! grep -q '^LOCKSTEP_' "$tmp/env.$r" && absent $r OMP_NUM_THREADS && absent $r NCCL_ALGO || return 1
    [ "$(envof $r LD_PRELOAD)" = "$user_preload" ] || return 1
  done
}

# --- environment fallbacks
t_env_fallback() {
  SLURM_LOCKSTEP=det SLURM_LOCKSTEP_TWIN=envgrp SLURM_LOCKSTEP_TRACE=ops job -N1 &&
    want 0 LOCKSTEP_MODE det && want 0 LOCKSTEP_TWIN_GROUP envgrp && want 0 LOCKSTEP_TRACE ops && want 0 NCCL_ALGO Ring
}
t_option_beats_env() { SLURM_LOCKSTEP=det job -N1 --lockstep=fp && want 0 LOCKSTEP_MODE fp; }
t_env_fallback_bad() { # refused at submission, in the words of the variable the user set
  ! SLURM_LOCKSTEP=maybe job -N1 && grep -q 'SLURM_LOCKSTEP=maybe is not a mode' "$tmp/err" && [ ! -e "$tmp/ran.0" ] &&
    ! grep -q -- '--lockstep=maybe' "$tmp/err"
}
# A variable's bad value fails sbatch before any allocation: no job id, no job; the error names the variable.
t_env_bad_at_submission() {
  ! SLURM_LOCKSTEP_TWIN='a b' sbatch --parsable --wrap true --lockstep=fp >"$tmp/out" 2>"$tmp/err" &&
    [ ! -s "$tmp/out" ] && grep -q 'SLURM_LOCKSTEP_TWIN=a b is not a twin group name' "$tmp/err" &&
    ! grep -q -- '--lockstep-twin' "$tmp/err" && [ -z "$(squeue -h)" ] || return 1
  ! SLURM_LOCKSTEP_TRACE='bogus:x' job -N1 --lockstep=fp &&
    grep -q 'SLURM_LOCKSTEP_TRACE=bogus:x is not a trace spec' "$tmp/err" && [ ! -e "$tmp/ran.0" ]
}
# --lockstep-twin without --lockstep where the site's default is off: said at submission, and the job still runs.
t_twin_without_mode() {
  local jid
  jid=$(sbatch --parsable --wrap true --lockstep-twin=lonely -o /dev/null 2>"$tmp/err") && [ -n "$jid" ] &&
    grep -q 'lockstep: --lockstep-twin does nothing without --lockstep' "$tmp/err" &&
    grep -q 'add --lockstep' "$tmp/err" || return 1
  for _ in $(seq 1 150); do [ -n "$(squeue -h -j "$jid" 2>/dev/null)" ] || break; sleep 0.1; done
  job -N1 --lockstep-ignore=report_timings && [ -e "$tmp/ran.0" ] &&
    grep -q 'lockstep: --lockstep-ignore does nothing without --lockstep' "$tmp/err" || return 1
  SLURM_LOCKSTEP_TWIN=g job -N1 --lockstep=off && grep -q 'SLURM_LOCKSTEP_TWIN does nothing with --lockstep=off' "$tmp/err" ||
    return 1
  job -N1 --lockstep --lockstep-twin=fine && ! grep -q 'does nothing' "$tmp/err" || return 1
  plugstack "$args default=fp"
  job -N1 --lockstep-twin=fine && ! grep -q 'does nothing' "$tmp/err" && want 0 LOCKSTEP_TWIN_GROUP fine
  local rc=$?
  plugstack "$args"
  return $rc
}

# --- the slurmctld epilog says what it could not read or write, as Slurm said it (a stand-in for the CLI gives the
# line): Slurm's configuration that SLURM_CONF does not name, never "without slurmdbd"; with this cluster's
# configuration (no accounting), Slurm's answer and the accounting storage it has.
epilog() { # epilog SLURM_CONF: the epilog for job 4242 with its log in $tmp/ep/log
  mkdir -p "$tmp/ep" && cp "$src/deploy/slurm/epilog-lockstep.sh" "$tmp/ep/" && rm -f "$tmp/ep/log" || return 1
  printf '#!/bin/sh\necho "lockstep: g1 matched"\n' >"$tmp/ep/cli" && chmod 755 "$tmp/ep/cli"
  printf 'LOCKSTEP_SERVER=http://127.0.0.1:9\nLOCKSTEP_CLI=%s\nSLURM_CONF=%s\nLOCKSTEP_EPILOG_LOG=%s\nLOCKSTEP_EPILOG_TWINS=0\n' \
    "$tmp/ep/cli" "$1" "$tmp/ep/log" >"$tmp/ep/epilog-lockstep.conf"
  SLURM_JOB_ID=4242 "$tmp/ep/epilog-lockstep.sh" || return 1
  cat "$tmp/ep/log" >>"$tmp/err"
}
t_epilog_says_why() {
  epilog "$tmp/ep/no-such.conf" &&
    grep -q "cannot read Slurm's configuration, so no AdminComment can be read or written: SLURM_CONF=$tmp/ep/no-such.conf: no such file" \
      "$tmp/ep/log" &&
    grep -q "job 4242: cannot write 'lockstep: g1 matched': Slurm's configuration could not be read (SLURM_CONF=" "$tmp/ep/log" &&
    ! grep -q 'slurmdbd' "$tmp/ep/log" || return 1
  epilog "$run/slurm.conf" && ! grep -q "cannot read Slurm's configuration" "$tmp/ep/log" &&
    grep -q "job 4242: nowhere to write 'lockstep: g1 matched': scontrol update: .*[Ii]nvalid job id" "$tmp/ep/log" &&
    grep -q 'AccountingStorageType is accounting_storage/none, not accounting_storage/slurmdbd' "$tmp/ep/log"
}

# --- sbatch: options carry into the steps; the batch shell gets no agent
t_sbatch_carries() {
  cat >"$tmp/batch.sh" <<EOF
#!/bin/bash
env >$tmp/benv.batch
srun -N2 bash -c 'env >$tmp/benv.\$SLURM_PROCID'
export NCCL_ALGO=Tree
srun -N1 bash -c 'touch $tmp/benv.ran'
echo "inner=\$?"
EOF
  rm -f "$tmp"/benv.*
  local exp="ALL" jid
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  jid=$(sbatch --parsable --export="$exp" -N2 --lockstep=det --lockstep-twin=bt -o "$tmp/batch.out" "$tmp/batch.sh") || return 1
  for _ in $(seq 1 150); do [ -n "$(squeue -h -j "$jid" 2>/dev/null)" ] || break; sleep 0.1; done
  cp "$tmp/batch.out" "$tmp/out"
  for r in 0 1; do
    grep -q '^LOCKSTEP_MODE=det$' "$tmp/benv.$r" && grep -q '^LOCKSTEP_TWIN_GROUP=bt$' "$tmp/benv.$r" &&
      grep -q "^LD_PRELOAD=.*$agent$" "$tmp/benv.$r" && grep -q '^NCCL_ALGO=Ring$' "$tmp/benv.$r" || return 1
  done
  grep -q '^NCCL_ALGO=Ring$' "$tmp/benv.batch" && ! grep -q "^LD_PRELOAD=.*liblockstep" "$tmp/benv.batch" &&
    [ ! -e "$tmp/benv.ran" ] && grep -q 'NCCL_ALGO=Tree breaks --lockstep=det' "$tmp/batch.out" &&
    grep -q 'inner=1' "$tmp/batch.out" && ! grep -q 'does nothing' "$tmp/batch.out" # the sruns inside got --lockstep
}

t_salloc_carries() {
  local exp="ALL"
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  rm -f "$tmp"/env.*
  timeout 30 salloc --immediate=10 -N2 --lockstep=det --lockstep-twin=sa srun --export="$exp" \
    bash -c 'env >'"$tmp"'/env.$SLURM_PROCID' >"$tmp/out" 2>"$tmp/err" || return 1
  for r in 0 1; do want $r LOCKSTEP_MODE det && want $r LOCKSTEP_TWIN_GROUP sa && want $r NCCL_ALGO Ring || return 1; done
  ! grep -q 'does nothing' "$tmp/err" # the srun inside got --lockstep from salloc
}

# --- lockstepd down: the job runs, and not slowly
t_server_down() {
  local t; t=$(date +%s%N)
  job -N2 --lockstep=det --lockstep-twin=down || return 1
  local ms=$(( ($(date +%s%N) - t) / 1000000 ))
  echo "job with lockstepd down took $ms ms" >>"$tmp/err"
  [ -e "$tmp/ran.0" ] && [ -e "$tmp/ran.1" ] && [ "$ms" -lt 5000 ]
}

t_server_hangs() { # a lockstepd that accepts and never answers costs the step at most timeout_ms (1500)
  local hport; hport=$(free_port)
  python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); time.sleep(60)' "$hport" &
  local hang=$!
  for _ in $(seq 1 50); do ss -Hltn "sport = :$hport" | grep -q . && break; sleep 0.05; done
  plugstack "${args/server=http:\/\/127.0.0.1:$dead_port/server=http://127.0.0.1:$hport}"
  local t; t=$(date +%s%N)
  LOCKSTEP_FLUSH_TIMEOUT=1 job -N2 --lockstep=det
  local rc=$? ms=$(( ($(date +%s%N) - t) / 1000000 ))
  stop_pid "$hang"
  plugstack "$args"
  echo "job against a hung lockstepd took $ms ms" >>"$tmp/err"
  [ $rc -eq 0 ] && [ -e "$tmp/ran.0" ] && [ -e "$tmp/ran.1" ] && [ "$ms" -ge 1400 ] && [ "$ms" -lt 6000 ] &&
    grep -q 'not registered now' "$run"/log/slurmd-n1.log
}

# --- site policy: enforce, missing agent, unknown arguments
t_enforce_fp() {
  plugstack "$args enforce=fp"
  job -N1 && want 0 LOCKSTEP_MODE fp && job -N1 --lockstep=off && want 0 LOCKSTEP_MODE fp
}
t_default_det() { plugstack "$args default=det"; job -N1 && want 0 LOCKSTEP_MODE det && job -N1 --lockstep=off && absent 0 LOCKSTEP_MODE; }
t_agent_missing_runs() {
  plugstack "${args/agent=$agent/agent=$tmp/nope.so}"
  job -N1 --lockstep=fp && [ -e "$tmp/ran.0" ] && grep -q 'runs without fingerprinting' "$tmp/err"
}
t_agent_missing_enforced() {
  plugstack "${args/agent=$agent/agent=$tmp/nope.so} enforce=fp"
  ! job -N1 && [ ! -e "$tmp/ran.0" ] && grep -q 'enforces --lockstep=fp' "$tmp/err"
}
t_unknown_arg() {
  plugstack "$args colour=blue"
  job -N1 --lockstep=fp && want 0 LOCKSTEP_MODE fp &&
    grep -q "unknown plugstack argument 'colour=blue'" "$tmp/err" "$run"/log/slurmd-n*.log
}

# --- with a real lockstepd (embedded PostgreSQL): registration, twins, exits, tokens, spool
mpi_twin=$tmp/tests/slurm/mpi_twin
lsd_port=$(free_port)
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
api() { curl -sS --max-time 10 "$@"; } # api ARGS...: curl against lockstepd

start_lockstepd() {
  rm -f "$tmp/lsd.port"
  "$lockstepd" --listen "127.0.0.1:$lsd_port" --port-file "$tmp/lsd.port" --state-dir "$tmp/lsd" \
    --secret "$tmp/secret" >>"$tmp/lsd.log" 2>&1 &
  srv_pid=$!
  for _ in $(seq 1 300); do [ -s "$tmp/lsd.port" ] && return 0; alive "$srv_pid" || break; sleep 0.1; done
  echo "lockstepd did not start:" >>"$tmp/err"; tail -5 "$tmp/lsd.log" >>"$tmp/err"; return 1
}
stop_lockstepd() { [ -n "$srv_pid" ] && stop_pid "$srv_pid"; srv_pid=; }
# t_lsd_clean - last: lockstepd stops, and (SAN=1) its log holds no sanitizer report from what the plugin registered
# and attested
t_lsd_clean() { stop_lockstepd; ! grep -E 'AddressSanitizer|runtime error:|LeakSanitizer' "$tmp/lsd.log" >>"$tmp/err"; }

# mjob NAME ARGS...: the MPI program under srun; each task's env in $tmp/env.RANK.
mjob() {
  rm -f "$tmp"/env.*
  local exp="ALL"
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  timeout 60 srun --immediate=10 --mpi=pmix --export="$exp" "$@" \
    bash -c 'env >'"$tmp"'/env.$SLURM_PROCID; exec '"$mpi_twin"' 6' >"$tmp/out" 2>"$tmp/err"
}
# json EXPR < body: evaluate a Python expression over the JSON document `d`.
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

t_twins_mpi() {
  local j1 j2 t1 run1
  # both on n1 and n2 (-w): left to itself, Slurm may place the second on n3 and n4 while n1 and n2 still complete
  mjob -N2 -n4 -w 'n[1-2]' --lockstep=det --lockstep-twin=g || return 1
  j1=$(envof 0 SLURM_JOB_ID); run1=$(envof 0 LOCKSTEP_RUN_ID); t1=$(envof 0 LOCKSTEP_TOKEN)
  cp "$tmp/env.0" "$tmp/envA"
  mjob -N2 -n4 -w 'n[1-2]' --lockstep=det --lockstep-twin=g || return 1
  j2=$(envof 0 SLURM_JOB_ID)
  [ -n "$run1" ] || { echo "the plugin did not register job $j1 (no LOCKSTEP_RUN_ID)" >>"$tmp/err"; return 1; }
  local st=
  for _ in $(seq 1 100); do
    api "http://127.0.0.1:$lsd_port/api/v1/twins/g" >"$tmp/out" || return 1
    st=$(json '"%s %s" % (d["status"], " ".join(sorted(r["status"] for r in d["runs"])))' <"$tmp/out")
    [ "$st" = "match ended ended" ] && break
    sleep 0.1
  done
  [ "$st" = "match ended ended" ] || { echo "twins g: $st" >>"$tmp/err"; return 1; }
  [ "$(json '" ".join(sorted(r["job_id"] for r in d["runs"]))' <"$tmp/out")" = "$(printf '%s\n' "$j1" "$j2" | sort | tr '\n' ' ' | sed 's/ $//')" ] &&
    [ "$(json '" ".join(sorted(set(r["nodes"] + "/" + str(r["ranks"]) + "/" + r["mode"] for r in d["runs"])))' <"$tmp/out")" = "n[1-2]/4/det" ] &&
    json '[r["run_id"] for r in d["runs"] if r["job_id"] == "'"$j1"'"][0]' <"$tmp/out" | grep -qx "$run1" || return 1
  # Every rank's records arrived: 6 steps x (allreduce.out, loss).
  api "http://127.0.0.1:$lsd_port/api/v1/runs/$run1" >"$tmp/out" || return 1
  [ "$(json '" ".join(str(r["records"]) + ":" + str(r["exit_code"]) for r in d["rank_status"])' <"$tmp/out")" = "12:0 12:0 12:0 12:0" ] &&
    [ "$(json 'd["user"] + " " + d["command"]' <"$tmp/out")" = "root bash -c env >$tmp/env.\$SLURM_PROCID; exec $mpi_twin 6" ] || return 1
  echo "$j1 $t1 $run1" >"$tmp/jobA"
}

t_exits_reported() { # ranks on both nodes: the first node's slurmstepd registered, the other looked the run up
  job -N2 --lockstep=fp bash -c 'exit $((SLURM_PROCID + 3))'
  local jid rid; jid=$(envof 0 SLURM_JOB_ID); rid=$(envof 0 LOCKSTEP_RUN_ID)
  [ -n "$rid" ] || return 1
  # srun may return before the other node's slurmstepd has run task_exit: wait for it a little.
  for _ in $(seq 1 50); do
    api "http://127.0.0.1:$lsd_port/api/v1/runs/$rid" >"$tmp/out" || return 1
    [ "$(json 'd["status"]' <"$tmp/out")" != running ] && break
    sleep 0.1
  done
  [ "$(json '" ".join(str(r["rank"]) + ":" + str(r["exit_code"]) for r in d["rank_status"])' <"$tmp/out")" = "0:3 1:4" ] &&
    [ "$(json 'd["job_id"] + " " + d["status"]' <"$tmp/out")" = "$jid failed" ]
}

t_secrets_stay() { # the operator's admin token in the submitting shell: no task sees it, no manifest publishes it;
  # a secret-named variable that can change results is there as its digest under the user's key
  local adm="adm1n-t0ken-$$-$RANDOM" ib="ib-t0ken-$$-$RANDOM" rid
  LOCKSTEP_ADMIN_TOKEN=$adm NCCL_IB_TOKEN=$ib mjob -N2 -n2 --lockstep=fp --lockstep-twin=secrets || return 1
  rid=$(envof 0 LOCKSTEP_RUN_ID)
  [ -n "$rid" ] || { echo "no run id" >>"$tmp/err"; return 1; }
  for r in 0 1; do
    absent $r LOCKSTEP_ADMIN_TOKEN && want $r NCCL_IB_TOKEN "$ib" || return 1
    [ "$(envof $r LOCKSTEP_DIGEST_KEY | wc -c)" = 65 ] || { echo "rank $r: no digest key" >>"$tmp/err"; return 1; }
  done
  for _ in $(seq 1 100); do
    api "http://127.0.0.1:$lsd_port/api/v1/runs/$rid" >"$tmp/out" || return 1
    [ "$(json 'len(d["manifests"])' <"$tmp/out")" = 2 ] && break
    sleep 0.1
  done
  ! grep -qF "$adm" "$tmp/out" && ! grep -qF "$ib" "$tmp/out" &&
    ! grep -qF "$(envof 0 LOCKSTEP_DIGEST_KEY)" "$tmp/out" || { echo "a secret is in GET /runs/$rid" >>"$tmp/err"; return 1; }
  # the digest is HMAC-SHA256 under HMAC(HMAC(secret, label), user) over the name, a NUL and the value
  python3 - "$tmp/secret" "$ib" "$tmp/out" 2>>"$tmp/err" <<'PY'
import hashlib, hmac, json, sys
secret = open(sys.argv[1], "rb").read().rstrip(b"\r\n")
derived = hmac.new(secret, b"\nlockstep env digest v1\n", hashlib.sha256).digest()
key = bytes.fromhex(hmac.new(derived, b"root", hashlib.sha256).hexdigest())
kid = hmac.new(key, b"\nlockstep env digest key id v1\n", hashlib.sha256).hexdigest()[:16]
want = "hmac-sha256:%s:%s" % (kid, hmac.new(key, b"NCCL_IB_TOKEN\0" + sys.argv[2].encode(), hashlib.sha256).hexdigest())
ms = json.load(open(sys.argv[3]))["manifests"]
got = [m["manifest"]["env"].get(k) for m in ms for k in ("NCCL_IB_TOKEN", "LOCKSTEP_ADMIN_TOKEN", "LOCKSTEP_DIGEST_KEY")]
sys.exit(0 if got == [want, None, None] * 2 else "digests: %s, want %s" % (got, want))
PY
}

t_token_scope() { # a job's token cannot write into another job's run
  [ -s "$tmp/jobA" ] || return 1
  read -r ja ta runa <"$tmp/jobA"
  job -N1 --lockstep=fp || return 1
  local jb tb runb; jb=$(envof 0 SLURM_JOB_ID); tb=$(envof 0 LOCKSTEP_TOKEN); runb=$(envof 0 LOCKSTEP_RUN_ID)
  [ -n "$runb" ] && [ "$ta" != "$tb" ] || return 1
  local url="http://127.0.0.1:$lsd_port/api/v1/runs/$runb/end" body='{"rank":0,"exit_code":0}'
  [ "$(api -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ta" -d "$body" "$url")" = 403 ] &&
    [ "$(api -o /dev/null -w '%{http_code}' -d "$body" "$url")" = 401 ] &&
    [ "$(api -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tb" -d "$body" "$url")" = 200 ] &&
    # nor register a run under another job's id
    [ "$(api -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ta" -d '{"job_id":"'"$jb"'","step_id":"9"}' \
        "http://127.0.0.1:$lsd_port/api/v1/runs")" = 403 ]
}

t_down_then_back() { # lockstepd away: the job runs; its data arrives once lockstepd is back
  stop_lockstepd
  local t; t=$(date +%s%N)
  mjob -N2 -n4 --lockstep=det --lockstep-twin=late || return 1
  local ms=$(( ($(date +%s%N) - t) / 1000000 )) jid; jid=$(envof 0 SLURM_JOB_ID)
  echo "MPI job with lockstepd down took $ms ms" >>"$tmp/err"
  [ "$ms" -lt 15000 ] && grep -q "lockstep replay" "$tmp/err" || return 1
  start_lockstepd || return 1
  "$lockstep_cli" replay --server "http://127.0.0.1:$lsd_port" "$tmp/spool" >>"$tmp/out" 2>>"$tmp/err" || return 1
  api "http://127.0.0.1:$lsd_port/api/v1/runs?job=$jid" >"$tmp/out" || return 1
  local rid; rid=$(json 'd["items"][0]["run_id"]' <"$tmp/out") || return 1
  api "http://127.0.0.1:$lsd_port/api/v1/runs/$rid" >"$tmp/out" || return 1
  [ "$(json '" ".join(str(r["records"]) for r in d["rank_status"]) + " " + d["twin_group"]' <"$tmp/out")" = "12 12 12 12 late" ]
}


# --- real programs under the agent and its MPI wrappers (agent=liblockstep.so:liblockstep_mpi.so): causes, origin
# ranks and call sites, the ignore rule, configuration, failed twins; hardware evidence only where it began.
apps=$tmp/tests/apps
mpi_args() { echo "${args/server=http:\/\/127.0.0.1:$dead_port/server=http://127.0.0.1:$lsd_port}" | sed "s|agent=$agent|agent=$agent:$tmp/lib/liblockstep_mpi.so|"; }
# ajob SRUN_OPTS... -- PROGRAM ARGS: a real program on 4 ranks (2 nodes) under the plugin.
ajob() {
  local opts=() exp="ALL"
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  timeout 90 srun --immediate=10 --mpi=pmix --export="$exp" -N2 -n4 "${opts[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
}
findings_of() { python3 "$src/tests/agent/findings.py" "http://127.0.0.1:$lsd_port" "$1" 4 --timeout 40; }
vfield() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
# involved NODE GROUP: how many involvements the node's history holds for the group.
involved() {
  api "http://127.0.0.1:$lsd_port/api/v1/nodes/$1/history?limit=1000" 2>/dev/null | python3 -c '
import json, sys
try: d = json.load(sys.stdin)
except Exception: print(0); sys.exit()
print(sum(1 for e in d["items"] if e["kind"] == "involvement" and e.get("group") == sys.argv[1]))' "$2"
}
# group_class GROUP: the classification of the group's divergence alert, once it has one.
group_class() {
  local c=
  for _ in $(seq 1 100); do
    c=$(api "http://127.0.0.1:$lsd_port/api/v1/alerts?kind=divergence&limit=1000" | python3 -c '
import json, sys
print(" ".join(a["classification"] for a in json.load(sys.stdin)["items"] if a["group"] == sys.argv[1]))' "$1")
    [ -n "$c" ] && break; sleep 0.1
  done
  echo "$c"
}

t_ignore_bad_pattern() { # a pattern that cannot be one fails at submission, never silently
  ! ajob --lockstep=fp "--lockstep-ignore=report_timings,[x" -- true && grep -q 'is not a list of patterns' "$tmp/err" &&
    ! sbatch --wrap true --lockstep=fp --lockstep-ignore='f(int, double)' 2>"$tmp/err2" && grep -q "without its ')'" "$tmp/err2"
}
t_slurm_origin() { # rank 3 alone changes its input: rank 3 named, evidence on rank 3's nodes only
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-origin --lockstep-ignore=report_timings -- "$apps/heat" --steps 30 || return 1
  HEAT_PERTURB=3:18 ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-origin --lockstep-ignore=report_timings -- \
    "$apps/heat" --steps 30 || return 1
  local v; v=$(findings_of s-origin)
  echo "$v" >>"$tmp/err"
  [ "$(vfield "$v" cause)" = origin ] && [ "$(vfield "$v" origin_ranks)" = "[3]" ] && [ "$(vfield "$v" rank)" = 3 ] &&
    [ "$(vfield "$v" function)" = relax_step ] && [ "$(group_class s-origin)" = hardware ] || return 1
  local n2=0 n4=0
  for _ in $(seq 1 50); do n2=$(involved n2 s-origin); n4=$(involved n4 s-origin); [ "$n2" -ge 1 ] && [ "$n4" -ge 1 ] && break; sleep 0.1; done
  echo "involvements: n1 $(involved n1 s-origin) n2 $n2 n3 $(involved n3 s-origin) n4 $n4" >>"$tmp/err"
  [ "$n2" -ge 1 ] && [ "$n4" -ge 1 ] && [ "$(involved n1 s-origin)" = 0 ] && [ "$(involved n3 s-origin)" = 0 ]
}
t_slurm_timings() { # a closing reduction of timings inside a stripped library: every-rank, software, no node scored
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-timings -- "$apps/solver" 8 || return 1
  ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-timings -- "$apps/solver" 8 || return 1
  local v; v=$(findings_of s-timings)
  echo "$v" >>"$tmp/err"
  [ "$(vfield "$v" cause)" = every-rank ] && [ "$(vfield "$v" caller)" = "Solver::finish()" ] &&
    [ "$(vfield "$v" suggest_ignore)" = Solver::finish ] && [ "$(group_class s-timings)" = software ] || return 1
  for n in n1 n2 n3 n4; do [ "$(involved $n s-timings)" = 0 ] || { echo "$n was blamed" >>"$tmp/err"; return 1; }; done
  "$lockstep_cli" twins s-timings --server "http://127.0.0.1:$lsd_port" >"$tmp/out" 2>&1
  grep -q "lockstep-ignore='Solver::finish'" "$tmp/out" || return 1
  # with the rule the suggestion gives, the twins match
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-timings-ign --lockstep-ignore=Solver::finish -- "$apps/solver" 8 || return 1
  ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-timings-ign --lockstep-ignore=Solver::finish -- "$apps/solver" 8 || return 1
  v=$(findings_of s-timings-ign)
  echo "$v" >>"$tmp/err"
  [ "$(vfield "$v" status)" = match ]
}
t_slurm_grid() { # another process grid: configuration, the command line in the manifest diff, no library noise
  ajob --lockstep=det --lockstep-twin=s-grid --lockstep-ignore=report_timings -- "$apps/heat" --steps 6 --grid 2x2 || return 1
  ajob --lockstep=det --lockstep-twin=s-grid --lockstep-ignore=report_timings -- "$apps/heat" --steps 6 --grid 4x1 || return 1
  local v; v=$(findings_of s-grid)
  echo "$v" >>"$tmp/err"
  api "http://127.0.0.1:$lsd_port/api/v1/twins/s-grid/manifest-diff" >"$tmp/out" || return 1
  local keys; keys=$(json '" ".join(sorted({x["key"] for x in d["diffs"] if x["class"] == "configuration"}))' <"$tmp/out")
  echo "configuration keys: $keys" >>"$tmp/err"
  [ "$(vfield "$v" cause)" = configuration ] && [ "$keys" = "argv command" ] && [ "$(group_class s-grid)" = software ]
}
t_slurm_blacs() { # ScaLAPACK on a 1x1 BLACS grid: its broadcast of an unused word moves no data; no node blamed
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-blacs -- "$apps/blacs_solve" 8 || return 1
  ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-blacs -- "$apps/blacs_solve" 8 || return 1
  local v; v=$(python3 "$src/tests/agent/findings.py" "http://127.0.0.1:$lsd_port" s-blacs 1 --timeout 40)
  echo "$v" >>"$tmp/err"
  [ "$(vfield "$v" cause)" = origin ] && [ "$(vfield "$v" function)" = dgebs2d ] &&
    [ "$(vfield "$v" suggest_ignore)" = dgebs2d ] && [ "$(group_class s-blacs)" = software ] || return 1
  for n in n1 n2 n3 n4; do [ "$(involved $n s-blacs)" = 0 ] || { echo "$n was blamed" >>"$tmp/err"; return 1; }; done
  "$lockstep_cli" twins s-blacs --server "http://127.0.0.1:$lsd_port" >"$tmp/out" 2>&1
  grep -q "communicator of one process: nothing was sent or received" "$tmp/out" &&
    ! grep -q "received the change" "$tmp/out" && grep -q "lockstep-ignore='dgebs2d'" "$tmp/out" || return 1
  # with the rule the first report suggests, the twins match
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-blacs-ign --lockstep-ignore=dgebs2d -- "$apps/blacs_solve" 8 || return 1
  ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-blacs-ign --lockstep-ignore=dgebs2d -- "$apps/blacs_solve" 8 || return 1
  v=$(findings_of s-blacs-ign)
  echo "$v" >>"$tmp/err"
  [ "$(vfield "$v" status)" = match ]
}
t_slurm_input() { # twins differ by one character of the input file heat reads: configuration, the file named, no node blamed
  printf '1.000\n' >"$tmp/deck.in"
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-input --lockstep-ignore=report_timings -- \
    "$apps/heat" --steps 6 --input "$tmp/deck.in" || return 1
  printf '1.001\n' >"$tmp/deck.in"
  ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-input --lockstep-ignore=report_timings -- \
    "$apps/heat" --steps 6 --input "$tmp/deck.in" || return 1
  local v; v=$(findings_of s-input)
  echo "$v" >>"$tmp/err"
  api "http://127.0.0.1:$lsd_port/api/v1/twins/s-input/manifest-diff" >"$tmp/out" || return 1
  local keys; keys=$(json '" ".join(sorted({x["key"] for x in d["diffs"] if x["class"] == "configuration"}))' <"$tmp/out")
  echo "configuration keys: $keys" >>"$tmp/err"
  [ "$(vfield "$v" cause)" = configuration ] && [ "$keys" = "file:$tmp/deck.in" ] && [ "$(group_class s-input)" = software ] ||
    return 1
  for n in n1 n2 n3 n4; do [ "$(involved $n s-input)" = 0 ] || { echo "$n was blamed" >>"$tmp/err"; return 1; }; done
}
t_slurm_abort() { # rank 1 calls MPI_Abort(5) in both twins: each run's exit is the abort's code, rank 1 named
  ! MPI_TWIN_ABORT=1:3:5 ajob --lockstep=det --lockstep-twin=s-abort -- "$mpi_twin" 6
  ! MPI_TWIN_ABORT=1:3:5 ajob --lockstep=det --lockstep-twin=s-abort -- "$mpi_twin" 6
  local v st=
  for _ in 1 2 3; do v=$(findings_of s-abort); st=$(vfield "$v" status); [ "$st" != pending ] && break; done
  echo "$v" >>"$tmp/err"
  "$lockstep_cli" twins s-abort --server "http://127.0.0.1:$lsd_port" >"$tmp/out" 2>&1
  [ "$st" = incomplete ] && [ "$(vfield "$v" exits)" = "[5, 5]" ] &&
    [ "$(grep -c '5 (rank 1 aborted, others killed)' "$tmp/out")" = 2 ]
}
. "$src/tests/slurm/fortran.sh"
. "$src/tests/slurm/consensus.sh"
. "$src/tests/slurm/python.sh"
t_slurm_failed() { # twins that both abort at once: incomplete, each run's exit, not a match
  ! ajob --lockstep=det --lockstep-twin=s-failed -- "$apps/heat" --input "$tmp/no-such-deck"
  ! ajob --lockstep=det --lockstep-twin=s-failed -- "$apps/heat" --input "$tmp/no-such-deck"
  local v st=
  for _ in 1 2 3; do v=$(findings_of s-failed); st=$(vfield "$v" status); [ "$st" != pending ] && break; done
  echo "$v" >>"$tmp/err"
  [ "$st" = incomplete ] && python3 -c 'import json,sys; e=json.loads(sys.argv[1])["exits"]; sys.exit(0 if len(e) == 2 and all(x not in (0, None) for x in e) else 1)' "$v"
}

check "exports only SPANK symbols (nm -D)" t_exports
check "hardened: RELRO, BIND_NOW, stack protector" t_hardened
[ -x "$lockstepd" ] && check "deploy/examples/lockstepd.conf loads in lockstepd" t_example_lockstepd_conf
check "deploy/examples/lockstepd.service starts lockstepd with its config" t_example_unit
check "srun and sbatch list the options" t_help
check "--lockstep=bogus fails at submission" t_bad_mode
check "--lockstep-trace checks its spec" t_bad_trace
check "--lockstep-twin checks its name" t_bad_twin
check "det on 2 nodes: runtime, agent, LOCKSTEP_*, token" t_det
check "slurmstepd creates the spool directory (1777)" t_spool_made
check "the secret never reaches the job" t_secret_hidden
check "each job gets the HMAC token of its own id" t_token_per_job
check "the user's LD_PRELOAD entries are kept" t_user_preload_kept
check "det keeps user values that are deterministic" t_user_values_kept
check "det pins OMP_NUM_THREADS to cpus-per-task" t_det_cpus_per_task
check "det refuses NCCL_ALGO=Tree with the variable and fix" t_det_conflict
check "det names every conflicting variable" t_det_conflicts_all_named
check "fp records the conflict in LOCKSTEP_CONFLICTS" t_fp_records
check "bare --lockstep means fp" t_bare_is_fp
check "--lockstep=off does nothing" t_off
check "a job without --lockstep is untouched" t_untouched
check "SLURM_LOCKSTEP* fallbacks" t_env_fallback
check "an option beats its SLURM_LOCKSTEP* variable" t_option_beats_env
check "a bad SLURM_LOCKSTEP fails the step" t_env_fallback_bad
check "a bad SLURM_LOCKSTEP_* fails sbatch and srun at submission, naming the variable" t_env_bad_at_submission
check "--lockstep-twin (and the others) without --lockstep: a warning at submission" t_twin_without_mode
check "the epilog says what it could not read: Slurm's configuration, Slurm's answer" t_epilog_says_why
check "sbatch options carry into srun steps" t_sbatch_carries
check "salloc options carry into srun steps" t_salloc_carries
check "lockstepd down: the job still runs, quickly" t_server_down
check "a hung lockstepd delays the step by timeout_ms at most" t_server_hangs
check "enforce=fp raises jobs to fp" t_enforce_fp
check "default=det applies when the user asks nothing" t_default_det
check "a missing agent: the job runs, with a warning" t_agent_missing_runs
check "a missing agent under enforce fails the step" t_agent_missing_enforced
check "an unknown plugstack argument is logged" t_unknown_arg
plugstack "$args"

# --- a requeued job keeps its job id and numbers its steps again: each attempt is its own run (step "0", then
# "0.r1"), whole, and no rank of the second attempt writes into the first one's run
# requeue_once: one job through a requeue; 0 when both runs are right, 2 when Slurm never ran the requeued
# attempt's script (on a loaded machine a relaunch right after the requeue can fail in Slurm itself).
requeue_once() {
  cat >"$tmp/rq.sh" <<SCRIPT
#!/bin/bash
echo "attempt \${SLURM_RESTART_COUNT:-0}" >>$tmp/rq.attempts
srun --mpi=pmix -N2 -n4 bash -c 'echo "\$SLURM_STEP_ID \$LOCKSTEP_STEP_ID \${SLURM_RESTART_COUNT:-unset}" >>$tmp/rq.attempts; exec $mpi_twin 6'
[ "\${SLURM_RESTART_COUNT:-0}" = 0 ] && touch $tmp/rq.first && sleep 120
exit 0
SCRIPT
  rm -f "$tmp/rq.first" "$tmp/rq.attempts"
  local exp="ALL" jid got=
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  jid=$(sbatch --parsable --export="$exp" -N2 -n4 --lockstep=det --lockstep-twin=rq -o "$tmp/rq.out" "$tmp/rq.sh") || return 1
  for _ in $(seq 1 300); do [ -e "$tmp/rq.first" ] && break; sleep 0.1; done
  [ -e "$tmp/rq.first" ] || { echo "job $jid: the first attempt did not finish its step" >>"$tmp/err"; return 1; }
  scontrol requeue "$jid" 2>>"$tmp/err" || return 1
  # Slurm holds a requeued job back for a while (BeginTime): whenever it is pending again, no node is still
  # completing the first attempt and 3 s have passed since the requeue, let it start now (the update is refused
  # until the requeue has gone through; asking again is harmless). Started sooner, slurmd refuses the batch script
  # ("already killed, do not launch batch job": slurmd revoked the job's credentials when it killed the first
  # attempt, at a one-second resolution) and the job fails: seen twice on a loaded machine, 0.35 s and 0.7 s after
  # the kill. Done when the restarted job has completed (slurmctld keeps the record MinJobAge=60 s; a busy one may
  # not answer a call).
  local st= seen= requeued
  requeued=$(date +%s)
  for _ in $(seq 1 450); do
    st=$(scontrol -o show job "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]* Reason=[^ ]*\|Restarts=[0-9]*' | tr '\n' ' ')
    [ -n "$st" ] && seen="$seen${seen:+, }$st"
    case $st in
      *PENDING*) [ $(($(date +%s) - requeued)) -ge 3 ] &&
                   ! scontrol -o show node 2>/dev/null | grep -q 'State=[A-Z+]*COMPLETING' &&
                   scontrol update JobId="$jid" StartTime=now 2>/dev/null ;;
      *COMPLETED*Restarts=[1-9]*) break ;;
    esac
    sleep 0.2
  done
  grep -q '^attempt 1$' "$tmp/rq.attempts" || {
    echo "job $jid: Slurm did not run the requeued attempt; its states: $(echo "$seen" | tr ',' '\n' | uniq -c | tr '\n' ' ')" >>"$tmp/err"
    grep -h -i "JobId=$jid\b\|job $jid\b\|StepId=$jid\.\|error" "$run"/log/*.log 2>/dev/null | tail -25 | sed 's/^/       /' >>"$tmp/err"
    return 2; }
  for _ in $(seq 1 100); do # each attempt's run: its step id and every rank's records (6 steps x 2)
    got=$(python3 - "http://127.0.0.1:$lsd_port/api/v1/runs" "$jid" 2>>"$tmp/err" <<'PY'
import json, sys, urllib.request
base, jid = sys.argv[1], sys.argv[2]
out = []
for r in json.load(urllib.request.urlopen(f"{base}?job={jid}", timeout=10))["items"]:
    d = json.load(urllib.request.urlopen(f"{base}/{r['run_id']}", timeout=10))
    out.append(r["step_id"] + " " + " ".join(str(x["records"]) for x in d["rank_status"]))
print("|".join(sorted(out)))
PY
)
    [ "$got" = "0 12 12 12 12|0.r1 12 12 12 12" ] && return 0
    sleep 0.2
  done
  echo "job $jid runs: '$got', want '0 12 12 12 12|0.r1 12 12 12 12'; its states: $(echo "$seen" | tr ',' '\n' | uniq -c | tr '\n' ' ')" >>"$tmp/err"
  cat "$tmp/rq.out" "$tmp/rq.attempts" >>"$tmp/err"
  return 1
}
t_requeue() {
  requeue_once
  local rc=$?
  [ $rc -eq 2 ] && { echo "a new job, once" >>"$tmp/err"; requeue_once; rc=$?; }
  [ $rc -eq 0 ]
}

# --- an experiment in one command: the baseline, the change and noise replicas (lockstep twin), judged by
# lockstep compare (docs/compare.md)
t_experiment() {
  cat >"$tmp/exp.sh" <<SCRIPT
#!/bin/bash
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
exec srun --mpi=pmix $tmp/bin/lockstep-train --quiet --steps 12 --hidden 16 --batch 8 "\$@"
SCRIPT
  chmod 755 "$tmp/exp.sh"
  local exp="ALL"
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port "$lockstep_cli" twin -n 2 --spread --group exp --change --lr=2e-3 \
    --noise 3 --noise-arg --nondeterministic --noise-env NCCL_ALGO=Tree --noise-mode fp -- \
    sbatch --export="$exp" -N1 -n2 --lockstep=det -o "$tmp/exp-%j.out" "$tmp/exp.sh" >"$tmp/out" 2>>"$tmp/err" || return 1
  grep -q '^experiment exp: 7 jobs$' "$tmp/out" && grep -q '^compare it: lockstep compare exp exp.change --noise exp.noise$' "$tmp/out" &&
    grep -q "dashboard: http://127.0.0.1:$lsd_port/#/compare?base=exp&changed=exp.change&noise=exp.noise" "$tmp/out" || return 1
  for _ in $(seq 600); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
  # Each set is its own twin group; the replicas ran with --lockstep=fp (det would refuse NCCL_ALGO=Tree).
  [ "$(api "http://127.0.0.1:$lsd_port/api/v1/runs?group=exp.noise" | json '" ".join(sorted(r["mode"] for r in d["items"]))')" = "fp fp fp" ] &&
    [ "$(api "http://127.0.0.1:$lsd_port/api/v1/runs?group=exp.change" | json '" ".join(sorted(r["mode"] for r in d["items"]))')" = "det det" ] ||
    { echo "modes are wrong" >>"$tmp/err"; return 1; }
  local rc=2
  for _ in $(seq 100); do # until every run's last batch is in
    "$lockstep_cli" compare exp exp.change --noise exp.noise --server "http://127.0.0.1:$lsd_port" >"$tmp/out" 2>>"$tmp/err"
    rc=$?
    [ $rc -le 1 ] && ! grep -q '^BASE .*, pending)$' "$tmp/out" && break # BASE's status: until it is decided
    sleep 0.1
  done
  [ $rc = 1 ] && grep -q '^verdict: BEYOND NOISE$' "$tmp/out" && grep -q '^BASE     exp (2 runs, bit-identical)$' "$tmp/out" &&
    grep -q '^first effect: step 2, rank 0, record "loss"' "$tmp/out"
}

# The lockstepd part, once lockstepd is built (the server issue); registration against it.
if [ -x "$lockstepd" ] && [ -x "$mpi_twin" ]; then
  if start_lockstepd; then
    plugstack "${args/server=http:\/\/127.0.0.1:$dead_port/server=http://127.0.0.1:$lsd_port}"
    check "two det MPI runs: one twin group, right jobs/nodes/ranks, they match" t_twins_mpi
    check "task exits on every node are reported" t_exits_reported
    check "a job's token cannot write into another job's run" t_token_scope
    check "the admin token reaches no task nor manifest; a secret is its digest under the user's key" t_secrets_stay
    check "a requeued job: each attempt its own run (steps 0 and 0.r1), both whole" t_requeue
    if [ -x "$apps/heat" ] && [ -x "$apps/solver" ] && [ -f "$tmp/lib/liblockstep_mpi.so" ]; then
      plugstack "$(mpi_args)"
      check "--lockstep-ignore with a bad pattern fails at submission" t_ignore_bad_pattern
      check "origin: rank 3 named; evidence on its nodes only (n2, n4), not n1, n3" t_slurm_origin
      check "closing timings in a stripped library: every-rank, software, no node scored; the ignore rule matches" t_slurm_timings
      check "another process grid: configuration, argv and command, no library noise" t_slurm_grid
      check "twins that abort at once: incomplete, not a match" t_slurm_failed
      if [ -x "$apps/blacs_solve" ]; then
        check "ScaLAPACK on a 1x1 grid: a one-process broadcast blames no node; its ignore rule matches" t_slurm_blacs
      else
        echo "skip ScaLAPACK on a 1x1 grid: tests/apps/blacs_solve is not built (libscalapack-openmpi-dev)"; skip=$((skip+1))
      fi
      check "one character changed in heat's input file: configuration, the file named, no node blamed" t_slurm_input
      check "MPI_Abort on rank 1 in both twins: the same exit, the abort's code, rank 1 named" t_slurm_abort
      check "Fortran (use mpi_f08), a bit flipped on rank 2: rank 2 named at physics::exchange" t_slurm_fortran
      if [ -x /usr/bin/pw.x ]; then
        check "Quantum ESPRESSO pw.x twice: every rank recorded; rank 0 broadcasts unset bytes: software, no node" t_slurm_pw
      else
        echo "skip pw.x: quantum-espresso is not installed (deploy/install-deps.sh)"; skip=$((skip+1))
      fi
      check "consensus, C: heat once, no twin: agree over the windows checked; no node scored, no alert" t_cons_heat
      check "consensus, C++: solver once: agree; no node scored, no alert" t_cons_solver
      check "consensus, Fortran: fortran_f08 once: agree; no node scored, no alert" t_cons_fortran
      check "consensus, nonblocking collectives from C and Fortran, completed in 4 orders: agree; no node scored" t_cons_nbc
      if [ -x /usr/bin/pw.x ]; then
        check "consensus, Quantum ESPRESSO pw.x once: agree; no node scored, no alert" t_cons_pw
      else
        echo "skip consensus on pw.x: quantum-espresso is not installed (deploy/install-deps.sh)"; skip=$((skip+1))
      fi
      if [ -x "$tmp/bin/lockstep-train" ]; then
        check "consensus, lockstep-train once, $cons_train_steps steps: agree; no node scored, no alert" t_cons_train
      else
        echo "skip consensus on lockstep-train: it is not built"; skip=$((skip+1))
      fi
      check "consensus, a bit flipped in rank 2's allreduce (fault shim): DISAGREE, rank 2 on n3; n3 scored, one alert" t_cons_fault
      plugstack "${args/server=http:\/\/127.0.0.1:$dead_port/server=http://127.0.0.1:$lsd_port}"
    else
      fail=$((fail+1)); echo "FAIL tests/apps or liblockstep_mpi.so is not built"
    fi
    py_checks
    if [ -x "$tmp/bin/lockstep-train" ]; then
      check "lockstep twin --change --noise: baseline, change and replicas; lockstep compare: beyond noise" t_experiment
    else
      echo "skip the experiment: lockstep-train is not built"; skip=$((skip+1))
    fi
    if "$lockstep_cli" help 2>&1 | grep -q replay; then
      check "lockstepd down: the job runs, its data arrives later" t_down_then_back
    else
      echo "skip lockstepd down then back: 'lockstep replay' is not built yet"; skip=$((skip+1))
    fi
    check "lockstepd stops with no sanitizer report in its log" t_lsd_clean
  else
    fail=$((fail+1)); echo "FAIL lockstepd did not start"; sed 's/^/     /' "$tmp/err" | head
  fi
else
  echo "skip the lockstepd checks: $lockstepd or $mpi_twin is not built"; skip=$((skip+1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

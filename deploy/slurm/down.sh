#!/usr/bin/env bash
# down.sh - stop a cluster started by deploy/slurm/up.sh: only the pids it recorded, then remove its directory.
#
# usage: deploy/slurm/down.sh [-k] RUN_DIR
#   -k   keep RUN_DIR (logs, configuration) instead of removing it
#
# Cancels the cluster's jobs first (through its own slurm.conf), then sends SIGTERM to
# each pid in RUN_DIR/pids whose command line names RUN_DIR (so a recycled pid is never
# touched), waits up to 5 s (a zombie counts as dead), and SIGKILLs what is left.
set -uo pipefail

keep=0
if [ "${1:-}" = "-k" ]; then keep=1; shift; fi
run=${1:-}
[ -n "$run" ] || { echo "usage: deploy/slurm/down.sh [-k] RUN_DIR" >&2; exit 2; }
[ -d "$run" ] || { echo "slurm-down: $run is not a directory" >&2; exit 1; }
run=$(readlink -f "$run")

# alive PID - 0 when PID runs and is not a zombie.
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
# ours PID - 0 when PID's command line mentions the run directory.
ours() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$run"; }

if [ -f "$run/slurm.conf" ] && [ -f "$run/pid/slurmctld.pid" ] && alive "$(cat "$run/pid/slurmctld.pid")"; then
  SLURM_CONF="$run/slurm.conf" timeout 5 scancel --quiet --full --user=root 2>/dev/null || true
  # Let slurmstepds of cancelled jobs wind down while the daemons still run.
  for _ in $(seq 1 30); do
    n=$(SLURM_CONF="$run/slurm.conf" timeout 2 squeue -h 2>/dev/null | wc -l) || break
    [ "$n" -eq 0 ] && break
    sleep 0.1
  done
fi

pids=()
if [ -f "$run/pids" ]; then
  while read -r p; do
    case $p in '' | *[!0-9]*) continue ;; esac
    if alive "$p" && ours "$p"; then pids+=("$p"); fi
  done <"$run/pids"
fi

# Slurmds first (their steps are gone), slurmctld, munged last: reverse order of start.
for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
for _ in $(seq 1 50); do
  left=0
  for p in "${pids[@]}"; do alive "$p" && left=1; done
  [ $left -eq 0 ] && break
  sleep 0.1
done
for p in "${pids[@]}"; do
  if alive "$p"; then
    echo "slurm-down: pid $p did not stop on SIGTERM; sending SIGKILL" >&2
    kill -KILL "$p" 2>/dev/null || true
  fi
done

rm -f "$run/pids"
if [ $keep -eq 0 ]; then
  rm -rf "$run"
fi
exit 0

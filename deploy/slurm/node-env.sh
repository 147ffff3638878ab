#!/usr/bin/env bash
# node-env.sh - give a node of a cluster started by deploy/slurm/up.sh a property every task there sees.
#
# usage: deploy/slurm/node-env.sh RUN_DIR NODE [--once] NAME=VALUE...   set (replaces what was set)
#        deploy/slurm/node-env.sh RUN_DIR NODE --clear                  remove both kinds
#        deploy/slurm/node-env.sh RUN_DIR NODE                          show what is set
#
# Without --once the variables belong to the node: every task that starts on NODE gets them from the
# cluster's TaskProlog, whoever submitted the job and with whatever environment (a job cannot override
# them). With --once only the next task that starts on NODE gets them, then they are gone (a one-off
# event). Example, a "GPU" on n3 that flips bit 12 of a gradient at step 8 in every job:
#   deploy/slurm/node-env.sh $run n3 LOCKSTEP_FAULT=node=n3,step=8,bit=12
set -euo pipefail
die() { echo "node-env: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: node-env.sh RUN_DIR NODE [--once] NAME=VALUE... | --clear"
run=$1 node=$2
shift 2
[ -f "$run/task-prolog.sh" ] ||
  die "$run has no task-prolog.sh: not a cluster of deploy/slurm/up.sh, or one started before node properties existed"
case $node in '' | *[!A-Za-z0-9._-]*) die "'$node' is not a node name" ;; esac
dir=$run/nodes/$node
[ -d "$dir" ] || die "no node $node in $run (nodes: $(ls "$run/nodes" | tr '\n' ' '))"
if [ $# -eq 0 ]; then
  for f in env once.env; do [ -f "$dir/$f" ] && sed "s/^/$f: /" "$dir/$f"; done
  exit 0
fi
if [ "$1" = --clear ]; then
  rm -f "$dir/env" "$dir/once.env"
  exit 0
fi
file=env
if [ "$1" = --once ]; then file=once.env; shift; fi
[ $# -ge 1 ] || die "nothing to set: give NAME=VALUE"
tmpf=$(mktemp "$dir/.new.XXXXXX")
for kv in "$@"; do
  case $kv in [A-Za-z_]*=*) ;; *) rm -f "$tmpf"; die "'$kv' is not NAME=VALUE" ;; esac
  case ${kv%%=*} in *[!A-Za-z0-9_]*) rm -f "$tmpf"; die "'${kv%%=*}' is not a variable name" ;; esac
  printf '%s\n' "$kv" >>"$tmpf"
done
chmod 644 "$tmpf"
mv "$tmpf" "$dir/$file" # atomic: a task starting now sees the old or the new file, never half of one

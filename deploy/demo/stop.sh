#!/usr/bin/env bash
# stop.sh - stop what deploy/demo/demo.sh started in DEMO_DIR: its lockstepd (by pid) and its local Slurm.
# usage: deploy/demo/stop.sh [DEMO_DIR]      (default build/demo)
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$src/build/demo}
[ -d "$dir" ] || exit 0
dir=$(readlink -f "$dir")
if [ -f "$dir/lockstepd.pid" ]; then
  pid=$(cat "$dir/lockstepd.pid")
  # Only our lockstepd: its command line names this demo directory.
  if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir"; then
    kill -TERM "$pid"
    for _ in $(seq 100); do
      st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || break
      [ "$st" = Z ] && break
      sleep 0.1
    done
  fi
  rm -f "$dir/lockstepd.pid"
fi
[ -f "$dir/slurm/pids" ] && "$src/deploy/slurm/down.sh" "$dir/slurm" >/dev/null 2>&1
echo "demo stopped ($dir)"

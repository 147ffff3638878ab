#!/usr/bin/env bash
# calibrate.sh - calibrate the effect-versus-noise rule on lockstep-train: a deterministic baseline, P replicas with
# --nondeterministic and a few learning-rate changes, traced to files (no server), then bench/compare/calibrate
# (the rule's own object code) on them. Prints JSON lines; docs/compare.md quotes them. Minutes, not a test.
# usage: bench/compare/calibrate.sh [BUILD_DIR] [-p REPLICAS] [-s STEPS] [-k 2,3,4,8] [-t TRIALS] [-n RANKS] [-o DIR]
#   -o DIR  keep the traces in DIR (and reuse the ones already there), to judge them again without running
set -u
build=${1:-build}; shift || true
replicas=200 steps=100 ks=2,3,4,6,8 trials=20000 ranks=2 keep=
while getopts "p:s:k:t:n:o:" o; do
  case $o in p) replicas=$OPTARG ;; s) steps=$OPTARG ;; k) ks=$OPTARG ;; t) trials=$OPTARG ;; n) ranks=$OPTARG ;;
    o) keep=$OPTARG ;; *) exit 2 ;; esac
done
train=$build/bin/lockstep-train cal=$build/bench/compare/calibrate
for f in "$train" "$cal"; do [ -x "$f" ] || { echo "$f is missing; run make first" >&2; exit 1; }; done
if [ -n "$keep" ]; then
  root=$keep; mkdir -p "$root"
else
  root=$(mktemp -d /tmp/ls-calibrate-XXXXXX)
  trap 'rm -rf "$root"' EXIT
fi
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
unset LOCKSTEP_SERVER LOCKSTEP_TWIN_GROUP
run() { # run DIR [ARGS...]: one traced run, metrics only (kept from an earlier call with -o)
  local dir=$1; shift
  [ -n "$keep" ] && [ -d "$root/$dir" ] && return 0
  LOCKSTEP_TRACE=metrics LOCKSTEP_TRACE_DIR=$root/$dir LOCKSTEP_RUN_ID=$dir \
    mpirun --allow-run-as-root -np "$ranks" "$train" --quiet --steps "$steps" --hidden 32 "$@" >/dev/null 2>>"$root/err" ||
    { echo "run $dir failed:" >&2; tail -5 "$root/err" >&2; exit 1; }
}
t0=$(date +%s)
run base
for i in $(seq -w 1 "$replicas"); do run "noise-$i" --nondeterministic; done
for lr in 1.0001e-3 1.001e-3 1.01e-3 1.1e-3 2e-3; do run "change-lr-$lr" --lr "$lr"; done
echo "{\"bench\": \"compare.calibration.runs\", \"replicas\": $replicas, \"steps\": $steps, \"ranks\": $ranks, \"seconds\": $(( $(date +%s) - t0 ))}"
"$cal" "$root" --k "$ks" --trials "$trials"

#!/usr/bin/env bash
# run.sh - kernels benchmarks: lockstep-train step time with and without fingerprinting (CPU path, and the
# CUDA path where a GPU is present), then the GPU kernel figures. One JSON line per figure.
# usage: bench/kernels/run.sh [BUILD_DIR]
set -u
build=${1:-build}
train=$build/bin/lockstep-train
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
unset LOCKSTEP_FAULT LOCKSTEP_TRACE LOCKSTEP_MODE
tmp=$(mktemp -d /tmp/ls-bench-kernels-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# once LAUNCHER... : "median_step_ms record_ms" of one run, from the trainer's --json line.
once() {
  rm -rf "$tmp/trace"
  local line
  line=$("$@" --quiet --json | sed -n 's/.*"step_ms_median":\([0-9.]*\),"record_ms":\([0-9.]*\).*/\1 \2/p')
  [ -n "$line" ] || { echo "bench/kernels: a run failed: $*" >&2; return 1; }
  echo "$line"
}

# lower A B: the one of two "median record" pairs with the lower median.
lower() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (a == "" || y[1] < x[1]) ? b : a }'; }

# overhead NAME LAUNCH...: step time with lockstep off, at metric+collective level (the default trace
# level) and at module level (every layer's gradient and parameters too), in 3 interleaved rounds (the
# best round of each, so a noisy neighbour hurts all three alike); `record` is the time spent in the ls_*
# calls themselves, the part of the overhead that the noise of a shared machine cannot hide.
overhead() {
  local name=$1; shift
  local off="" col="" mod="" r
  for round in 1 2 3; do
    r=$(LOCKSTEP_MODE=off once "$@") || return 1; off=$(lower "$off" "$r")
    r=$(LOCKSTEP_TRACE=collectives LOCKSTEP_TRACE_DIR=$tmp/trace once "$@") || return 1; col=$(lower "$col" "$r")
    r=$(LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/trace once "$@") || return 1; mod=$(lower "$mod" "$r")
  done
  awk -v n="$name" -v off="$off" -v col="$col" -v mod="$mod" -v args="$*" 'BEGIN {
    split(off, o, " "); split(col, c, " "); split(mod, m, " ")
    printf "{\"bench\":\"kernels.%s\",\"step_ms_off\":%.4f,", n, o[1]
    printf "\"step_ms_metric_collective\":%.4f,\"overhead_metric_collective_pct\":%.2f,", c[1], 100 * (c[1] - o[1]) / o[1]
    printf "\"record_ms_metric_collective\":%.4f,\"record_metric_collective_pct\":%.3f,", c[2], 100 * c[2] / o[1]
    printf "\"step_ms_module\":%.4f,\"overhead_module_pct\":%.2f,", m[1], 100 * (m[1] - o[1]) / o[1]
    printf "\"record_ms_module\":%.4f,\"record_module_pct\":%.3f,", m[2], 100 * m[2] / o[1]
    printf "\"target_overhead_pct_max\":0.5,\"command\":\"%s\"}\n", args }'
}

rc=0
overhead train_cpu_overhead mpirun --allow-run-as-root --oversubscribe -np 2 "$train" --steps 60 --hidden 256 \
  --batch 64 || rc=1

if [ -x "$build/bench/kernels/gpu_bench" ] && nvidia-smi -L >/dev/null 2>&1; then
  "$build/bench/kernels/gpu_bench" || rc=1
  if [ -x "$build/bin/lockstep-train-cuda" ]; then
    overhead train_cuda_overhead mpirun --allow-run-as-root -np 1 "$build/bin/lockstep-train-cuda" --steps 60 \
      --hidden 1024 --batch 256 || rc=1
    # a longer step (its naive matrix kernels take tens of ms): the per-record cost is fixed, its share smaller
    overhead train_cuda_overhead_long_step mpirun --allow-run-as-root -np 1 "$build/bin/lockstep-train-cuda" \
      --steps 30 --hidden 2048 --batch 512 || rc=1
  fi
else
  echo '{"bench":"kernels.gpu","skipped":"no GPU here (nvidia-smi -L fails) or CUDA=0"}'
fi
exit $rc

#!/usr/bin/env bash
# gpu-check.sh - every GPU check of the kernels part in one run, for a machine with a GPU: build, device LSFP-1
# against the CPU (vectors, 1,000 random buffers, every alignment), ls_tensor_device against ls_tensor, the
# reductions' determinism, GPU twins, nondeterminism, a fault, a bit-exact resume with its restored state block
# (ls_state_device) verified and a forgetful loader named, the agent's NCCL wrappers
# (tests/agent/gpu-check-nccl.sh) and the Python binding's device tensors (tests/python/gpu-check.sh), then the
# benchmarks: every GPU check of the project.
# Prints JSON lines (also to $OUT/gpu-check.jsonl when $OUT is set) and ends with "N passed, N failed".
# usage: kernels/gpu-check.sh [BUILD_DIR]      (from the repository root; about 3 minutes on one H200)
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
jsonl=${OUT:+$OUT/gpu-check.jsonl}
tmp=$(mktemp -d /tmp/ls-gpu-check-XXXXXX)
# every log of the run comes back with $OUT (the traces stay behind)
keep_logs() { [ -n "${OUT:-}" ] && (cd "$tmp" && tar czf "$OUT/gpu-check-logs.tgz" $(find . -maxdepth 1 -type f)); }
trap 'keep_logs; rm -rf "$tmp"' EXIT
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset LOCKSTEP_FAULT LOCKSTEP_TRACE LOCKSTEP_TRACE_DIR LOCKSTEP_MODE LOCKSTEP_SERVER
# The deterministic runtime lockstep's det mode sets for NCCL.
export NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0
export NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4 CUBLAS_WORKSPACE_CONFIG=:4096:8
pass=0; fail=0

emit() { echo "$1"; [ -n "$jsonl" ] && echo "$1" >>"$jsonl"; return 0; }
result() { # result NAME OK(0|1) DETAIL-JSON-FIELDS
  if [ "$2" = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); fi
  emit "{\"check\":\"$1\",\"ok\":$([ "$2" = 1 ] && echo true || echo false)${3:+,$3}}"
}

emit "{\"check\":\"device\",\"gpus\":\"$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tr '\n"' ';_')\"}"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || { result gpu_present 0 '"detail":"nvidia-smi -L lists no GPU"'; echo "0 passed, 1 failed"; exit 1; }

# --- build; a build carried by kernels/gpu-carry.sh (it holds PREBUILT) is used as it is
targets="$B/kernels/gpu_check $B/bin/lockstep-train-cuda $B/bin/lockstep-train $B/bin/lockstep $B/bench/kernels/gpu_bench
  $B/lib/liblockstep_nccl.so $B/tests/agent/nccl_allreduce $B/tests/agent/cons_digests $B/lib/liblockstep_cuda.so
  $B/tests/kernels/tensor_device_test"
t0=$(date +%s)
if [ -f "$B/PREBUILT" ]; then brc=prebuilt; else make -j"$(nproc)" CUDA=1 $targets >"$tmp/build.log" 2>&1; brc=$?; fi
ok=1; for t in $targets; do [ -x "$t" ] || ok=0; done
result build $ok "\"make_rc\":\"$brc\",\"seconds\":$(( $(date +%s) - t0 ))"
[ $ok = 1 ] || { tail -30 "$tmp/build.log" >&2; echo "$pass passed, $fail failed"; exit 1; }

# --- the kernels against the CPU, the reductions' determinism (gpu_check prints its own JSON lines)
LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/td LOCKSTEP_RANK=0 timeout 300 \
  "$B/kernels/gpu_check" tests/data/lsfp1-vectors.json 1000 >"$tmp/gc.out" 2>"$tmp/gc.err"; gcrc=$?
while read -r l; do
  emit "$l"
  case "$l" in *'"ok":true'*) pass=$((pass+1)) ;; *) fail=$((fail+1)) ;; esac
done <"$tmp/gc.out"
[ $gcrc -eq 0 ] || { result gpu_check_exit 0 "\"rc\":$gcrc"; sed 's/^/  /' "$tmp/gc.err" | tail -20 >&2; }
# the device record and the host record of the same bytes carry the same fingerprint
"$B/bin/lockstep" dump "$tmp/td/rank-00000.lstrace" >"$tmp/dump" 2>&1
python3 - "$tmp/dump" >"$tmp/py" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{') and '"name"' in l]
fps = {(r['name'], r.get('occurrence', 0)): r.get('fp') for r in recs}
host, dev, col = fps.get(('x', 0)), fps.get(('x', 1)), fps.get(('x.collective', 0))
print(json.dumps({"host": host, "device": dev, "collective": col}))
sys.exit(0 if host and host == dev == col else 1)
PY
result ls_tensor_device_matches_ls_tensor $([ $? -eq 0 ] && echo 1 || echo 0) "\"fps\":$(tail -1 "$tmp/py" | tr -d '\n' | sed 's/^[^{].*/null/')"
# the kernels tier's device-record test with a GPU: a tensor, a state entry and a replica recorded from the device
# carry the fingerprints of their host copies
"$B/tests/kernels/tensor_device_test" "$tmp/tdt" >"$tmp/tdt.out" 2>"$tmp/tdt.err"; rc=$?
pairs=$("$B/bin/lockstep" dump "$tmp/tdt/rank-00000.lstrace" 2>/dev/null | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin]
print(" ".join(n for n in ("x", "s", "r") if len({x["fp"] for x in recs if x["name"] == n}) == 1
               and sum(x["name"] == n for x in recs) == 2))')
result device_records_match_host $([ $rc = 0 ] && grep -q '^gpu 1' "$tmp/tdt.out" && [ "$pairs" = "x s r" ] &&
  echo 1 || echo 0) "\"rc\":$rc,\"pairs\":\"$pairs\""

# --- GPU twins, nondeterminism, a fault, resume (one rank per GPU, at most 2)
np=$(( ngpu >= 2 ? 2 : 1 ))
train() { # train DIR [ARGS...]
  local dir=$1; shift
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/$dir timeout 120 mpirun --allow-run-as-root -np $np \
    "$B/bin/lockstep-train-cuda" --quiet --steps 16 --hidden 256 --batch 64 "$@" >>"$tmp/train.log" 2>&1
}
diffrc() { "$B/bin/lockstep" diff --json "$@" >"$tmp/diff.json" 2>>"$tmp/train.log"; echo $?; }
first() { python3 -c "import json; d=json.load(open('$tmp/diff.json')); print(json.dumps(d['first_step']))" 2>/dev/null; }

train d1 && train d2; rc=$(diffrc "$tmp/d1" "$tmp/d2")
result gpu_twins_bit_identical $([ "$rc" = 0 ] && echo 1 || echo 0) "\"ranks\":$np,\"diff_rc\":$rc"
# allreduce.out carries every rank's allreduce.in fingerprint, as on the CPU path
ins=$("$B/bin/lockstep" dump "$tmp/d1/rank-00000.lstrace" 2>/dev/null | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin]
ins = {(r["rank"], r["step"]): r["fp"] for r in recs if r["name"] == "allreduce.in"}
outs = [r for r in recs if r["name"] == "allreduce.out"]
ok = outs and all(r.get("inputs") and (len(r["inputs"]) > 1 or '"$np"' == 1) and r["inputs"][0] == ins.get((0, r["step"])) for r in outs)
print(len(outs) if ok else 0)')
result gpu_allreduce_out_has_inputs $([ "${ins:-0}" -gt 0 ] && echo 1 || echo 0) "\"records\":${ins:-0}"
train n1 --nondeterministic && train n2 --nondeterministic; rc=$(diffrc "$tmp/n1" "$tmp/n2")
result gpu_nondeterministic_diverges $([ "$rc" = 1 ] && echo 1 || echo 0) "\"diff_rc\":$rc,\"first_step\":$(first || echo null)"
train atw1 --reduce atomic; rc=$(diffrc "$tmp/d1" "$tmp/atw1")
result gpu_atomic_differs_from_det $([ "$rc" = 1 ] && echo 1 || echo 0) "\"diff_rc\":$rc"
train f1 --inject-fault=7:0; rc=$(diffrc "$tmp/d1" "$tmp/f1"); fs=$(first || echo null)
result gpu_fault_at_step_7 $([ "$rc" = 1 ] && [ "$fs" = 7 ] && echo 1 || echo 0) "\"diff_rc\":$rc,\"first_step\":$fs"
train full --checkpoint-every 4 --checkpoint-dir "$tmp/ckf" && train part --steps 6 --checkpoint-every 4 \
  --checkpoint-dir "$tmp/ckr" && train res --resume "$tmp/ckr" --checkpoint-every 4
rc=$(diffrc --overlap "$tmp/full" "$tmp/res")
lsbin=$(realpath "$B/bin/lockstep")
a=$(cd "$tmp/ckf/step-00000016" 2>/dev/null && "$lsbin" fp rank-*.ckpt | tr '\n' ' ')
b=$(cd "$tmp/ckr/step-00000016" 2>/dev/null && "$lsbin" fp rank-*.ckpt | tr '\n' ' ')
result gpu_resume_bit_exact $([ "$rc" = 0 ] && [ -n "$a" ] && [ "$a" = "$b" ] && echo 1 || echo 0) \
  "\"diff_rc\":$rc,\"final_checkpoints_equal\":$([ -n "$a" ] && [ "$a" = "$b" ] && echo true || echo false)"
# the restored block (ls_state_device over the device copies) was verified; a loader that forgets the Adam moments
# on the way to the GPU is named by its entry at the checkpoint's step
ver=$(python3 -c "import json; d=json.load(open('$tmp/diff.json')); print(all(r.get('restores', {}).get('verified') == 1 for r in d['ranks']))" 2>/dev/null)
mkdir -p "$tmp/ck4" && cp -r "$tmp/ckf/step-00000004" "$tmp/ck4/" 2>/dev/null
train resf --resume "$tmp/ck4" --resume-fault moments; rc=$(diffrc --overlap "$tmp/full" "$tmp/resf")
ent=$(python3 -c "import json; d=json.load(open('$tmp/diff.json')); print(sorted({r['restore']['entry'] for r in d['ranks'] if r.get('kind') == 'restore'}))" 2>/dev/null)
result gpu_restore_check $([ "$ver" = True ] && [ "$rc" = 1 ] && [ "$(first)" = 4 ] && [ "$ent" = "['adam.m']" ] && echo 1 || echo 0) \
  "\"verified\":\"$ver\",\"diff_rc\":$rc,\"entries\":\"$ent\""
[ "$fail" -eq 0 ] || tail -40 "$tmp/train.log" >&2

# --- the other parts' GPU checks, each a script ending "N passed, N failed": the agent's NCCL wrappers (an
# unmodified NCCL program under LD_PRELOAD) and the Python binding's device tensors
tier() { # tier NAME SCRIPT
  timeout 180 "$2" "$B" >"$tmp/$1.out" 2>&1
  local p f
  p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$tmp/$1.out" | tail -1)
  f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$tmp/$1.out" | tail -1)
  result "$1" $([ "${p:-0}" -gt 0 ] && [ "${f:-1}" = 0 ] && echo 1 || echo 0) "\"passed\":${p:-0},\"failed\":${f:-null}"
  [ "${f:-1}" = 0 ] || sed 's/^/  /' "$tmp/$1.out" | tail -20 >&2
}
tier agent_nccl_wrappers tests/agent/gpu-check-nccl.sh
tier python_device_tensors tests/python/gpu-check.sh

# --- benchmarks: CPU and CUDA trainer overhead, device LSFP-1 vs copy, det vs atomic reductions
timeout 400 bench/kernels/run.sh "$B" >"$tmp/bench.out" 2>"$tmp/bench.err"; rc=$?
while read -r l; do emit "$l"; done <"$tmp/bench.out"
result benchmarks $([ $rc -eq 0 ] && echo 1 || echo 0) "\"rc\":$rc"
[ $rc -eq 0 ] || tail -20 "$tmp/bench.err" >&2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

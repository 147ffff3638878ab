#!/usr/bin/env bash
# run.sh - the kernels tier: lockstep-train twins, nondeterminism, injected faults and bit-exact resume,
# checked with `lockstep diff` and `lockstep fp` on real MPI runs over loopback.
# usage: tests/kernels/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=${1:-build}
ls=$build/bin/lockstep
train=$build/bin/lockstep-train
tmp=$(mktemp -d /tmp/ls-kernels-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

# MPI stays on loopback, always.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
# Open MPI leaks by design: LeakSanitizer would fail every SAN=1 run at exit; CUDA needs the shadow gap.
export ASAN_OPTIONS="detect_leaks=0:protect_shadow_gap=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
unset LOCKSTEP_FAULT LOCKSTEP_TRACE LOCKSTEP_TRACE_DIR LOCKSTEP_MODE

check() { # check NAME FUNCTION: the function must succeed
  local name=$1; shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | tail -25; fi
}

run() { # run DIR NP [ARGS...]: a traced lockstep-train run into $tmp/DIR
  local dir=$1 np=$2; shift 2
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/$dir LOCKSTEP_RUN_ID=$dir \
    mpirun --allow-run-as-root --oversubscribe -np "$np" "$train" --quiet "$@"
}

diffjson() { # diffjson A B [--overlap]: `lockstep diff --json` into $tmp/diff.json; echo its exit status
  "$ls" diff --json "$@" >"$tmp/diff.json" 2>"$tmp/diff.err"
  echo $?
}

# jget EXPR: evaluate a Python expression over the diff JSON (`d`).
jget() { python3 -c "import json,sys; d=json.load(open('$tmp/diff.json')); print($1)"; }

# first_div RANK: "STEP NAME" of that rank's first divergence.
first_div() {
  jget "' '.join(str(x) for r in d['ranks'] if r['rank']==$1 for x in (r.get('step'), (r.get('a') or r.get('b') or {}).get('name')))"
}

t_twins_np2() {
  run det2a 2 --steps 12 && run det2b 2 --steps 12 || return 1
  [ "$(diffjson "$tmp/det2a" "$tmp/det2b")" = 0 ] || { cat "$tmp/diff.json"; return 1; }
  [ "$(jget "d['match']")" = True ] && [ "$(jget "len(d['ranks'])")" = 2 ] &&
    [ "$(jget "min(r['compared'] for r in d['ranks'])")" -ge 200 ]
}

t_twins_np4() {
  run det4a 4 --steps 6 --hidden 32 && run det4b 4 --steps 6 --hidden 32 || return 1
  [ "$(diffjson "$tmp/det4a" "$tmp/det4b")" = 0 ] && [ "$(jget "len(d['ranks'])")" = 4 ]
}

t_seed_changes_everything() { # a different seed must not match (the diff can fail)
  run seed2 2 --steps 3 --seed 2 || return 1
  [ "$(diffjson "$tmp/det2a" "$tmp/seed2" )" = 1 ] && [ "$(jget "d['first_step']")" = 1 ]
}

# effective_orders LOG: one line per step, "STEP o1 o2 ...", with the first two summands sorted
# (a + b == b + a exactly, so only the order from the third summand on can change the bits).
effective_orders() {
  awk '{ a=$2; b=$3; if (a+0 > b+0) { t=a; a=b; b=t }; printf "%s %s %s", $1, a, b;
         for (i = 4; i <= NF; i++) printf " %s", $i; printf "\n" }' "$1"
}

t_nondet_diverges() {
  local np
  for np in 2 3; do
    run nd${np}a $np --steps 10 --nondeterministic --order-log "$tmp/nd${np}a.order" &&
      run nd${np}b $np --steps 10 --nondeterministic --order-log "$tmp/nd${np}b.order" || return 1
    # every piece of every rank is summed exactly once per step
    awk -v n=$((np * 2)) 'NF != n + 1 { exit 1 } { delete s; for (i = 2; i <= NF; i++) s[$i]++;
         if (length(s) != n) exit 1 }' "$tmp/nd${np}a.order" || { echo "bad order log"; return 1; }
    effective_orders "$tmp/nd${np}a.order" >"$tmp/ea"; effective_orders "$tmp/nd${np}b.order" >"$tmp/eb"
    local want
    want=$(paste -d'|' "$tmp/ea" "$tmp/eb" | awk -F'|' '$1 != $2 { split($1, f, " "); print f[1]; exit }')
    [ -n "$want" ] || { echo "np=$np: both runs summed in the same order at every step"; return 1; }
    [ "$(diffjson "$tmp/nd${np}a" "$tmp/nd${np}b")" = 1 ] || { echo "np=$np: no divergence"; return 1; }
    local got
    got=$(jget "d['first_step']")
    [ "$got" = "$want" ] || { echo "np=$np: diff says step $got, orders first differ at step $want"; return 1; }
    # every rank receives the same sum, so each one diverges there, at the collective's output
    for r in $(seq 0 $((np - 1))); do
      [ "$(first_div $r)" = "$want allreduce.out" ] || { echo "rank $r: $(first_div $r)"; return 1; }
    done
  done
}

t_nondet_not_in_det_mode() { # the deterministic twins above must hold for np=3 as well
  run det3a 3 --steps 8 && run det3b 3 --steps 8 || return 1
  [ "$(diffjson "$tmp/det3a" "$tmp/det3b")" = 0 ]
}

t_fault_flag() {
  run fault 3 --steps 8 --inject-fault=5:1 2>"$tmp/fault.err" || return 1
  grep -q 'injected fault: rank 1 .* step 5 bit 12' "$tmp/fault.err" || { cat "$tmp/fault.err"; return 1; }
  [ "$(diffjson "$tmp/det3a" "$tmp/fault")" = 1 ] && [ "$(jget "d['first_step']")" = 5 ] || return 1
  # the faulty rank is the one whose collective input differs; the others see it in the output
  [ "$(first_div 1)" = "5 allreduce.in" ] && [ "$(first_div 0)" = "5 allreduce.out" ] &&
    [ "$(first_div 2)" = "5 allreduce.out" ]
}

t_fault_flag_bit() {
  run faultb 2 --steps 6 --inject-fault=3:0:30 2>"$tmp/fault.err" || return 1
  grep -q 'rank 0 .* step 3 bit 30' "$tmp/fault.err" && run det6 2 --steps 6 || return 1
  [ "$(diffjson "$tmp/det6" "$tmp/faultb")" = 1 ] && [ "$(first_div 0)" = "3 allreduce.in" ] &&
    [ "$(first_div 1)" = "3 allreduce.out" ]
}

# The fault follows a node: rank 1 runs on "n3" (SLURMD_NODENAME), rank 0 on "n1".
run_nodes() { # run_nodes DIR [ARGS...]
  local dir=$1; shift
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/$dir mpirun --allow-run-as-root --oversubscribe \
    -np 1 -x SLURMD_NODENAME=n1 "$train" --quiet "$@" : -np 1 -x SLURMD_NODENAME=n3 "$train" --quiet "$@"
}

t_fault_env_node() {
  LOCKSTEP_FAULT=node=n3,step=4,bit=12 run_nodes fenv --steps 6 2>"$tmp/fault.err" || return 1
  grep -q 'rank 1 node n3 step 4 bit 12' "$tmp/fault.err" || { cat "$tmp/fault.err"; return 1; }
  [ "$(diffjson "$tmp/det6" "$tmp/fenv")" = 1 ] && [ "$(first_div 1)" = "4 allreduce.in" ] &&
    [ "$(first_div 0)" = "4 allreduce.out" ]
}

t_fault_env_other_node() { # a fault on a node that runs no rank changes nothing
  LOCKSTEP_FAULT=node=n7,step=4 run_nodes fnone --steps 6 2>"$tmp/fault.err" || return 1
  ! grep -q 'injected' "$tmp/fault.err" && [ "$(diffjson "$tmp/det6" "$tmp/fnone")" = 0 ]
}

t_fault_env_hostname() { # without SLURMD_NODENAME the host name is the node; rank= narrows it to one rank
  LOCKSTEP_FAULT=node=$(uname -n),rank=1,step=2,bit=3 run fhost 2 --steps 6 2>"$tmp/fault.err" || return 1
  [ "$(grep -c 'injected fault' "$tmp/fault.err")" = 1 ] && grep -q "rank 1 node $(uname -n) step 2 bit 3" \
    "$tmp/fault.err" || { cat "$tmp/fault.err"; return 1; }
  [ "$(diffjson "$tmp/det6" "$tmp/fhost")" = 1 ] && [ "$(first_div 1)" = "2 allreduce.in" ] &&
    [ "$(first_div 0)" = "2 allreduce.out" ]
}

t_fault_env_invalid() {
  LOCKSTEP_FAULT=node=n3 mpirun --allow-run-as-root -np 1 "$train" --steps 1 2>"$tmp/e"
  [ $? -ne 0 ] && grep -q 'step=N is required' "$tmp/e" || return 1
  mpirun --allow-run-as-root -np 1 "$train" --inject-fault=x:1 2>"$tmp/e"
  [ $? -ne 0 ] && grep -q 'STEP:RANK' "$tmp/e"
}

t_resume_bit_exact() {
  run full 2 --steps 12 --checkpoint-every 4 --checkpoint-dir "$tmp/ck_full" &&
    run part 2 --steps 6 --checkpoint-every 4 --checkpoint-dir "$tmp/ck_res" || return 1
  [ -f "$tmp/ck_res/step-00000004/COMPLETE" ] && [ ! -e "$tmp/ck_res/step-00000008" ] || return 1
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/res mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$train" --steps 12 --checkpoint-every 4 --resume "$tmp/ck_res" >"$tmp/res.out" || return 1
  grep -q 'resumed from .* at step 4' "$tmp/res.out" || return 1
  [ "$(diffjson --overlap "$tmp/full" "$tmp/res")" = 0 ] || { cat "$tmp/diff.json"; return 1; }
  [ "$(jget "d['overlap']['from'], d['overlap']['to']")" = "5 12" ] || return 1
  # the resumed run holds steps 5..12 only: the compared records are all of them (its state blocks aside)
  [ "$(jget "sum(r['compared'] for r in d['ranks'])")" = "$(jget "d['b']['records'] - d['b']['state_entries']")" ] ||
    return 1
  # its restored block of step 4 was checked on each rank against the saved one of the uninterrupted run
  [ "$(jget "[r['restores'] for r in d['ranks']]")" = \
    "[{'checked': 1, 'verified': 1, 'unverified': 0}, {'checked': 1, 'verified': 1, 'unverified': 0}]" ] || return 1
  local a b
  local lsbin; lsbin=$(realpath "$ls")
  a=$(cd "$tmp/ck_full/step-00000012" && "$lsbin" fp rank-*.ckpt) || return 1
  b=$(cd "$tmp/ck_res/step-00000012" && "$lsbin" fp rank-*.ckpt) || return 1
  [ -n "$a" ] && [ "$a" = "$b" ] || { echo "checkpoints differ:"; echo "$a"; echo "$b"; return 1; }
  # the checkpoint at step 8 was written once by each run: they agree too
  cmp "$tmp/ck_full/step-00000008/rank-00001.ckpt" "$tmp/ck_res/step-00000008/rank-00001.ckpt"
}

t_resume_detects_change() { # a resumed run that does differ (a fault at step 7) is caught at step 7
  # ck_full's newest checkpoint is step 12: resume from a copy that holds step 4 only
  mkdir -p "$tmp/ck4" && cp -r "$tmp/ck_full/step-00000004" "$tmp/ck4/" || return 1
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/res7 mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$train" --quiet --steps 12 --resume "$tmp/ck4" --inject-fault=7:0 2>/dev/null || return 1
  [ "$(diffjson --overlap "$tmp/full" "$tmp/res7")" = 1 ] && [ "$(jget "d['first_step']")" = 7 ]
}

t_resume_names_loader_faults() { # a loader that forgets part of the state is named at the checkpoint's step
  local f entry
  for f in moments:adam.m rng:rng_ctr data:data_pos; do
    entry=${f#*:}; f=${f%%:*}
    LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/rf_$f mpirun --allow-run-as-root --oversubscribe -np 2 \
      "$train" --quiet --steps 12 --resume "$tmp/ck4" --resume-fault "$f" 2>/dev/null || return 1
    [ "$(diffjson --overlap "$tmp/full" "$tmp/rf_$f")" = 1 ] || { cat "$tmp/diff.json"; return 1; }
    [ "$(jget "d['first_step']")" = 4 ] &&
      [ "$(jget "sorted((r['kind'], r['step'], r['restore']['entry'], r['restore']['difference']) for r in d['ranks'])")" = \
        "[('restore', 4, '$entry', 'content'), ('restore', 4, '$entry', 'content')]" ] || { cat "$tmp/diff.json"; return 1; }
  done
  "$train" --resume-fault moments 2>"$tmp/e"; [ $? -ne 0 ] && grep -q 'needs --resume' "$tmp/e"
}

t_resume_named_step() { # --resume-step N, or --resume at one step directory: exactly that checkpoint (a replay's)
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/res4 mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$train" --steps 9 --resume "$tmp/ck_full" --resume-step 4 >"$tmp/r4.out" || return 1
  grep -q "resumed from $tmp/ck_full at step 4" "$tmp/r4.out" || { cat "$tmp/r4.out"; return 1; }
  [ "$(diffjson --overlap "$tmp/full" "$tmp/res4")" = 0 ] && [ "$(jget "d['overlap']['from'], d['overlap']['to']")" = "5 9" ] ||
    return 1
  LOCKSTEP_TRACE=modules LOCKSTEP_TRACE_DIR=$tmp/res8 mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$train" --steps 10 --resume "$tmp/ck_full/step-00000008" >"$tmp/r8.out" || return 1
  grep -q "resumed from .* at step 8" "$tmp/r8.out" || { cat "$tmp/r8.out"; return 1; }
  [ "$(diffjson --overlap "$tmp/full" "$tmp/res8")" = 0 ] && [ "$(jget "d['overlap']['from'], d['overlap']['to']")" = "9 10" ] ||
    return 1
  mpirun --allow-run-as-root --oversubscribe -np 2 "$train" --quiet --steps 9 --resume "$tmp/ck_full" --resume-step 5 2>"$tmp/e"
  [ $? -ne 0 ] && grep -q 'no complete checkpoint of step 5' "$tmp/e"
}

t_resume_rejects_corrupt() {
  mkdir -p "$tmp/ckbad" && cp -r "$tmp/ck_full/step-00000004" "$tmp/ckbad/" || return 1
  printf '\x01' | dd of="$tmp/ckbad/step-00000004/rank-00001.ckpt" bs=1 seek=500 conv=notrunc 2>/dev/null
  mpirun --allow-run-as-root --oversubscribe -np 2 "$train" --quiet --steps 6 --resume "$tmp/ckbad" 2>"$tmp/e"
  [ $? -ne 0 ] && grep -q 'CRC32C mismatch' "$tmp/e" || { cat "$tmp/e"; return 1; }
  mpirun --allow-run-as-root --oversubscribe -np 3 "$train" --quiet --steps 6 --resume "$tmp/ck4" 2>"$tmp/e"
  [ $? -ne 0 ] && grep -q 'different configuration' "$tmp/e"
}

t_metrics_recorded() { # loss and grad_norm are metrics with exact values; tensors at their levels
  "$ls" dump "$tmp/det2a/rank-00001.lstrace" >"$tmp/dump" || return 1
  python3 - "$tmp/dump" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{') and '"name"' in l]
s3 = [r for r in recs if r.get('step') == 3]
names = [r['name'] for r in s3]
assert names[:3] == ['loss', 'allreduce.in', 'allreduce.out'], names[:3]
assert 'grad_norm' in names and 'layer1.weight.grad' in names and 'embedding.weight' in names, names
assert len(names) == 18, len(names)
PY
}

# --- CUDA builds (CUDA=1): the parts that run without a GPU
t_tensor_device_host() {
  "$build/tests/kernels/tensor_device_test" "$tmp/td" >"$tmp/td.out" 2>"$tmp/td.err" || { cat "$tmp/td.out"; return 1; }
  # a NULL device pointer is refused before anything is recorded
  if "$ls" dump "$tmp/td/rank-00000.lstrace" | grep -q '"name":"null"'; then echo "a NULL tensor was recorded"; return 1; fi
  grep -q '^gpu 1' "$tmp/td.out" || return 0
  # with a GPU: the device record and the host record of the same bytes carry the same fingerprint
  "$ls" dump "$tmp/td/rank-00000.lstrace" | python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin]
for n, state in (('x', None), ('s', 'saved'), ('r', None)):
    r = [x for x in recs if x['name'] == n]
    assert len(r) == 2 and r[0]['fp'] == r[1]['fp'] and all(x.get('state') == state for x in r), r"
}

t_cuda_abi() {
  local want got
  want=$(sed -n '/global:/,/local:/p' kernels/liblockstep_cuda.map | grep -Eo '^[[:space:]]*[a-z_]+;' | tr -d ' ;' | sort)
  got=$(nm -D --defined-only "$build/lib/liblockstep_cuda.so" | awk '$2 == "T" {print $3}' | sed 's/@.*//' | sort)
  [ -n "$want" ] && [ "$want" = "$got" ] || { echo "exports: $got; map: $want"; return 1; }
  local lang
  for lang in c c++; do # the header alone with LOCKSTEP_CUDA, and after the CUDA runtime's own header
    printf '#define LOCKSTEP_CUDA 1\n#include "lockstep.h"\n' |
      ${CC:-cc} -x $lang -Iinclude -fsyntax-only -Wall -Wextra -Werror - || return 1
    printf '#include <cuda_runtime_api.h>\n#define LOCKSTEP_CUDA 1\n#include "lockstep.h"\n' |
      ${CC:-cc} -x $lang -Iinclude -isystem "${CUDA_HOME:-/usr/local/cuda}/include" -fsyntax-only -Wall -Wextra -Werror - || return 1
  done
}

if [ -x "$build/tests/kernels/tensor_device_test" ]; then
  check "ls_tensor_device, ls_state_device: filtered, misuse, no GPU, off" t_tensor_device_host
  check "liblockstep_cuda.so exports its map; header with LOCKSTEP_CUDA" t_cuda_abi
fi
check "deterministic twins, 2 ranks: bit-identical"          t_twins_np2
check "deterministic twins, 4 ranks: bit-identical"          t_twins_np4
check "another seed diverges at step 1"                      t_seed_changes_everything
check "deterministic twins, 3 ranks: bit-identical"          t_nondet_not_in_det_mode
check "--nondeterministic twins diverge where orders differ" t_nondet_diverges
check "--inject-fault=5:1 diverges at step 5 on rank 1"       t_fault_flag
check "--inject-fault=3:0:30 flips bit 30 on rank 0"          t_fault_flag_bit
check "LOCKSTEP_FAULT=node=n3 follows the node"              t_fault_env_node
check "LOCKSTEP_FAULT on another node changes nothing"        t_fault_env_other_node
check "LOCKSTEP_FAULT=node=HOSTNAME,rank=1 hits rank 1 only"  t_fault_env_hostname
check "invalid fault specifications are refused"             t_fault_env_invalid
check "resume at step 4 matches the uninterrupted run"        t_resume_bit_exact
check "a changed resumed run is caught at its step"           t_resume_detects_change
check "a loader that forgets state is named by its entry"     t_resume_names_loader_faults
check "--resume-step N or a step directory: that checkpoint"   t_resume_named_step
check "corrupt or mismatched checkpoints are refused"         t_resume_rejects_corrupt
check "records: loss, collectives, per-layer tensors"         t_metrics_recorded

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# run.sh - the compare tier: real lockstep-train runs (MPI over loopback) streamed by the agent into a real lockstepd
# (embedded PostgreSQL), then `lockstep compare` and GET /api/v1/compare on them: baseline twins, noise replicas
# with --nondeterministic, a further replica (within noise), a learning-rate change (beyond noise, first effect at
# the first step after the first update), a change that is bit-identical, and bad inputs as clear errors.
# usage: tests/compare/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=${1:-build}
build=$(cd "$build" && pwd)
ls=$build/bin/lockstep
train=$build/bin/lockstep-train
tmp=$(mktemp -d /tmp/ls-compare-XXXXXX)
chmod 755 "$tmp" # the embedded PostgreSQL runs as postgres when we are root
pid=
pass=0; fail=0

cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 150); do
      st=$(ps -o stat= -p "$pid" 2>/dev/null) || break
      case $st in Z*) break ;; esac
      sleep 0.1
    done
  fi
  if [ -n "${LOCKSTEP_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

check() { # check NAME FUNCTION: the function must succeed
  local name=$1; shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | tail -30; fi
}
exits() { # exits CODE COMMAND...: the command's output in $tmp/o and $tmp/e, and its exit status must be CODE
  local want=$1; shift
  "$@" >"$tmp/o" 2>"$tmp/e"
  local got=$?
  [ "$got" -eq "$want" ] || { echo "exit $got, wanted $want: $*"; cat "$tmp/o" "$tmp/e"; return 1; }
}
json() { python3 -c "import json,sys; d=json.load(open('$tmp/o')); print($1)"; }

for f in "$ls" "$train" "$build/bin/lockstepd"; do
  [ -x "$f" ] || { echo "$f is missing; run make first"; echo "0 passed, 1 failed"; exit 1; }
done

# MPI stays on loopback, always; Open MPI's leaks are by design (LeakSanitizer would fail every SAN=1 run).
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
for v in $(compgen -e | grep -E '^(LOCKSTEP_|SLURM_)'); do unset "$v"; done

"$build/bin/lockstepd" --listen 127.0.0.1:0 --port-file "$tmp/port" --state-dir "$tmp/state" \
  >"$tmp/lockstepd.log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -s "$tmp/port" ] && break; sleep 0.1; done
if [ ! -s "$tmp/port" ]; then
  echo "lockstepd did not start:"; tail -20 "$tmp/lockstepd.log"; echo "0 passed, 1 failed"; exit 1
fi
S=http://127.0.0.1:$(cat "$tmp/port")
export LOCKSTEP_SERVER=$S

# train GROUP [ARGS...]: one two-rank lockstep-train run of 30 steps, streamed into GROUP (default trace level:
# loss, allreduce.in, allreduce.out, grad_norm each step).
train() {
  local group=$1; shift
  LOCKSTEP_TWIN_GROUP=$group mpirun --allow-run-as-root -np 2 "$train" --quiet --steps 30 --hidden 32 "$@" \
    >>"$tmp/train.log" 2>&1
}
# settled GROUP...: every run of the groups has ended (so the comparison covers them whole).
settled() {
  local g
  for g in "$@"; do
    for _ in $(seq 100); do
      curl -s "$S/api/v1/runs?group=$g&limit=100" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["items"] and all(r["status"] != "running" for r in d["items"]) else 1)' && break
      sleep 0.1
    done
  done
}

t0=$(date +%s)
ok=1
train base && train base || ok=0
for i in 1 2 3 4 5; do train noise --nondeterministic || ok=0; done
train extra --nondeterministic || ok=0
train lr --lr 2e-3 || ok=0
train same --checkpoint-every 5 --checkpoint-dir "$tmp/ckpt" || ok=0
LOCKSTEP_TWIN_GROUP=short mpirun --allow-run-as-root -np 2 "$train" --quiet --steps 20 --hidden 32 >>"$tmp/train.log" 2>&1 || ok=0
if [ $ok = 0 ]; then tail -20 "$tmp/train.log"; echo "the trainer runs failed"; echo "0 passed, 1 failed"; exit 1; fi
settled base noise extra lr same short
echo "11 runs of lockstep-train streamed in $(( $(date +%s) - t0 )) s"

t_baseline_twins() { # the baseline is deterministic: its twins are bit-identical
  for _ in $(seq 50); do "$ls" twins base --json 2>/dev/null | grep -q '"status": "match"' && break; sleep 0.1; done
  exits 0 "$ls" twins base && grep -q 'twin group base: match' "$tmp/o"
}
t_noise_diverges() { # the replicas really carry noise: they are not bit-identical to one another
  for _ in $(seq 50); do "$ls" twins noise --json 2>/dev/null | grep -q '"diverged"' && break; sleep 0.1; done
  exits 1 "$ls" twins noise
}
t_further_replica_within() {
  exits 0 "$ls" compare base extra --noise noise || return 1
  grep -q '^verdict: WITHIN NOISE$' "$tmp/o" && grep -Eq '^loss +within-noise ' "$tmp/o" &&
    grep -Eq '^grad_norm +within-noise ' "$tmp/o"
}
t_lr_change_beyond() {
  exits 1 "$ls" compare base lr --noise noise || return 1
  grep -q '^verdict: BEYOND NOISE$' "$tmp/o" &&
    grep -q '^first effect: step 2, rank 0, record "loss" occurrence 0' "$tmp/o" &&
    grep -Eq '^loss +beyond-noise ' "$tmp/o" && grep -Eq '^grad_norm +beyond-noise ' "$tmp/o"
}
t_lr_change_json() { # step 1 (before the first update) is identical on every record; step 2 is the first effect
  exits 1 "$ls" compare base lr --noise noise --json || return 1
  [ "$(json 'd["verdict"], d["first_effect"]["step"], d["first_effect"]["name"], sorted(d["first_effect"]["ranks"])')" = \
    "beyond-noise 2 loss [0, 1]" ] &&
    { [ "$(json 'd["first_effect"]["cause"], "command differs" in (d["first_effect"]["configuration"] or "")')" = "configuration True" ] ||
      { json 'd["first_effect"]'; false; }; } &&
    [ "$(json 'all(m["first_step_differs"] == 2 and m["ratio"] > 100 for m in d["metrics"])')" = True ] &&
    [ "$(json 'len(d["metrics"][0]["series"]["steps"]), len(d["metrics"][0]["series"]["band"]), len(d["noise"]["runs"])')" = "30 30 5" ]
}
t_identical_change() {
  exits 0 "$ls" compare base same --noise noise || return 1
  grep -q '^verdict: IDENTICAL$' "$tmp/o" && grep -q '^first effect: none' "$tmp/o"
}
t_without_noise() { # without replicas: bit-identical or not, the first effect and the sizes, and what cannot be said
  exits 1 "$ls" compare base lr || return 1
  grep -q '^verdict: DIFFERS$' "$tmp/o" && grep -q '^first effect: step 2' "$tmp/o" &&
    grep -Eq '^loss +differs +2 ' "$tmp/o" && grep -q 'note: Without noise replicas' "$tmp/o" &&
    exits 0 "$ls" compare base same && grep -q '^verdict: IDENTICAL$' "$tmp/o"
}
t_run_ids() { # run ids work where groups do
  local b l
  b=$("$ls" runs --group base --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["run_id"])')
  l=$("$ls" runs --group lr --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["run_id"])')
  exits 1 "$ls" compare "$b" "$l" --noise noise && grep -q '^verdict: BEYOND NOISE$' "$tmp/o"
}
t_unknown_group() {
  exits 2 "$ls" compare base no-such-group --noise noise &&
    grep -q 'unknown twin group or run (HTTP 404)' "$tmp/e" && grep -q 'detail: CHANGED names "no-such-group"' "$tmp/e"
}
t_different_length() {
  exits 2 "$ls" compare base short --noise noise &&
    grep -q 'the runs cover different steps (HTTP 400)' "$tmp/e" && grep -q 'steps 1-20 (20)' "$tmp/e" &&
    grep -q 'hint: .*--from A --to B' "$tmp/e" &&
    exits 0 "$ls" compare base short --to 20 && grep -q '^verdict: IDENTICAL$' "$tmp/o"
}
t_no_shared_metric() {
  exits 2 "$ls" compare base lr --rank 5 && grep -q 'no shared metric (HTTP 400)' "$tmp/e"
}
t_bad_usage() {
  exits 2 "$ls" compare base && grep -q 'compare needs BASE and CHANGED' "$tmp/e" &&
    exits 2 "$ls" compare base lr --bogus && exits 2 "$ls" compare base lr --noise base &&
    grep -q 'a run plays two parts' "$tmp/e" && exits 2 "$ls" compare base lr --alpha 7
}
t_unreachable() { exits 3 "$ls" compare base lr --server http://127.0.0.1:9 && grep -q 'cannot reach lockstepd' "$tmp/e"; }
t_api_matches_cli() { # the CLI prints the server's verdicts: the same numbers through the API
  curl -s "$S/api/v1/compare?base=base&changed=lr&noise=noise&series=0" >"$tmp/o" || return 1
  local score
  score=$(json '"%.3g" % [m for m in d["metrics"] if m["name"] == "loss"][0]["score"]')
  "$ls" compare base lr --noise noise >"$tmp/c"
  [ "$(awk '$1 == "loss" { print $2, $3 }' "$tmp/c")" = "beyond-noise $score" ] || { echo "API score $score"; cat "$tmp/c"; return 1; }
}

t_lockstepd_clean() { # alive, and (in a SAN=1 build) no sanitizer report in its log
  kill -0 "$pid" 2>/dev/null || { echo "lockstepd died"; tail -20 "$tmp/lockstepd.log"; return 1; }
  ! grep -E 'AddressSanitizer|runtime error:|LeakSanitizer' "$tmp/lockstepd.log"
}

for t in t_baseline_twins t_noise_diverges t_further_replica_within t_lr_change_beyond t_lr_change_json \
         t_identical_change t_without_noise t_run_ids t_unknown_group t_different_length t_no_shared_metric \
         t_bad_usage t_unreachable t_api_matches_cli t_lockstepd_clean; do
  check "$t" "$t"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

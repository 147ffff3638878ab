#!/usr/bin/env bash
# run.sh - the CLI tier: lockstep fp, dump and diff on real traces written by the agent.
# usage: tests/cli/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=${1:-build}
ls=$build/bin/lockstep
toy=$build/examples/toy_train
tmp=$(mktemp -d /tmp/ls-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

check() { # check NAME COMMAND...: the command must succeed
  local name=$1; shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | head -20; fi
}

exits() { # exits CODE COMMAND...: the command's exit status must be CODE
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq "$want" ] || { echo "exit $got, wanted $want: $*"; cat "$tmp/err"; return 1; }
}

traced() { # traced DIR RANK [args]: one rank of a toy run into DIR
  local dir=$1 rank=$2; shift 2
  LOCKSTEP_TRACE_DIR=$dir LOCKSTEP_RANK=$rank LOCKSTEP_RUN_ID=$(basename "$dir") LOCKSTEP_TRACE=modules \
    "$toy" --steps 25 "$@" >/dev/null
}

# --- fp: the vectors, stdin, errors
t_fp_vectors() {
  printf 'lockstep' >"$tmp/a" && printf 'bitwise determinism' >"$tmp/b" && : >"$tmp/e"
  "$ls" fp "$tmp/a" "$tmp/b" "$tmp/e" >"$tmp/fp" || return 1
  diff <(printf '%s\n' "cdda81c2e1be4267  $tmp/a" "cf08d974cc9d92fe  $tmp/b" "48b78bdb0902dc73  $tmp/e") "$tmp/fp"
}
t_fp_stdin() { [ "$("$ls" fp - <"$tmp/a")" = "cdda81c2e1be4267  -" ]; }
t_fp_large() { # the 3 MiB + 5 vector, streamed through 8 MiB reads and a pipe
  python3 -c "import sys; sys.stdout.buffer.write(bytes(((i*131+(i>>8))%256) for i in range(3145733)))" >"$tmp/p3"
  [ "$("$ls" fp "$tmp/p3" | cut -c1-16)" = 2dd8f10a98f01475 ] && [ "$(cat "$tmp/p3" | "$ls" fp - | cut -c1-16)" = 2dd8f10a98f01475 ]
}
t_fp_missing() { exits 2 "$ls" fp "$tmp/nope" && grep -q 'cannot read a file' "$tmp/err"; }
t_fp_dir() { exits 2 "$ls" fp "$tmp" && grep -qi 'directory' "$tmp/err"; }

# --- dump
t_dump() {
  traced "$tmp/d1" 0 || return 1
  "$ls" dump "$tmp/d1/rank-00000.lstrace" >"$tmp/dump" || return 1
  [ "$(wc -l <"$tmp/dump")" -eq 100 ] || return 1 # 25 steps x (loss, grad_norm, grad, weight)
  head -1 "$tmp/dump" | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
assert r["name"] == "loss" and r["step"] == 0 and r["seq"] == 0 and r["occurrence"] == 0, r
assert r["level"] == "metric" and r["dtype"] == "f64" and len(r["fp"]) == 16 and "value_bits" in r, r'
}
t_dump_torn() {
  local f=$tmp/d1/rank-00000.lstrace
  head -c $(( $(stat -c %s "$f") - 7 )) "$f" >"$tmp/torn.lstrace"
  exits 2 "$ls" dump "$tmp/torn.lstrace" && [ "$(wc -l <"$tmp/out")" -eq 99 ] && grep -q 'torn' "$tmp/err"
}
t_dump_garbage() { head -c 100 /dev/urandom >"$tmp/g"; exits 2 "$ls" dump "$tmp/g" && grep -q 'not a readable trace' "$tmp/err"; }

# --- diff on agent-written twins
t_diff_match() {
  for r in 0 1 2; do traced "$tmp/m1" $r && traced "$tmp/m2" $r || return 1; done
  exits 0 "$ls" diff "$tmp/m1" "$tmp/m2" && grep -q '^MATCH' "$tmp/out"
}
t_diff_diverged() {
  for r in 0 1 2; do
    if [ $r = 2 ]; then traced "$tmp/v" $r --perturb-step 9; else traced "$tmp/v" $r; fi || return 1
  done
  exits 1 "$ls" diff "$tmp/m1" "$tmp/v" || return 1
  grep -q 'first divergence at step 9' "$tmp/out" && grep -q 'rank 2 .*DIVERGED at step 9' "$tmp/out" &&
    grep -q 'linear.weight' "$tmp/out" && grep -q 'rank 0 .*match' "$tmp/out"
}
t_diff_json() {
  exits 1 "$ls" diff --json "$tmp/m1" "$tmp/v" || return 1
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["match"] is False and d["first_step"] == 9, d
r2 = [r for r in d["ranks"] if r["rank"] == 2][0]
assert r2["kind"] == "content" and r2["a"]["name"] == "linear.weight" and r2["a"]["fp"] != r2["b"]["fp"], r2
assert all(r["status"] == "match" for r in d["ranks"] if r["rank"] != 2)' "$tmp/out"
}
t_diff_metric_ulp() { # metrics only: the flip at step 5 surfaces later, as a scalar with both values and ULPs
  LOCKSTEP_TRACE_DIR=$tmp/met1 LOCKSTEP_TRACE=metrics "$toy" --steps 25 --perturb-step 5 >/dev/null &&
  LOCKSTEP_TRACE_DIR=$tmp/met2 LOCKSTEP_TRACE=metrics "$toy" --steps 25 >/dev/null || return 1
  exits 1 "$ls" diff "$tmp/met1" "$tmp/met2" || return 1
  local step
  step=$(sed -n 's/^DIVERGED: first divergence at step \([0-9]*\)$/\1/p' "$tmp/out")
  [ -n "$step" ] && [ "$step" -gt 5 ] && grep -Eq 'record "(loss|grad_norm)"' "$tmp/out" &&
    [ "$(grep -c ' value ' "$tmp/out")" -eq 2 ] && grep -q 'distance: [0-9]* ulp' "$tmp/out"
}
t_diff_extra_rank() {
  traced "$tmp/m3" 0 && traced "$tmp/m3" 1 || return 1
  exits 1 "$ls" diff "$tmp/m3" "$tmp/m1" && grep -q 'rank 2 .*present in B only' "$tmp/out"
}
t_diff_overlap() { # a run that holds only steps 0-14 matches on its overlap only
  traced "$tmp/short" 0 --steps 15 && traced "$tmp/full" 0 || return 1
  exits 1 "$ls" diff "$tmp/full" "$tmp/short" && exits 0 "$ls" diff --overlap "$tmp/full" "$tmp/short" &&
    grep -q 'steps both runs hold: 0..14' "$tmp/out"
}
t_diff_unreadable() {
  exits 2 "$ls" diff "$tmp/m1" "$tmp/none" && grep -q 'cannot read run B' "$tmp/err" &&
  mkdir -p "$tmp/empty" && exits 2 "$ls" diff "$tmp/empty" "$tmp/m1" && grep -q 'holds no trace files' "$tmp/err" &&
  exits 2 "$ls" diff "$tmp/m1" && exits 2 "$ls" diff --bogus "$tmp/m1" "$tmp/m2"
}
t_usage() { exits 2 "$ls" && exits 2 "$ls" frobnicate && grep -q "lockstep help" "$tmp/err" && exits 0 "$ls" help; }

for t in t_fp_vectors t_fp_stdin t_fp_large t_fp_missing t_fp_dir t_dump t_dump_torn t_dump_garbage \
         t_diff_match t_diff_diverged t_diff_json t_diff_metric_ulp t_diff_extra_rank t_diff_overlap \
         t_diff_unreadable t_usage; do
  check "$t" "$t"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

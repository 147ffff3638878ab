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
# --- fp -r and --check: checkpoint content manifests
t_fp_manifest() {
  local c=$tmp/ckpt
  mkdir -p "$c/step-3/optim" && head -c 3000000 /dev/urandom >"$c/step-3/model.bin" &&
    head -c 777 /dev/urandom >"$c/step-3/optim/rank-0.bin" && : >"$c/step-3/COMPLETE" &&
    printf x >"$c/step-3/we\\ird" && ln -s model.bin "$c/step-3/link" || return 1
  "$ls" fp -r "$c" >"$tmp/man" || return 1
  [ "$(wc -l <"$tmp/man")" -eq 4 ] || return 1                       # the link is not content
  grep -q "^$("$ls" fp "$c/step-3/model.bin")\$" "$tmp/man" || return 1  # the same line plain fp prints
  grep -q '^\\[0-9a-f]\{16\}  .*we\\\\ird$' "$tmp/man" || return 1     # an escaped name, as sha256sum writes it
  diff <("$ls" fp -r -j 1 "$c") "$tmp/man" && diff <("$ls" fp -r -j 7 "$c") "$tmp/man" || return 1
  exits 0 "$ls" fp --check "$tmp/man" && [ "$(grep -c ': OK$' "$tmp/out")" -eq 4 ] || return 1
  printf y >>"$c/step-3/optim/rank-0.bin"
  exits 1 "$ls" fp --check --quiet "$tmp/man" && grep -q 'optim/rank-0.bin: FAILED$' "$tmp/out" &&
    [ "$(wc -l <"$tmp/out")" -eq 1 ] && grep -q '1 computed fingerprint did NOT match' "$tmp/err" || return 1
  rm "$c/step-3/COMPLETE"
  exits 2 "$ls" fp --check "$tmp/man" && grep -q 'COMPLETE: FAILED open or read' "$tmp/out" || return 1
  echo garbage >"$tmp/bad.man" && exits 2 "$ls" fp --check "$tmp/bad.man" && grep -q 'no fingerprint lines' "$tmp/err"
}

# --- state blocks: resumes checked against the saved state (examples/resume_train.c)
rt=$build/examples/resume_train
resumed() { # resumed DIR [args]: one run of the resume example into DIR
  local dir=$1; shift
  LOCKSTEP_TRACE_DIR=$dir LOCKSTEP_TRACE=modules "$rt" --steps 14 "$@" >/dev/null
}
t_diff_restore_ok() {
  resumed "$tmp/r_full" --save 6 "$tmp/ck.bin" && resumed "$tmp/r_good" --resume "$tmp/ck.bin" || return 1
  exits 0 "$ls" diff --overlap "$tmp/r_full" "$tmp/r_good" &&
    grep -q 'rank 0 .*match (14 records; 1 restored state block: 1 verified' "$tmp/out" &&
    grep -q 'steps both runs hold: 7..13' "$tmp/out"
}
t_diff_restore_bugs() { # each loader bug is named by its entry at the checkpoint's step, before the later steps
  local bug entry
  for bug in drop-momentum:momentum wrong-rng:rng stale-data:data_pos; do
    entry=${bug#*:}; bug=${bug%%:*}
    resumed "$tmp/r_$bug" --resume "$tmp/ck.bin" --bug "$bug" || return 1
    exits 1 "$ls" diff --overlap "$tmp/r_full" "$tmp/r_$bug" || return 1
    grep -q 'first divergence at step 6$' "$tmp/out" && grep -q 'RESTORE DIFFERENCE at step 6' "$tmp/out" &&
      grep -q "state entry \"$entry\" occurrence 0 was restored with other contents" "$tmp/out" &&
      grep -q "B restored step 6; compared with A's saved state" "$tmp/out" &&
      grep -q '^  cause: restore: a resumed run restored the checkpoint of step 6 on rank 0' "$tmp/out" &&
      grep -q '^  origin rank: 0$' "$tmp/out" && grep -q 'RESTORE DIFFERENCE at step 6: .*<- origin$' "$tmp/out" ||
      { cat "$tmp/out"; return 1; }
  done
  exits 1 "$ls" diff --json --overlap "$tmp/r_wrong-rng" "$tmp/r_full" || return 1
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["ranks"][0]
assert d["first_step"] == 6 and r["kind"] == "restore" and r["step"] == 6, r
x = r["restore"]
assert x["entry"] == "rng" and x["restored_by"] == "a" and x["reference"] == "saved" and x["difference"] == "content", x
assert r["a"]["state"] == "restored" and r["b"]["state"] == "saved", r
assert d["status"] == "diverged" and d["cause"] == "restore" and d["origin_ranks"] == [0], d' "$tmp/out"
}
t_diff_restore_records() { # a twin that saved nothing: its records of that step are the reference (linear.weight)
  resumed "$tmp/r_plain" || return 1
  exits 0 "$ls" diff --overlap "$tmp/r_plain" "$tmp/r_good" &&
    grep -q '1 restored state block: 1 verified, 0 with nothing to compare' "$tmp/out"
}

# --- shards: logical tensors across rank counts (examples/shard_train.c)
st=$build/examples/shard_train
sharded() { # sharded DIR WORLD [args] [-- RANKS]: every rank of a shard_train run
  local dir=$1 n=$2 r; shift 2
  for r in $(seq 0 $((n - 1))); do
    LOCKSTEP_TRACE_DIR=$dir LOCKSTEP_RANK=$r LOCKSTEP_TRACE=modules "$st" --world "$n" "$@" || return 1
  done
}
t_logical_any_rank_count() {
  for n in 1 2 3 4; do SHARD_TRAIN_DUMP=$tmp/w$n sharded "$tmp/s$n" $n || return 1; done
  for p in "1 2" "2 3" "2 4" "3 4" "4 1"; do
    set -- $p
    exits 0 "$ls" diff --logical "$tmp/s$1" "$tmp/s$2" && grep -q 'logical   match (6 tensors)' "$tmp/out" || return 1
  done
  exits 1 "$ls" diff "$tmp/s2" "$tmp/s4" || return 1  # rank by rank the layouts differ
  # the logical fingerprint is `lockstep fp` of the whole tensor, however it was split
  cat "$tmp"/w3.0000* >"$tmp/whole3" && local whole
  whole=$("$ls" fp "$tmp/whole3" | cut -c1-16)
  "$ls" dump --logical "$tmp/s4" >"$tmp/dl" 2>/dev/null && [ "$(wc -l <"$tmp/dl")" -eq 6 ] &&
    tail -1 "$tmp/dl" | grep -q "\"fp\":\"$whole\"" && tail -1 "$tmp/dl" | grep -q '"shards":\[{"rank":0,"offset":0'
}
t_logical_flipped_byte() {
  sharded "$tmp/f4" 4 --flip-step 3 --flip-byte 2500000 || return 1
  exits 1 "$ls" diff --logical "$tmp/s3" "$tmp/f4" || return 1
  grep -q 'first divergence at step 3 (logical tensors)' "$tmp/out" && grep -q 'tensor "tp.weight"' "$tmp/out" &&
    grep -q 'first differing bytes in MiB 2 of the tensor' "$tmp/out" && grep -q 'A holds it on ranks 1,2' "$tmp/out" &&
    grep -q 'B holds it on ranks 2,3' "$tmp/out" && grep -q '^  cause: layout: ' "$tmp/out" &&
    ! grep -q 'origin rank' "$tmp/out" || return 1
  exits 1 "$ls" diff --json --logical "$tmp/s2" "$tmp/f4" &&
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); r = d["ranks"][0]
assert r["first_chunk"] == 2 and r["chunk_holders"] == {"a": [1], "b": [2, 3]}, r
assert d["logical"]["a_tensors"] == 6 and d["logical"]["b_plain"] == 24, d["logical"]
assert d["cause"] == "layout" and d["origin_ranks"] == [], d' "$tmp/out"
}
t_logical_bad_tilings() {
  mkdir -p "$tmp/gap" "$tmp/overlap" &&
    cp "$tmp/s4/rank-00000.lstrace" "$tmp/s4/rank-00001.lstrace" "$tmp/s4/rank-00003.lstrace" "$tmp/gap/" &&
    cp "$tmp/s2/rank-00000.lstrace" "$tmp/s4/rank-00001.lstrace" "$tmp/s4/rank-00002.lstrace" \
       "$tmp/s4/rank-00003.lstrace" "$tmp/overlap/" || return 1
  exits 2 "$ls" diff --logical "$tmp/gap" "$tmp/s2" && grep -q 'cannot assemble the logical tensors of run A' "$tmp/err" &&
    grep -q 'tensor "tp.weight" (occurrence 0) at step 0 cannot be assembled: its shards leave a gap: bytes \[1600000, 2400000)' "$tmp/err" || return 1
  exits 2 "$ls" diff --logical "$tmp/s2" "$tmp/overlap" && grep -q 'run B' "$tmp/err" &&
    grep -q 'its shards overlap: rank 0 holds \[0, 1600000) and rank 1 starts at 800000' "$tmp/err" || return 1
  exits 2 "$ls" dump --logical "$tmp/gap" && grep -q 'gap' "$tmp/err"
}

# --- the habits of git and kubectl: each command's --help, --opt=value, global options anywhere, completion
commands="fp dump diff runs run twins job manifest-diff twin compare narrow checkpoint replay nodes node alerts token
          help version completion"
t_help_habits() { # lockstep SUB --help, SUB -h and lockstep help SUB: that command's usage on stdout, exit 0
  local c
  for c in $commands; do
    LOCKSTEP_SERVER=http://127.0.0.1:9 exits 0 "$ls" "$c" --help && grep -q "^usage: lockstep $c" "$tmp/out" &&
      [ ! -s "$tmp/err" ] && cp "$tmp/out" "$tmp/usage" || { echo "lockstep $c --help"; return 1; }
    exits 0 "$ls" help "$c" && cmp -s "$tmp/out" "$tmp/usage" && exits 0 "$ls" "$c" -h && cmp -s "$tmp/out" "$tmp/usage" &&
      exits 0 "$ls" --help "$c" && cmp -s "$tmp/out" "$tmp/usage" || { echo "lockstep help $c"; return 1; }
  done
  # node --help is node's usage, not a node called --help: no server is asked (there is none at port 9)
  LOCKSTEP_SERVER=http://127.0.0.1:9 exits 0 "$ls" node --help && grep -q '^  node NAME drain|repair|note REASON' \
    <(sed 's/^usage: lockstep /  /; s/^       lockstep /  /' "$tmp/out") || return 1
  exits 0 "$ls" --help && grep -q '^global options, before or after the command' "$tmp/out" || return 1
  exits 2 "$ls" help frobnicate && grep -q "unknown command 'frobnicate'" "$tmp/err"
}
t_option_forms() { # --opt=value as --opt value, options after the arguments, -- ends them, globals before or after
  "$ls" fp --jobs=2 "$tmp/a" >"$tmp/hab-f1" && "$ls" fp "$tmp/a" --jobs 2 >"$tmp/hab-f2" && "$ls" fp -j2 "$tmp/a" >"$tmp/hab-f3" &&
    cmp "$tmp/hab-f1" "$tmp/hab-f2" && cmp "$tmp/hab-f1" "$tmp/hab-f3" || return 1
  local abs; abs=$(readlink -f "$ls")
  cp "$tmp/a" "$tmp/-r" && (cd "$tmp" && "$abs" fp -- -r) >"$tmp/hab-f4" &&
    [ "$(cut -c1-16 "$tmp/hab-f4")" = "$(cut -c1-16 "$tmp/hab-f1")" ] || return 1
  exits 1 "$ls" diff --json "$tmp/m1" "$tmp/v" && cp "$tmp/out" "$tmp/hab-d1" || return 1
  exits 1 "$ls" diff "$tmp/m1" "$tmp/v" --json && cmp "$tmp/out" "$tmp/hab-d1" || return 1
  exits 1 "$ls" --json diff "$tmp/m1" "$tmp/v" && cmp "$tmp/out" "$tmp/hab-d1" || return 1
  exits 0 "$ls" diff --overlap=1 "$tmp/m1" "$tmp/m2" 2>/dev/null && return 1 # a switch takes no value
  grep -q "option '--overlap' takes no value" "$tmp/err" || return 1
  exits 2 "$ls" fp --json "$tmp/a" && grep -q 'fp takes no --json' "$tmp/err" || return 1
  exits 2 "$ls" --json fp "$tmp/a" && grep -q 'fp takes no --json' "$tmp/err" || return 1
  exits 2 "$ls" fp --jobs && grep -q "option '--jobs' needs a value" "$tmp/err" && grep -q 'lockstep fp --help' "$tmp/err"
}
# compl WORD...: what bash completion offers for the last word (COMP_WORDS as bash splits them: --opt=V is 3 words)
compl() { # (a candidate holding a blank or a newline, which bash would offer as one word, shows as BAD[...])
  bash -c 'source "$1"; shift; COMP_WORDS=(lockstep "$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _lockstep
           for w in "${COMPREPLY[@]}"; do case $w in *[[:space:]]*) w="BAD[$w]" ;; esac; printf "%s\n" "$w"; done |
             sort -u | tr "\n" " "' _ "$tmp/comp.bash" "$@"
}
t_completion() { # bash completion, written from the command table: what make built is what the command writes
  "$ls" completion bash >"$tmp/comp.bash" && bash -n "$tmp/comp.bash" &&
    cmp "$tmp/comp.bash" "$build/share/bash-completion/completions/lockstep" || return 1
  [ "$(compl tw)" = "twin twins " ] && [ "$(compl runs --status '')" = "ended failed running " ] &&
    [ "$(compl runs --status = en)" = "ended " ] && [ "$(compl --json twins --cu)" = "--cursor " ] &&
    [ "$(compl node n1 '')" = "drain note repair " ] && [ "$(compl help nod)" = "node nodes " ] &&
    [ "$(compl narrow g --level = m)" = "modules " ] && [ "$(compl narrow g --level '')" = "modules ops " ] &&
    [ "$(compl --server http://x runs --li)" = "--limit " ] && [ "$(compl '')" = "$(echo $commands | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
    { echo "completion: $(compl runs --status = en) / $(compl --json twins --cu)"; return 1; }
  # every option each command's usage names is offered after that command
  local c o
  for c in $commands; do
    "$ls" "$c" --help | grep -oE '^  (-[a-zA-Z], )?--[a-z-]+|^  -[a-zA-Z]' | sed 's/.*, //; s/^ *//' >"$tmp/opts"
    while read -r o; do
      case " $(compl "$c" "$o") " in *" $o "*) ;; *) echo "lockstep $c $o: not completed"; return 1 ;; esac
    done <"$tmp/opts"
  done
}

t_usage() { exits 2 "$ls" && exits 2 "$ls" frobnicate && grep -q "lockstep help" "$tmp/err" && exits 0 "$ls" help; }
t_version() { # lockstep and lockstepd report the release and commit deploy/version.sh gives
  local want; want="$(deploy/version.sh) (commit $(deploy/version.sh --commit))"
  exits 0 "$ls" --version && [ "$(cat "$tmp/out")" = "lockstep $want" ] &&
    exits 0 "$build/bin/lockstepd" --version && [ "$(cat "$tmp/out")" = "lockstepd $want" ]
}

for t in t_fp_vectors t_fp_stdin t_fp_large t_fp_missing t_fp_dir t_dump t_dump_torn t_dump_garbage \
         t_diff_match t_diff_diverged t_diff_json t_diff_metric_ulp t_diff_extra_rank t_diff_overlap \
         t_diff_unreadable t_fp_manifest t_diff_restore_ok t_diff_restore_bugs t_diff_restore_records \
         t_logical_any_rank_count t_logical_flipped_byte t_logical_bad_tilings t_usage t_version t_help_habits \
         t_option_forms t_completion; do
  check "$t" "$t"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

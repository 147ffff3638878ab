#!/usr/bin/env bash
# server.sh - the CLI-against-lockstepd tier: a real lockstepd (embedded PostgreSQL) fed by real
# agents streaming twin runs; every server subcommand of `lockstep` is checked on it.
# usage: tests/cli/server.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=${1:-build}
build=$(cd "$build" && pwd)
ls=$build/bin/lockstep
toy=$build/examples/toy_train
tmp=$(mktemp -d /tmp/ls-cli-srv-XXXXXX)
chmod 755 "$tmp" # the embedded PostgreSQL runs as postgres when we are root
# No admin token from this machine's own ~/.config/lockstep: each test says where its token comes from.
export HOME=$tmp/home-none
unset XDG_CONFIG_HOME LOCKSTEP_ADMIN_TOKEN LOCKSTEP_ADMIN_TOKEN_FILE
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do
      st=$(ps -o stat= -p "$pid" 2>/dev/null) || break
      case $st in Z*) break ;; esac
      sleep 0.1
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
pass=0; fail=0

check() {
  local name=$1; shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | head -30; fi
}
exits() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq "$want" ] || { echo "exit $got, wanted $want: $*"; cat "$tmp/out" "$tmp/err"; return 1; }
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/secret"
echo "admin-$$-$RANDOM" >"$tmp/admin"
chmod 600 "$tmp/admin"
# started from $tmp with a relative --state-dir, as a user would type it (the embedded cluster resolves it)
(cd "$tmp" && exec "$build/bin/lockstepd" --listen 127.0.0.1:0 --port-file "$tmp/port" --state-dir state \
  --secret "$tmp/secret" --admin-token "$tmp/admin" --web-dir "$tmp" >"$tmp/lockstepd.log" 2>&1) &
pid=$!
for _ in $(seq 300); do [ -s "$tmp/port" ] && break; sleep 0.1; done
if [ ! -s "$tmp/port" ]; then
  echo "lockstepd did not start:"; cat "$tmp/lockstepd.log"; echo "0 passed, 1 failed"; exit 1
fi
S=http://127.0.0.1:$(cat "$tmp/port")
export LOCKSTEP_SERVER=$S

# run JOB GROUP [toy args]: one two-rank run streamed by the agent
run() {
  local job=$1 group=$2; shift 2
  for rank in 0 1; do
    local extra=()
    [ "$rank" = 1 ] && extra=("$@")
    LOCKSTEP_TOKEN=$("$ls" token "$job" --secret "$tmp/secret") LOCKSTEP_JOB_ID=$job LOCKSTEP_STEP_ID=0 LOCKSTEP_RANKS=2 LOCKSTEP_RANK=$rank LOCKSTEP_TWIN_GROUP=$group \
      LOCKSTEP_TRACE=modules "$toy" --steps 12 "${extra[@]}" >/dev/null || return 1
  done
}
run 501 pair-ok && run 502 pair-ok && run 503 trio && run 504 trio && run 505 trio --perturb-step 6 || {
  echo "the agent could not stream the runs"; echo "0 passed, 1 failed"; exit 1; }
# The comparison runs as records arrive; give it a moment to settle.
for _ in $(seq 50); do
  "$ls" twins trio --json 2>/dev/null | grep -q '"diverged"' && "$ls" twins pair-ok --json | grep -q '"match"' && break
  sleep 0.2
done
runid() { "$ls" runs --job "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["run_id"])'; }

t_runs_table() {
  "$ls" runs >"$tmp/o" || return 1
  head -1 "$tmp/o" | grep -q '^RUN  *JOB  *STEP  *USER  *GROUP' && [ "$(grep -c ' ended ' "$tmp/o")" -eq 5 ]
}
t_runs_filter() {
  "$ls" runs --group trio --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["total"] == 3 and {r["job_id"] for r in d["items"]} == {"503", "504", "505"}, d'
}
t_runs_empty() { "$ls" runs --user nobody-here | grep -q 'no runs match'; }
t_run_detail() {
  "$ls" run "$(runid 505)" >"$tmp/o" || return 1
  grep -q '^job_id  *505$' "$tmp/o" && grep -q '^twin_group  *trio$' "$tmp/o" && grep -q '^RANK  *HOST' "$tmp/o" &&
    grep -Eq '^1 +[0-9]+ +0\.\.11 ' "$tmp/o"
}
# a run is checked against itself: twins that agree never disagree (none checked when the agent sends no digests)
t_run_consensus() {
  "$ls" run "$(runid 505)" >"$tmp/o" || return 1
  grep -Eq '^consensus: (none checked: no consensus digest came from this run: .*liblockstep_mpi\.so.*|agree \([0-9]+ windows checked\))$' "$tmp/o"
}
t_run_unknown() { exits 2 "$ls" run no-such-run && grep -q 'unknown run' "$tmp/err"; }
t_twins_match() { exits 0 "$ls" twins pair-ok && grep -q 'twin group pair-ok: match' "$tmp/out"; }
t_twins_diverged() {
  exits 1 "$ls" twins trio || return 1
  grep -q 'first divergence: step 6, rank 1, record "linear.weight"' "$tmp/out" &&
    [ "$(grep -c 'odd one out' "$tmp/out")" -eq 1 ] && grep 'odd one out' "$tmp/out" | grep -q "$(runid 505)"
}
t_twins_json() { exits 1 "$ls" twins trio --json && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "diverged" and d["first_divergence"]["step"] == 6, d
assert "classification" in d and "verdict" not in d and "cause" not in d, d' "$tmp/out"; }
cause_of() { "$ls" twins "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["first_divergence"]["cause"])'; }
t_twins_list() { # without a group: every group, newest first, with its status, first divergence and its cause
  local cause; cause=$(cause_of trio) && [ -n "$cause" ] || return 1
  exits 0 "$ls" twins || return 1
  head -1 "$tmp/out" | grep -q '^GROUP  *STATUS  *RUNS  *USERS  *FIRST DIVERGENCE  *CAUSE  *CLASS  *VERDICT  *LAST RUN' &&
    grep -Eq "^trio +diverged +3 .*step 6, rank 1, linear\.weight +$cause " "$tmp/out" && grep -Eq '^pair-ok +match +2 ' "$tmp/out" &&
    [ "$(sed -n 2p "$tmp/out" | awk '{print $1}')" = trio ] || return 1
  exits 0 "$ls" twins --status match && grep -q '^pair-ok ' "$tmp/out" && ! grep -q '^trio ' "$tmp/out" || return 1
  exits 0 "$ls" twins --limit 1 && grep -q 'the next page: --cursor 1' "$tmp/out" || return 1
  exits 0 "$ls" twins --limit 1 --cursor 1 && grep -q '^pair-ok ' "$tmp/out" || return 1
  exits 0 "$ls" twins --json && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [g["group"] for g in d["items"]] == ["trio", "pair-ok"] and d["total"] == 2, d' "$tmp/out" || return 1
  exits 2 "$ls" twins --status nonsense && grep -q "not a group status" "$tmp/err"
}
t_job() { # a job's runs and its own outcome in its group; --summary: the one line for AdminComment
  local cause; cause=$(cause_of trio) && [ -n "$cause" ] || return 1
  exits 1 "$ls" job 505 || return 1
  grep -q '^job 505: 1 run under lockstep, 1 twin group, diverged' "$tmp/out" &&
    grep -Eq '^0 +[0-9a-f-]{36} +ended +2 .* trio +diverged$' "$tmp/out" &&
    grep -q "^trio odd one out at step 6, rank 1 (linear.weight): $cause" "$tmp/out" || return 1
  exits 0 "$ls" job 501 --summary && [ "$(cat "$tmp/out")" = "lockstep: pair-ok matched" ] || return 1
  exits 1 "$ls" job 505 --summary || return 1
  case $(cat "$tmp/out") in "lockstep: trio odd one out at step 6, rank 1 (linear.weight): $cause"*" $S/#/twins/trio") ;;
    *) return 1 ;; esac
  # each twin job its own outcome, never the odd run's: 503 and 504 matched the majority
  for j in 503 504; do
    exits 1 "$ls" job $j --summary &&
      [ "$(cat "$tmp/out")" = "lockstep: trio matched the majority (job 505 is the odd one out) $S/#/twins/trio" ] ||
      return 1
  done
  exits 1 "$ls" job 503 --json && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [g["job_outcome"]["outcome"] for g in d["groups"]] == ["majority"], d["groups"][0]["job_outcome"]' "$tmp/out" ||
    return 1
  # a pair that diverged: no majority says which run is off; each job names its twin
  run 510 pair-div && run 511 pair-div --perturb-step 3 || return 1
  for _ in $(seq 50); do "$ls" twins pair-div --json 2>/dev/null | grep -q '"diverged"' && break; sleep 0.2; done
  exits 1 "$ls" job 510 --summary &&
    grep -q '^lockstep: pair-div diverged from its twin, job 511, at step 3, rank 1 (' "$tmp/out" || return 1
  exits 1 "$ls" job 511 --summary &&
    grep -q '^lockstep: pair-div diverged from its twin, job 510, at step 3, rank 1 (' "$tmp/out" || return 1
  exits 0 "$ls" job 503 --twin-jobs && [ "$(sort "$tmp/out" | tr '\n' ' ')" = "504 505 " ] || return 1
  exits 2 "$ls" job 999999 && grep -q 'job 999999 has no run on this server' "$tmp/err" || return 1
  exits 0 "$ls" job 999999 --summary && [ "$(cat "$tmp/out")" = "lockstep: no run" ]
}
t_manifest_diff() { # twins of one program: nothing that explains, and their ids apart as identities
  "$ls" manifest-diff pair-ok >"$tmp/o" && grep -q 'nothing that can change results differs' "$tmp/o" &&
    grep -q '^identities' "$tmp/o" && grep -Eq '^run +job_id' "$tmp/o" || { cat "$tmp/o"; return 1; }
}
t_remote_diff() {
  exits 1 "$ls" diff "$(runid 503)" "$(runid 505)" || return 1
  grep -q 'first divergence at step 6' "$tmp/out" && grep -q 'rank 1 .*DIVERGED at step 6' "$tmp/out" &&
    exits 0 "$ls" diff "$(runid 503)" "$(runid 504)"
}
t_remote_diff_equals_local() { # the server's report is the file report: same first step and record
  for r in 0 1; do
    LOCKSTEP_SERVER= LOCKSTEP_TRACE_DIR=$tmp/la LOCKSTEP_RANK=$r LOCKSTEP_TRACE=modules "$toy" --steps 12 >/dev/null
    if [ $r = 1 ]; then
      LOCKSTEP_SERVER= LOCKSTEP_TRACE_DIR=$tmp/lb LOCKSTEP_RANK=$r LOCKSTEP_TRACE=modules "$toy" --steps 12 --perturb-step 6 >/dev/null
    else
      LOCKSTEP_SERVER= LOCKSTEP_TRACE_DIR=$tmp/lb LOCKSTEP_RANK=$r LOCKSTEP_TRACE=modules "$toy" --steps 12 >/dev/null
    fi
  done
  "$ls" diff --json "$tmp/la" "$tmp/lb" >"$tmp/local.json"
  "$ls" diff --json "$(runid 503)" "$(runid 505)" >"$tmp/remote.json"
  python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda d: [(r["rank"], r["status"], r.get("kind"), r.get("step"), (r.get("a") or {}).get("fp"),
                  (r.get("b") or {}).get("fp"), r["compared"]) for r in d["ranks"]]
assert key(a) == key(b), (key(a), key(b))' "$tmp/local.json" "$tmp/remote.json"
}
t_token() { # the server mints for admins only, and agrees with the local computation
  local want
  want=$("$ls" token 777 --secret "$tmp/secret") && [ ${#want} -eq 64 ] || return 1
  [ "$("$ls" token 777 --token-file "$tmp/admin")" = "$want" ] || return 1
  [ "$(printf %s 777 | openssl dgst -sha256 -hmac "$(cat "$tmp/secret")" | sed 's/.* //')" = "$want" ] || return 1
  exits 4 "$ls" token 777 && grep -q 'HTTP 401' "$tmp/err" &&
    exits 4 "$ls" token 777 --token wrong && grep -q 'HTTP 403' "$tmp/err" &&
    exits 2 "$ls" token 12x --secret "$tmp/secret"
}
t_admin_token_file() { # the admin token from a private file: ~/.config/lockstep/admin-token, --token-file, or
  # LOCKSTEP_ADMIN_TOKEN_FILE; a file others can read is refused, with what to do
  local want h=$tmp/tokhome f=$tmp/tokhome/.config/lockstep/admin-token
  want=$("$ls" token 777 --secret "$tmp/secret") || return 1
  mkdir -p "$h/.config/lockstep" && cp "$tmp/admin" "$f" && chmod 600 "$f" || return 1
  [ "$(HOME=$h "$ls" token 777)" = "$want" ] || { echo "the default file was not used"; return 1; }
  [ "$(HOME=/nonexistent XDG_CONFIG_HOME=$h/.config "$ls" token 777)" = "$want" ] || return 1
  HOME=$h exits 4 "$ls" token 777 --token wrong && grep -q 'HTTP 403' "$tmp/err" || return 1 # a flag comes first
  chmod 640 "$f"
  HOME=$h exits 2 "$ls" token 777 && grep -q "refusing the admin token file $f (the default)" "$tmp/err" &&
    grep -q 'its mode 0640 lets its group read or write it' "$tmp/err" && grep -q 'chmod 600' "$tmp/err" || return 1
  HOME=$h exits 2 "$ls" runs || return 1 # refused whatever the command: the file must be fixed
  chmod 600 "$f" && chown nobody "$f" || return 1
  HOME=$h exits 2 "$ls" token 777 && grep -q 'not to you' "$tmp/err" || return 1
  chown "$(id -u)" "$f"
  # an explicit file: closed to other users, or refused
  cp "$tmp/admin" "$tmp/admin-open" && chmod 644 "$tmp/admin-open" || return 1
  exits 2 "$ls" token 777 --token-file "$tmp/admin-open" && grep -q 'lets every user read' "$tmp/err" || return 1
  LOCKSTEP_ADMIN_TOKEN_FILE=$tmp/admin-open exits 2 "$ls" token 777 && grep -q 'LOCKSTEP_ADMIN_TOKEN_FILE' "$tmp/err" ||
    return 1
  chmod 640 "$tmp/admin-open"
  [ "$("$ls" token 777 --token-file "$tmp/admin-open")" = "$want" ] || return 1
  [ "$(LOCKSTEP_ADMIN_TOKEN_FILE=$tmp/admin "$ls" token 777)" = "$want" ] || return 1
  exits 2 "$ls" token 777 --token-file "$tmp/no-such-file" && grep -q 'cannot read the admin token file' "$tmp/err" ||
    return 1
  # a HOME of another user's (a job submitted by one user, run as another, keeps the submitter's HOME): its token
  # file is not this user's default, and a command that needs no admin token works
  local o=$tmp/otherhome
  mkdir -p "$o/.config/lockstep" && cp "$tmp/admin" "$o/.config/lockstep/admin-token" &&
    chmod 600 "$o/.config/lockstep/admin-token" && chown -R nobody "$o" || return 1
  HOME=$o "$ls" runs >/dev/null || return 1
  HOME=$o exits 4 "$ls" token 777 || return 1 # (no admin token: lockstepd refuses)
  # the variable still works (older scripts)
  [ "$(LOCKSTEP_ADMIN_TOKEN=$(cat "$tmp/admin") "$ls" token 777)" = "$want" ]
}
t_manifest_scrubbed() { # a manifest from an agent that predates the rule: lockstepd keeps no secret-named variable
  local id tok; id=$(runid 501); tok=$("$ls" token 501 --secret "$tmp/secret")
  curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
    --data '{"rank":1,"env":{"LOCKSTEP_ADMIN_TOKEN":"adm1n-leak","HF_TOKEN":"hf-leak","NCCL_ALGO":"Ring"},
             "files":[{"env":"NCCL_KEY_FILE","path":"/k","xxh3":"0"}]}' "$S/api/v1/runs/$id/manifest" | grep -q 200 ||
    return 1
  curl -s "$S/api/v1/runs/$id" >"$tmp/run.json" && ! grep -q 'adm1n-leak\|hf-leak\|NCCL_KEY_FILE' "$tmp/run.json" &&
    python3 -c '
import json, sys
m = [x["manifest"] for x in json.load(open(sys.argv[1]))["manifests"] if x["rank"] == 1][0]
assert m["env"] == {"NCCL_ALGO": "Ring"} and m["files"] == [], m' "$tmp/run.json"
}
t_job_token_enforced() { # a run of job 501 refuses records under job 502's token
  local id; id=$(runid 501)
  curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $("$ls" token 502 --secret "$tmp/secret")" \
    -H 'Content-Type: application/json' --data '{"rank":0,"batch_seq":99,"records":[]}' \
    "$S/api/v1/runs/$id/records" | grep -q 403
}
t_late_joiner() { # a third run that joins after its twins ended and matched is still compared from the start
  run 507 late && run 508 late || return 1
  for _ in $(seq 50); do "$ls" twins late --json | grep -q '"match"' && break; sleep 0.2; done
  "$ls" twins late --json | grep -q '"status": "match"' || { echo "the pair did not match first"; return 1; }
  run 509 late --perturb-step 4 || return 1
  for _ in $(seq 50); do "$ls" twins late --json | grep -q '"diverged"' && break; sleep 0.2; done
  exits 1 "$ls" twins late && grep -q 'first divergence: step 4, rank 1' "$tmp/out" &&
    grep 'odd one out' "$tmp/out" | grep -q "$(runid 509)"
}
t_series() { # the curves' endpoint: compact step/value arrays of named scalars, exact bits beside
  curl -s "$S/api/v1/runs/$(runid 503)/series?rank=1&name=loss,grad_norm" | python3 -c '
import json, struct, sys
d = json.load(sys.stdin)
s = {x["name"]: x for x in d["series"]}
assert set(s) == {"loss", "grad_norm"} and s["loss"]["steps"] == list(range(12)), d
for x in s.values():
    assert len(x["values"]) == len(x["value_bits"]) == 12
    assert all(struct.unpack("<d", bytes.fromhex(b)[::-1])[0] == v for v, b in zip(x["values"], x["value_bits"]))' &&
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/api/v1/runs/$(runid 503)/series?rank=0")" = 400 ] &&
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/api/v1/runs/nope/series?name=loss")" = 404 ]
}
t_checkpoint() { # a job declares a checkpoint with its own token (LOCKSTEP_RUN_ID, LOCKSTEP_TOKEN); others may not
  local id tok; id=$(runid 503); tok=$("$ls" token 503 --secret "$tmp/secret")
  LOCKSTEP_RUN_ID=$id LOCKSTEP_TOKEN=$tok LOCKSTEP_RANK=0 exits 0 "$ls" checkpoint 8 /ck/run-503/step-8 &&
    grep -q "run $id: checkpoint of step 8 at /ck/run-503/step-8 declared" "$tmp/out" || return 1
  LOCKSTEP_RUN_ID=$id LOCKSTEP_TOKEN=$("$ls" token 504 --secret "$tmp/secret") exits 4 "$ls" checkpoint 9 &&
    grep -q 'HTTP 403' "$tmp/err" || return 1
  LOCKSTEP_RUN_ID= exits 2 "$ls" checkpoint 9 && grep -q 'LOCKSTEP_RUN_ID is not set' "$tmp/err" || return 1
  LOCKSTEP_RUN_ID=$id exits 2 "$ls" checkpoint -3 && grep -q 'a number >= 0' "$tmp/err" || return 1
  curl -s "$S/api/v1/runs/$id/checkpoints" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [(c["step"], c["path"], c["rank"]) for c in d["items"]] == [(8, "/ck/run-503/step-8", 0)], d'
}
t_narrow_refusals() { # usage, no admin token, nothing to show, a group that matches, no Slurm to ask
  exits 2 "$ls" narrow && grep -q 'narrow needs a group' "$tmp/err" || return 1
  exits 2 "$ls" narrow trio --level metrics || return 1
  exits 2 "$ls" narrow trio --show && grep -q 'group trio was never narrowed' "$tmp/err" || return 1
  exits 2 "$ls" narrow trio --show 99 && grep -q 'unknown narrow' "$tmp/err" || return 1
  # without sinfo on PATH the command cannot see the cluster, and says so before anything starts
  PATH=/nonexistent exits 2 "$build/bin/lockstep" narrow trio --token-file "$tmp/admin" &&
    grep -q 'cannot list the cluster' "$tmp/err" || return 1
  exits 2 "$ls" twin -n 2 --spread --exclude '' -- sbatch job.sh && grep -q -- '--exclude wants a node list' "$tmp/err"
}
t_twins_replay_fields() { # the twin API names the group's replays (none yet) and whether it replays another
  curl -s "$S/api/v1/twins/trio" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["replay"] is None and d["replays"] == 0 and d["narrow_of"] is None, d'
}
t_option_forms() { # --opt=value as --opt value; the global options before or after the subcommand
  local want; want=$("$ls" runs --group trio --limit 2 --json) || return 1
  [ "$(echo "$want" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["total"], len(d["items"]))')" = "3 2" ] ||
    return 1
  [ "$("$ls" runs --group=trio --limit=2 --json)" = "$want" ] && [ "$("$ls" --json runs --group=trio --limit 2)" = "$want" ] &&
    [ "$(LOCKSTEP_SERVER= "$ls" --server "$S" runs --group trio --limit=2 --json)" = "$want" ] &&
    [ "$(LOCKSTEP_SERVER= "$ls" --json runs --limit 2 --server="$S" --group=trio)" = "$want" ] || return 1
  LOCKSTEP_SERVER= exits 1 "$ls" --server="$S" twins trio && grep -q 'twin group trio: diverged' "$tmp/out" || return 1
  exits 0 "$ls" job 501 --summary --wait=0 && grep -q '^lockstep: pair-ok ' "$tmp/out" || return 1
  exits 2 "$ls" runs --limit && grep -q "option '--limit' needs a value" "$tmp/err"
}
t_cli_hints() { # a missing run or group: the command to run next, not lockstepd's HTTP routes
  exits 2 "$ls" twins no-such-group && grep -q 'hint: .*lockstep twins' "$tmp/err" && ! grep -q '/api/' "$tmp/err" ||
    return 1
  exits 2 "$ls" run no-such-run && grep -q 'hint: .*lockstep runs' "$tmp/err" && ! grep -q '/api/' "$tmp/err" ||
    return 1
  exits 2 "$ls" manifest-diff no-such-group && ! grep -q '/api/' "$tmp/err" || return 1
  exits 2 "$ls" compare trio no-such-group && ! grep -q '/api/' "$tmp/err"
}
t_unreachable() { exits 3 "$ls" runs --server http://127.0.0.1:9 && grep -q 'cannot reach lockstepd' "$tmp/err"; }
t_no_server() { LOCKSTEP_SERVER= HOME=$tmp/nohome exits 2 "$ls" runs && grep -q 'no server given' "$tmp/err"; }
t_config_file() {
  mkdir -p "$tmp/home/.config/lockstep" && printf 'server = %s\n' "$S" >"$tmp/home/.config/lockstep/config"
  LOCKSTEP_SERVER= HOME=$tmp/home "$ls" runs --group pair-ok | grep -q pair-ok
}

t_config_summary() { # a configuration difference is shown by the part that differs, in `twins` and `manifest-diff`
  run 520 cfg-pair && run 521 cfg-pair --perturb-step 6 || return 1
  for _ in $(seq 50); do "$ls" twins cfg-pair --json | grep -q '"diverged"' && break; sleep 0.2; done
  local want="argv differs (rank 1): '…--steps 12' vs '…--steps 12 --perturb-step 6'"
  exits 1 "$ls" twins cfg-pair && grep -F "configuration: " "$tmp/out" | grep -qF "$want" || return 1
  exits 0 "$ls" manifest-diff cfg-pair && grep -qF "$want" "$tmp/out"
}
t_clean_stop() { # last: SIGTERM; lockstepd exits 0 and (SAN=1) its log holds no sanitizer report
  kill -TERM "$pid"; wait "$pid"; local rc=$?; pid=
  [ "$rc" = 0 ] && ! grep -E 'AddressSanitizer|runtime error:|LeakSanitizer' "$tmp/lockstepd.log"
}

for t in t_runs_table t_runs_filter t_runs_empty t_run_detail t_run_consensus t_run_unknown t_twins_match t_twins_diverged \
         t_twins_json t_twins_list t_job t_manifest_diff t_remote_diff t_remote_diff_equals_local t_token t_admin_token_file t_job_token_enforced t_late_joiner t_series t_checkpoint t_narrow_refusals t_twins_replay_fields t_option_forms t_cli_hints t_unreachable t_no_server t_config_file t_manifest_scrubbed t_config_summary t_clean_stop; do
  check "$t" "$t"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# narrow.sh - the replay tier: `lockstep narrow` on a real local 4-node Slurm with the SPANK plugin and a real
# lockstepd. Faults belong to nodes (the cluster's TaskProlog gives a node's own environment to every task that
# starts there; deploy/slurm/node-env.sh), never to a job's environment: a fault on n3 in every job ->
# persistent-hardware naming n3 (three runs, and two runs with a third node to break the tie); a one-off on n4 ->
# transient-hardware; --nondeterministic -> software; a pair with no third node free -> inconclusive, saying why;
# a job with a resume template and declared checkpoints -> replays from the checkpoint before the window; a job of
# another user whose words and checkpoint path hold shell -> its replays run its program only, as that user.
# usage: tests/slurm/narrow.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=$(readlink -f "${1:-build}")
src=$(cd "$(dirname "$0")/../.." && pwd)
plugin=$build/lib/spank_lockstep.so
agent=$build/lib/liblockstep.so
lockstepd=$build/bin/lockstepd
train=$build/bin/lockstep-train
cli=$build/bin/lockstep
tmp=$(mktemp -d /tmp/ls-narrow-XXXXXX)
chmod 755 "$tmp"
run=
srv_pid=
rcv_pid=
pass=0; fail=0

alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }
stop_pid() {
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 1 100); do alive "$1" || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
}
cleanup() {
  [ -n "$srv_pid" ] && stop_pid "$srv_pid"
  [ -n "$rcv_pid" ] && stop_pid "$rcv_pid"
  [ -n "$run" ] && "$src/deploy/slurm/down.sh" "$run" >/dev/null 2>&1
  if [ -n "${NARROW_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

check() { # check NAME FUNCTION: the function must succeed (NARROW_ONLY="t_a t_b": only those run)
  local name=$1; shift
  [ -n "${NARROW_ONLY:-}" ] && [[ " $NARROW_ONLY t_clean_stop " != *" $1 "* ]] && return 0
  : >"$tmp/out"; : >"$tmp/err"
  local t; t=$(date +%s%N)
  if "$@"; then pass=$((pass+1)); echo "ok   $name ($(( ($(date +%s%N) - t) / 1000000 )) ms)"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | tail -40; fi
}
bail() { echo "$*"; echo "0 passed, 1 failed"; exit 1; }

[ "$(id -u)" -eq 0 ] || bail "the narrow tier needs root (slurmd runs job steps as their user)"
for f in "$plugin" "$agent" "$lockstepd" "$train" "$cli"; do [ -f "$f" ] || bail "$f is missing; run make first"; done

# Private copies: a rebuild of the tree meanwhile must not change the binaries under the jobs.
mkdir -p "$tmp/bin" "$tmp/lib"
cp "$plugin" "$agent" "$tmp/lib/" && cp "$train" "$lockstepd" "$cli" "$tmp/bin/" || bail "cannot copy the binaries"
plugin=$tmp/lib/${plugin##*/} agent=$tmp/lib/${agent##*/} train=$tmp/bin/${train##*/} lockstepd=$tmp/bin/${lockstepd##*/}
cli=$tmp/bin/${cli##*/}

user_preload=
case $build in */san)
  user_preload=$(gcc -print-file-name=libasan.so)
  export ASAN_OPTIONS=detect_leaks=0 ;;
esac
# No fault, twin group or lockstep setting comes from this shell: the faults are the nodes'.
for v in $(compgen -e | grep -E '^(LOCKSTEP_|SLURM_|NCCL_|OMPI_MCA_coll)'); do unset "$v"; done
unset LD_PRELOAD OMP_NUM_THREADS CUBLAS_WORKSPACE_CONFIG PYTHONHASHSEED MKL_CBWR NVTE_ALLOW_NONDETERMINISTIC_ALGO
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp

free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 30000))
    ss -Htan "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/secret"; chmod 600 "$tmp/secret"
echo "narrow-admin-token" >"$tmp/admin"; chmod 600 "$tmp/admin"
lsd_port=$(free_port); rcv_port=$(free_port)
api="http://127.0.0.1:$lsd_port/api/v1"
python3 "$src/tests/integration/receiver.py" "$rcv_port" "$tmp/hooks.jsonl" >/dev/null 2>&1 &
rcv_pid=$!

t0=$(date +%s%N)
args="agent=$agent secret=$tmp/secret spool=$tmp/spool server=http://127.0.0.1:$lsd_port timeout_ms=3000"
run=$("$src/deploy/slurm/up.sh" -d "$tmp/cluster" -n 4 -p "$plugin" -a "$args" -o required 2>"$tmp/up.err") || {
  cat "$tmp/up.err"; run=$tmp/cluster; bail "the local cluster did not start"; }
export SLURM_CONF=$run/slurm.conf
cat >"$tmp/lockstepd.conf" <<CONF
listen = 127.0.0.1:$lsd_port
state_dir = $tmp/lsd
secret = $tmp/secret
admin_token = $tmp/admin
alert_webhook_url = http://127.0.0.1:$rcv_port/hook
suspects_interval_ms = 500
alert_retry_ms = 100
alert_retry_max_s = 2
CONF
"$lockstepd" --config "$tmp/lockstepd.conf" --port-file "$tmp/lsd.port" >>"$tmp/lsd.log" 2>&1 &
srv_pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/lsd.port" ] && break; alive "$srv_pid" || break; sleep 0.1; done
[ -s "$tmp/lsd.port" ] || { tail -20 "$tmp/lsd.log"; bail "lockstepd did not start"; }
echo "cluster and lockstepd up in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
export LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port

json() { python3 -c "import json,sys; d=json.load(sys.stdin); r=($1); print(r)"; }
get() { curl -sS --max-time 10 "$api$1"; }
wait_for() { # wait_for SECONDS COMMAND...: poll until the command succeeds
  local end=$(( $(date +%s) + $1 )); shift
  while [ "$(date +%s)" -lt "$end" ]; do "$@" 2>/dev/null && return 0; sleep 0.2; done
  "$@"
}
queue_empty() { [ -z "$(squeue -h 2>/dev/null)" ]; }
nodes_idle() { [ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" = 4 ]; }

# The job every run is: lockstep-train over MPI, two ranks on one node (as make demo's).
printf '#!/bin/bash\nexec srun --mpi=pmix "%s" --quiet "$@"\n' "$train" >"$tmp/job.sh"
chmod 755 "$tmp/job.sh"
TRAIN=(--steps 8 --hidden 16 --batch 16)
# submit GROUP NODE [SBATCH OPTIONS --] [TRAINER ARGS]: one run of GROUP on NODE; prints the job id.
submit() {
  local group=$1 node=$2; shift 2
  local opts=()
  if [[ " $* " == *" -- "* ]]; then while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift; fi
  local exp="ALL"
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  sbatch --parsable --export="$exp" -N1 -n2 -w "$node" --lockstep=det --lockstep-twin="$group" "${opts[@]}" \
    -o "$tmp/%j.out" "$tmp/job.sh" "${TRAIN[@]}" "$@"
}
status_is() { [ "$(get "/twins/$1" | json "d['status']")" = "$2" ]; }
# group_of GROUP NODE... : one run on each node at once, then wait for the jobs and the group's verdict.
group_of() {
  local g=$1; shift
  local n jobs=()
  for n in "$@"; do jobs+=("$(submit "$g" "$n")") || return 1; done
  echo "group $g: jobs ${jobs[*]} on $*" >>"$tmp/err"
  wait_for 240 queue_empty || { squeue >>"$tmp/err"; return 1; }
  wait_for 60 status_is "$g" diverged || { get "/twins/$g" >>"$tmp/err"; return 1; }
}
# narrow GROUP [ARGS]: the narrow's JSON document in $tmp/$GROUP.json (its progress on stderr), its exit code.
narrow() {
  local g=$1; shift
  local t; t=$(date +%s%N)
  env ${user_preload:+LD_PRELOAD=$user_preload} timeout 600 "$cli" narrow "$g" --token-file "$tmp/admin" --json \
    --timeout 300 --output "$tmp/replays" "$@" >"$tmp/$g.json" 2>>"$tmp/err"
  local rc=$?
  echo "narrow $g: exit $rc in $(( ($(date +%s%N) - t) / 1000000 )) ms" | tee -a "$tmp/timings" >>"$tmp/err"
  return $rc
}
field() { json "$2" <"$tmp/$1.json"; }
placements() { # placements GROUP: "ROLE@NODES=outcome/diverged ..."
  field "$1" "' '.join('%s@%s=%s/%s' % (p['role'], p['nodes'], p['outcome'], p['diverged']) for p in d['placements'])"
}
mkdir -p "$tmp/replays"

# --- a one-off fault on n4: the first task that starts there flips a bit at step 6, never again
t_transient() {
  "$src/deploy/slurm/node-env.sh" "$run" n4 --once LOCKSTEP_FAULT=node=n4,step=6,bit=12 || return 1
  group_of once n1 n2 n4 || return 1
  grep -l 'injected fault: rank [01] node n4 step 6' "$tmp"/*.out >>"$tmp/err" || { echo "no fault on n4" >>"$tmp/err"; return 1; }
  [ ! -e "$run/nodes/n4/once.env" ] || { echo "the one-off was not taken" >>"$tmp/err"; return 1; }
  narrow once || return 1
  placements once >>"$tmp/err"
  [ "$(field once "d['verdict'], d['node']")" = "('transient-hardware', 'n4')" ] || { cat "$tmp/once.json" >>"$tmp/err"; return 1; }
  # the majority run whose nodes take the odd job is the first registered of n1's and n2's (they start at once)
  placements once | grep -Eqx "odd-again@n4=ran/False majority-on-odd-nodes@n4=ran/False odd-on-majority-nodes@n[12]=ran/False odd-on-other-nodes@n3=ran/False"
}

# --- twins run with an ignore rule for their closing timing reduction (it differs every run), a one-off fault on n4:
# the replays run with the rule (and the runs' directory), so the one-off stays transient-hardware on n4, never
# software from replays that record the timing the runs never recorded
rule_evidence_on_n4() {
  get "/nodes/n4/history?limit=500" | python3 -c "
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(e.get('group') == 'rule' and 'replay verdict transient-hardware on n4' in (e.get('detail') or '')
                  for e in d['items']) else 1)"
}
t_rule() {
  "$src/deploy/slurm/node-env.sh" "$run" n4 --once LOCKSTEP_FAULT=node=n4,step=6,bit=12 || return 1
  local n jobs=()
  mkdir -p "$tmp/rule dir" || return 1
  for n in n1 n2 n4; do
    jobs+=("$(submit rule "$n" "--lockstep-ignore=timing.*" "--chdir=$tmp/rule dir" -- --record-timing)") || return 1
  done
  wait_for 240 queue_empty || return 1
  wait_for 60 status_is rule diverged || { get /twins/rule >>"$tmp/err"; return 1; }
  [ "$(get /twins/rule | json "d['first_divergence']['step']")" = 6 ] || { get /twins/rule >>"$tmp/err"; return 1; }
  # the window reaches the last step, where the runs' timing reduction would be recorded without the rule
  narrow rule --window 2 || return 1
  placements rule >>"$tmp/err"
  field rule "[(p['settings'].get('ignore'), p['settings'].get('cwd'), p['outcome'], p['detail']) for p in d['placements']]" >>"$tmp/err"
  [ "$(field rule "all(p['settings'].get('ignore') == 'timing.*' and p['settings'].get('cwd') == '$tmp/rule dir' for p in d['placements'])")" = True ] || return 1
  [ "$(field rule "d['verdict'], d['node']")" = "('transient-hardware', 'n4')" ] || { cat "$tmp/rule.json" >>"$tmp/err"; return 1; }
  # each replay recorded with the rule: its own manifest says so, and it has no timing record
  local r
  for r in $(field rule "' '.join(p['run_id'] for p in d['placements'])"); do
    [ "$(get "/runs/$r" | json "d['manifests'][0]['manifest']['env'].get('LOCKSTEP_IGNORE')")" = 'timing.*' ] ||
      { get "/runs/$r" >>"$tmp/err"; return 1; }
  done
  # n4 keeps its evidence: the group's involvement of n4 is the replays' verdict on n4, never software
  wait_for 20 rule_evidence_on_n4 || { get "/nodes/n4/history?limit=500" >>"$tmp/err"; return 1; }
}

# --- resumes under Slurm, as users run them: no LOCKSTEP_START_STEP; the restored state block says where the resumed
# run starts. A correct resume matches its uninterrupted twin from the step after the checkpoint; a loader that forgot
# the optimizer, or restored another noise stream, is a restore difference saying so first.
# resumed GROUP NODE [TRAINER ARGS]: a run on NODE resuming from $tmp/rs-ck (the uninterrupted run's checkpoint of 4)
resumed() {
  local g=$1 node=$2; shift 2
  submit "$g" "$node" -- --checkpoint-dir "$tmp/rs-ck-$g" --resume "$tmp/rs-ck/step-00000004" "$@"
}
t_resume_slurm() {
  local g
  # the uninterrupted run writes the checkpoint of step 4; then one resume for each group
  submit rs-first n1 -- --checkpoint-every 4 --checkpoint-dir "$tmp/rs-ck" >/dev/null || return 1
  wait_for 240 queue_empty || return 1
  [ -d "$tmp/rs-ck/step-00000004" ] || { ls -R "$tmp/rs-ck" >>"$tmp/err" 2>&1; return 1; }
  # the uninterrupted twins save the checkpoint of step 4 too: their saved block is what a resume is held to
  for g in rs-good rs-optim rs-rng; do
    submit "$g" n1 -- --checkpoint-every 4 --checkpoint-dir "$tmp/rs-full-$g" >/dev/null || return 1
  done
  resumed rs-good n2 >/dev/null && resumed rs-optim n2 --resume-fault optimizer >/dev/null &&
    resumed rs-rng n2 --resume-fault rng >/dev/null || return 1
  wait_for 240 queue_empty || return 1
  wait_for 60 status_is rs-good match || { get /twins/rs-good >>"$tmp/err"; return 1; }
  get /twins/rs-good | json "[(r['start_step'], r['status']) for r in d['runs']]" >>"$tmp/err"
  [ "$(get /twins/rs-good | json "sorted(r['start_step'] for r in d['runs'])")" = "[0, 5]" ] || return 1
  wait_for 60 status_is rs-optim diverged && wait_for 60 status_is rs-rng diverged || return 1
  local fd why
  for g in rs-optim rs-rng; do get "/twins/$g" | json "d['first_divergence']" >>"$tmp/err"; done
  fd=$(get /twins/rs-optim | json "d['first_divergence']['step'], d['first_divergence']['cause']")
  why=$(get /twins/rs-optim | json "d['first_divergence']['cause_detail']")
  [ "$fd" = "(4, 'restore')" ] && [[ $why == "3 saved entries were not restored (first: adam.m): the optimizer state was not restored, at the checkpoint of step 4 on ranks 0 and 1"* ]] || return 1
  fd=$(get /twins/rs-rng | json "d['first_divergence']['step'], d['first_divergence']['cause']")
  why=$(get /twins/rs-rng | json "d['first_divergence']['cause_detail']")
  [ "$fd" = "(4, 'restore')" ] && [[ $why == "a resumed run restored the checkpoint of step 4 on ranks 0 and 1 with state entry rng_ctr (occurrence 0), the random number generator state, different from what its twin saved"* ]]
}

# --- nondeterministic software: its cause says so; the runs are replayed in place and name the record
t_software() {
  local a b
  a=$(submit nondet n1 --nondeterministic) && b=$(submit nondet n2 --nondeterministic) || return 1
  wait_for 240 queue_empty || return 1
  wait_for 60 status_is nondet diverged || { get /twins/nondet >>"$tmp/err"; return 1; }
  narrow nondet || return 1
  placements nondet >>"$tmp/err"
  [ "$(field nondet "d['verdict'], d['kind'], d['cause']")" = "('software', 'in-place', 'operation')" ] &&
    field nondet "d['reason']" | grep -q 'the cause is operation' &&
    [ "$(field nondet "d['record']['name'], d['record']['output_differs_while_inputs_matched']")" = "('allreduce.out', True)" ]
}

# --- a GPU on n3 that flips bit 12 of a gradient at step 6 in every job: a property of the node
t_persistent() {
  "$src/deploy/slurm/node-env.sh" "$run" n3 LOCKSTEP_FAULT=node=n3,step=6,bit=12 || return 1
  group_of gpu n1 n2 n3 || return 1
  # both ranks run on n3: both meet the fault at step 6 (the cause rule calls that content: no input fingerprints)
  get /twins/gpu | json "d['first_divergence']['step'], d['first_divergence']['cause'], d['first_divergence']['origin_ranks']" >>"$tmp/err"
  [ "$(get /twins/gpu | json "d['first_divergence']['step'], d['first_divergence']['origin_ranks']")" = "(6, [0, 1])" ] || return 1
  narrow gpu || return 1
  placements gpu >>"$tmp/err"
  [ "$(field gpu "d['verdict'], d['node'], d['kind']")" = "('persistent-hardware', 'n3', 'three-run')" ] || { cat "$tmp/gpu.json" >>"$tmp/err"; return 1; }
  placements gpu | grep -Eqx "odd-again@n3=ran/True majority-on-odd-nodes@n3=ran/True odd-on-majority-nodes@n[12]=ran/False odd-on-other-nodes@n4=ran/False" || return 1
  # the record the finer trace (modules, steps 5-7, rank of the fault) names between a replay on n3 and one elsewhere
  field gpu "d['record']" >>"$tmp/err"
  [ "$(field gpu "d['record']['step'], d['record']['level'], d['record']['name']")" = "(6, 'collective', 'allreduce.in')" ] || return 1
  # no job asked for the fault: the replays on n3 met it because they ran there
  grep -l 'injected fault: rank [01] node n3 step 6' "$tmp/replays"/*.out | wc -l | grep -qx 2
}
verdict_hook() { # verdict_hook GROUP: the webhook receiver got GROUP's verdict alert
  python3 -c "
import json, sys
sys.exit(0 if any(b.get('kind') == 'verdict' and b.get('group') == '$1'
                  for b in (json.loads(json.loads(l)['body']) for l in open('$tmp/hooks.jsonl'))) else 1)"
}
t_persistent_reaches() {
  # the twin API, the replay group's link back, the node's history, its evidence, the follow-up alert
  local v; v=$(get /twins/gpu | json "d['replay']['verdict'], d['replay']['node']")
  [ "$v" = "('persistent-hardware', 'n3')" ] || { echo "twin API: $v" >>"$tmp/err"; return 1; }
  local ng; ng=$(field gpu "d['narrow_group']")
  v=$(get "/twins/$ng" | json "d['narrow_of']['group']")
  [ "$v" = gpu ] || { echo "narrow_of: $v" >>"$tmp/err"; return 1; }
  get "/nodes/n3/history?limit=500" | json "[e['kind'] for e in d['items'] if e.get('group')=='gpu']" >"$tmp/out"
  grep -q verdict "$tmp/out" || { echo "n3 history has no verdict of gpu" >>"$tmp/err"; return 1; }
  wait_for 20 bash -c "curl -s '$api/nodes/n3/history?limit=500' | grep -q 'replays of group gpu'" ||
    { echo "n3 history has no involvement from the replays" >>"$tmp/err"; return 1; }
  wait_for 20 verdict_hook gpu || { echo "no verdict alert of gpu at the receiver" >>"$tmp/err"; return 1; }
  python3 - "$tmp/hooks.jsonl" <<'PY' 2>>"$tmp/err"
import json, sys
bodies = [json.loads(json.loads(l)["body"]) for l in open(sys.argv[1])]
v = [b for b in bodies if b.get("kind") == "verdict" and b.get("group") == "gpu"]
assert len(v) == 1, v
assert v[0]["severity"] == "critical" and "replay verdict persistent-hardware on n3" in v[0]["summary"], v[0]
assert "odd-again on n3" in v[0]["text"] and v[0]["details"]["node"] == "n3", v[0]
PY
}
t_show() {
  "$cli" narrow gpu --show >"$tmp/out" 2>&1 && grep -q '^verdict: persistent-hardware, node n3' "$tmp/out" &&
    grep -q '^reasoning:' "$tmp/out" && grep -q 'odd-again .*reproduced the divergence' "$tmp/out"
}

# --- a pair, one run on faulty n3: the replays on n2 and n4 are the third opinion
t_pair() {
  group_of pair n1 n3 || return 1
  narrow pair || return 1
  placements pair >>"$tmp/err"
  [ "$(field pair "d['verdict'], d['node'], d['kind']")" = "('persistent-hardware', 'n3', 'two-run')" ] || { cat "$tmp/pair.json" >>"$tmp/err"; return 1; }
}

# --- the same pair with n2 and n4 drained: no third opinion, and the verdict says so
t_not_enough_nodes() {
  scontrol update nodename=n2,n4 state=drain reason=narrow-test || return 1
  narrow pair
  local rc=$?
  scontrol update nodename=n2,n4 state=resume
  [ "$rc" = 1 ] || { echo "exit $rc, wanted 1 (inconclusive)" >>"$tmp/err"; return 1; }
  field pair "d['reason']" >>"$tmp/err"
  [ "$(field pair "d['verdict']")" = inconclusive ] && field pair "d['reason']" | grep -q 'no majority' &&
    field pair "d['reason']" | grep -q 'no 1 usable node outside the group' &&
    [ "$(field pair "sorted(n['name'] for n in d['nodes'] if not n['usable'])")" = "['n2', 'n4']" ] || return 1
  # the newest conclusive verdict still decides the group's evidence: n3 keeps its involvement from the pair
  wait_for 20 nodes_idle
}

# --- a job that says how it resumes, and declares its checkpoints: replays start at the one before the window
t_resume() {
  local k jobs=() dirs=()
  # Each run checkpoints into its own directory under the same relative name: twins with different command lines
  # would differ in configuration (the one manifest diff), which explains a divergence as software.
  for k in 1 2 3; do
    mkdir -p "$tmp/ck$k"
    jobs+=("$(submit resume "n$k" "--chdir=$tmp/ck$k" \
      "--lockstep-resume=$train --quiet --steps {stop} --hidden 16 --batch 16 --resume {path}" -- \
      --checkpoint-every 4 --checkpoint-dir ck)") || return 1
  done
  wait_for 240 queue_empty || return 1
  wait_for 60 status_is resume diverged || { get /twins/resume >>"$tmp/err"; return 1; }
  local id; id=$(get /twins/resume | json "[r['run_id'] for r in d['runs'] if r['nodes']=='n3'][0]")
  get "/runs/$id/checkpoints" | json "[(c['step'], c['path']) for c in d['items']]" >>"$tmp/err"
  [ "$(get "/runs/$id/checkpoints" | json "[c['step'] for c in d['items']]")" = "[8, 4]" ] || return 1
  narrow resume || return 1
  placements resume >>"$tmp/err"
  field resume "[(p['resume_step'], p['command']) for p in d['placements']]" >>"$tmp/err"
  [ "$(field resume "sorted(set(p['resume_step'] for p in d['placements']))")" = "[4]" ] || return 1
  field resume "d['placements'][0]['command']" | grep -q -- "--steps 7 --hidden 16 --batch 16 --resume $tmp/ck3/ck/step-00000004$" || return 1
  [ "$(field resume "d['verdict'], d['node']")" = "('persistent-hardware', 'n3')" ] || return 1
  # each replay loaded what the run it replays saved at step 4 (lockstep-train's state blocks, held to each other)
  field resume "[p['detail'] for p in d['placements']]" >>"$tmp/err"
  [ "$(field resume "sum('its restored state at step 4 is what the run it replays saved there' in p['detail'] for p in d['placements']) == len(d['placements'])")" = "True" ] || return 1
  # the replays began at step 5 and stopped after the window (step 7); their earliest records are the restored
  # state block of the checkpoint's step 4 (lockstep-train records it as it loads the checkpoint)
  local r
  for r in $(field resume "' '.join(p['run_id'] for p in d['placements'])"); do
    get "/runs/$r" | json "d['start_step'], min(x['min_step'] for x in d['rank_status']), max(x['max_step'] for x in d['rank_status'])" >>"$tmp/err"
    [ "$(get "/runs/$r" | json "d['start_step'], min(x['min_step'] for x in d['rank_status']), max(x['max_step'] for x in d['rank_status'])")" = "(5, 4, 7)" ] || return 1
  done
}

# --- jobs whose words, or checkpoint paths, try to run commands, owned by another user than the one who narrows:
# their replays run their program with exactly their words, as their owner, and nothing else runs
hostile_owner=nobody
# hostile_runs GROUP DIR [SBATCH OPTIONS --] [WORDS]: three runs of GROUP (n1 n2 n3) as $hostile_owner, in DIR/runK
hostile_runs() {
  local g=$1 h=$2 k exp=ALL opts=(); shift 2
  if [[ " $* " == *" -- "* ]]; then while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift; fi
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  for k in 1 2 3; do
    mkdir -p "$h/$g$k" && chown "$hostile_owner" "$h/$g$k" || return 1
    sbatch --parsable --uid="$hostile_owner" --gid="$(id -g "$hostile_owner")" --export="$exp" -N1 -n2 -w "n$k" \
      --lockstep=det --lockstep-twin="$g" --chdir="$h/$g$k" -o "$h/%j.out" "${opts[@]}" \
      "$h/job.sh" "$h/prog.sh" "$@" "${TRAIN[@]}" >>"$tmp/err" || return 1
  done
}
t_hostile() {
  "$src/deploy/slurm/node-env.sh" "$run" n3 LOCKSTEP_FAULT=node=n3,step=6,bit=12 || return 1
  local h=$tmp/hostile g f bad=0
  mkdir -p "$h" && chmod 1777 "$h" || return 1
  # the program: the trainer, given the arguments that are its options (the job's other words are only words);
  # with --declare-path its rank 0 first declares a checkpoint whose path holds a newline and a command
  cat >"$h/prog.sh" <<PROG
#!/bin/bash
args=()
for a in "\$@"; do
  case \$a in
  '\$('* | ';'*) ;;
  --declare-path) [ "\${SLURM_PROCID:-0}" != 0 ] || "$cli" checkpoint 4 \$'$h/ck/step-4\\ntouch $h/owned3 #' ;;
  *) args+=("\$a") ;;
  esac
done
exec "$train" --quiet "\${args[@]}"
PROG
  printf '#!/bin/bash\nexec srun --mpi=pmix "$@"\n' >"$h/job.sh"
  chmod 755 "$h/prog.sh" "$h/job.sh"
  # words that would run commands in a shell; a checkpoint declared with a path that holds a newline and a command
  hostile_runs words "$h" "\$(touch $h/owned1)" "; touch $h/owned2 #" || return 1
  hostile_runs path "$h" "--lockstep-resume=$train --quiet --steps {stop} --hidden 16 --batch 16 --resume {path}" -- \
    --declare-path || return 1
  wait_for 300 queue_empty || return 1
  for g in words path; do
    wait_for 60 status_is "$g" diverged || { get "/twins/$g" >>"$tmp/err"; return 1; }
  done
  local rc=0
  for g in words path; do
    (cd "$h" && narrow "$g") || rc=1
    placements "$g" >>"$tmp/err"
  done
  # nothing but the program ran: no file of the hostile words or path
  for f in owned1 owned2 owned3; do
    [ ! -e "$h/$f" ] || { echo "$f was created: a shell read a job's text" >>"$tmp/err"; bad=1; }
  done
  [ "$bad" = 0 ] && [ "$rc" = 0 ] || return 1
  # the runs registered their words as words; the checkpoint's path (a newline) was refused
  local id; id=$(get /twins/words | json "d['runs'][0]['run_id']")
  get "/runs/$id" | json "d['argv']" >>"$tmp/err"
  [ "$(get "/runs/$id" | json "d['argv'][1:3]")" = "['\$(touch $h/owned1)', '; touch $h/owned2 #']" ] || return 1
  [ "$(get "/runs/$(get /twins/path | json "d['runs'][0]['run_id']")/checkpoints" | json "len(d['items'])")" = 0 ] ||
    return 1
  grep -q 'bad checkpoint path' "$h"/*.out || { tail -n 5 "$h"/*.out >>"$tmp/err"; return 1; }
  [ "$(field path "[p['why'].count('(the whole run: no checkpoint with a path declared') for p in d['placements']]")" = \
    "[1, 1, 1, 1]" ] || return 1
  # the verdicts, from replays that ran the program with their run's very words, as its owner (slurmstepd's word)
  for g in words path; do
    [ "$(field "$g" "d['verdict'], d['node']")" = "('persistent-hardware', 'n3')" ] || return 1
    [ "$(field "$g" "all(p['outcome'] == 'ran' and p['user'] == '$hostile_owner' for p in d['placements'])")" = True ] ||
      return 1
    local want r; want=$(get "/runs/$(get "/twins/$g" | json "d['runs'][0]['run_id']")" | json "d['argv']")
    for r in $(field "$g" "' '.join(p['run_id'] for p in d['placements'])"); do
      [ "$(get "/runs/$r" | json "d['argv']")" = "$want" ] &&
        [ "$(get "/runs/$r" | json "d['attested']['user']")" = "$hostile_owner" ] || { get "/runs/$r" >>"$tmp/err"; return 1; }
    done
  done
  # their output went to a directory of the owner's
  [ "$(stat -c %U "$tmp/replays/uid-$(id -u "$hostile_owner")")" = "$hostile_owner" ]
}

# --- narrowed by a user who owns none of the runs: nothing is submitted, and each placement says why
t_other_user() {
  local o=$tmp/other
  mkdir -p "$o" && cp "$tmp/admin" "$o/admin" && chown -R "$hostile_owner" "$o" || return 1
  (cd "$o" && runuser -u "$hostile_owner" -- env SLURM_CONF="$SLURM_CONF" LOCKSTEP_SERVER="$LOCKSTEP_SERVER" \
    ${user_preload:+LD_PRELOAD=$user_preload} timeout 300 "$cli" narrow nondet --token-file "$o/admin" --json \
    --timeout 60 --output "$o/out") >"$tmp/other.json" 2>>"$tmp/err"
  local rc=$?
  [ "$rc" -le 1 ] || { echo "exit $rc, wanted a verdict (0 or 1)" >>"$tmp/err"; return 1; }
  field other "[(p['outcome'], p['job_id']) for p in d['placements']]" >>"$tmp/err"
  [ "$(field other "all(p['outcome'] == 'not-run' and p['job_id'] is None and
        'the replay runs as root, the owner of the run it replays, and lockstep narrow runs as uid' in p['detail']
        for p in d['placements'])")" = True ]
}

t_refusals() {
  "$cli" narrow gpu --json >"$tmp/out" 2>&1; [ $? = 4 ] && grep -q 'admin token' "$tmp/out" || return 1
  submit lone n1 >/dev/null && wait_for 240 queue_empty || return 1 # a lone run: pending, nothing to narrow
  "$cli" narrow lone --token-file "$tmp/admin" >"$tmp/out" 2>&1; [ $? = 2 ] && grep -q 'nothing to narrow' "$tmp/out"
}

check "a one-off fault on n4 (node property, taken by one task): transient-hardware naming n4" t_transient
check "twins with an ignore rule, a one-off on n4: replays carry the rule, transient-hardware naming n4" t_rule
check "resumes under Slurm: correct matches from k+1; forgotten optimizer and rng are the restore difference" t_resume_slurm
check "--nondeterministic twins: software (cause operation), the record named in place" t_software
check "a fault on n3 in every job there: persistent-hardware naming n3, the divergence follows it" t_persistent
check "the verdict reaches the twin API, the replay group, n3's history and evidence, and a follow-up alert" t_persistent_reaches
check "narrow --show prints the verdict, placements and reasoning again" t_show
check "a two-run group: replays on free nodes break the tie, persistent-hardware naming n3" t_pair
check "not enough free nodes (n2, n4 drained): inconclusive, and the reason says so" t_not_enough_nodes
check "a resume template and declared checkpoints: replays start at the checkpoint before the window" t_resume
check "a job's hostile words and checkpoint path: only its program runs, with its words, as its owner" t_hostile
check "narrowed by a user who owns none of the runs: nothing submitted, each placement says why" t_other_user
check "narrow needs the admin token; refuses a group that did not diverge" t_refusals
t_clean_stop() {
  kill -TERM "$srv_pid"; wait "$srv_pid"; local rc=$?; srv_pid=
  [ "$rc" = 0 ] && ! grep -E 'AddressSanitizer|runtime error|LeakSanitizer' "$tmp/lsd.log" >>"$tmp/err"
}
check "lockstepd stops cleanly" t_clean_stop
cat "$tmp/timings" 2>/dev/null | sed 's/^/     /'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

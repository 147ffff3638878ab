#!/usr/bin/env bash
# fleet.sh - the fleet tier: lockstep-train twins on a real local 4-node Slurm with the SPANK plugin and a real
# lockstepd; a fault that follows node n3 makes n3 a suspect (drained by scontrol), nondeterministic twins are
# software, a three-run group names the faulty node, and alerts reach real local receivers and a mail program.
# usage: tests/slurm/fleet.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=$(readlink -f "${1:-build}")
src=$(cd "$(dirname "$0")/../.." && pwd)
plugin=$build/lib/spank_lockstep.so
agent=$build/lib/liblockstep.so
lockstepd=$build/bin/lockstepd
train=$build/bin/lockstep-train
tmp=$(mktemp -d /tmp/ls-fleet-XXXXXX)
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
  if [ -n "${FLEET_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

check() { # check NAME FUNCTION: the function must succeed
  local name=$1; shift
  : >"$tmp/out"; : >"$tmp/err"
  if "$@"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | tail -25; fi
}
bail() { echo "$*"; echo "0 passed, 1 failed"; exit 1; }

[ "$(id -u)" -eq 0 ] || bail "the fleet tier needs root (slurmd runs job steps as their user)"
for f in "$plugin" "$agent" "$lockstepd" "$train"; do [ -x "$f" ] || [ -f "$f" ] || bail "$f is missing; run make first"; done
command -v scontrol >/dev/null || bail "scontrol is missing (deploy/install-deps.sh installs slurm-client)"

# Run private copies: others rebuilding the tree meanwhile must not change the binaries under the jobs (a
# rewritten liblockstep.so crashes the tasks that map it, and changes the manifests' library hashes).
mkdir -p "$tmp/bin" "$tmp/lib"
cp "$plugin" "$agent" "$tmp/lib/" && cp "$train" "$lockstepd" "$tmp/bin/" || bail "cannot copy the binaries"
plugin=$tmp/lib/${plugin##*/} agent=$tmp/lib/${agent##*/} train=$tmp/bin/${train##*/} lockstepd=$tmp/bin/${lockstepd##*/}

user_preload=
case $build in */san)
  user_preload=$(gcc -print-file-name=libasan.so)
  export ASAN_OPTIONS=detect_leaks=0 ;;
esac
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
echo "fleet-admin-token" >"$tmp/admin"; chmod 600 "$tmp/admin"
lsd_port=$(free_port); rcv_port=$(free_port)
api="http://127.0.0.1:$lsd_port/api/v1"

# The receivers: one HTTP server for the three webhook formats, a capture script for mail.
python3 "$src/tests/integration/receiver.py" "$rcv_port" "$tmp/hooks.jsonl" >/dev/null 2>&1 &
rcv_pid=$!
printf '#!/bin/sh\n{ echo "ARGS: $*"; cat; echo "=== END"; } >> %s/mail.txt\n' "$tmp" >"$tmp/mail.sh"
chmod 755 "$tmp/mail.sh"

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
public_url = http://dashboard.test:8080
alert_webhook_url = http://127.0.0.1:$rcv_port/hook
alert_slack_url = http://127.0.0.1:$rcv_port/slack
alert_alertmanager_url = http://127.0.0.1:$rcv_port
mail_program = $tmp/mail.sh
mail_domain = cluster.test
slurm_action = drain
scontrol = $(command -v scontrol)
slurm_conf = $run/slurm.conf
suspects_interval_ms = 500
alert_retry_ms = 100
alert_retry_max_s = 2
CONF
"$lockstepd" --config "$tmp/lockstepd.conf" --port-file "$tmp/lsd.port" >>"$tmp/lsd.log" 2>&1 &
srv_pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/lsd.port" ] && break; alive "$srv_pid" || break; sleep 0.1; done
[ -s "$tmp/lsd.port" ] || { tail -20 "$tmp/lsd.log"; bail "lockstepd did not start"; }
echo "cluster and lockstepd up in $(( ($(date +%s%N) - t0) / 1000000 )) ms"

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
get() { curl -sS --max-time 10 "$api$1"; }

# wait_idle: until the previous job has left the cluster (up to 10 s), so that each job starts on idle nodes.
wait_idle() { for _ in $(seq 1 100); do [ -z "$(squeue -h 2>/dev/null)" ] && return 0; sleep 0.1; done; }

# train GROUP NODES [ARGS...]: one lockstep-train job step of two ranks on NODES (rank order follows the node
# names), fingerprinted (--lockstep=det) into twin group GROUP. The fault follows node n3 in every job.
train() {
  local group=$1 nodes=$2; shift 2
  local exp="ALL"
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  wait_idle
  local t; t=$(date +%s%N)
  LOCKSTEP_FAULT=node=n3,step=2,bit=12 timeout 60 srun --immediate=10 --mpi=pmix --export="$exp" -N2 -n2 -w "$nodes" \
    --lockstep=det --lockstep-twin="$group" "$train" --quiet --steps 3 --hidden 16 --batch 8 "$@" \
    >>"$tmp/out" 2>>"$tmp/err"
  local rc=$?
  echo "job $group on $nodes: rc $rc, $(( ($(date +%s%N) - t) / 1000000 )) ms" >>"$tmp/jobs.log"
  return $rc
}
node_field() { get "/nodes/$1" | json "d['node']['$2']"; }
wait_for() { # wait_for SECONDS COMMAND...: poll until the command succeeds
  local end=$(( $(date +%s) + $1 )); shift
  while [ "$(date +%s)" -lt "$end" ]; do "$@" 2>/dev/null && return 0; sleep 0.1; done
  "$@"
}
is_state() { [ "$(node_field "$1" state)" = "$2" ]; }
group_alert() { # group_alert GROUP EXPR: EXPR over the group's only alert `a`
  get "/alerts?kind=divergence&limit=1000" | python3 -c "
import json,sys
d=json.load(sys.stdin); al=[a for a in d['items'] if a['group']=='$1']
assert len(al)==1, len(al)
a=al[0]; print($2)"
}
involvements() { # involvements NODE GROUP: the node's involvement weights in GROUP, newest first
  get "/nodes/$1/history?limit=1000" | json "' '.join(str(e['weight']) for e in d['items'] if e['kind']=='involvement' and e['group']=='$2')"
}

# Eight pairs. Run A of each pair has a rank on n3, run B runs on the healthy nodes only. All A runs go
# first: once n3 turns suspect lockstepd drains it, and no later job needs it.
A=(n1,n3 n2,n3 n3,n4 n1,n3 n2,n3 n3,n4 n1,n3 n2,n3)
B=(n2,n4 n1,n4 n1,n2 n2,n4 n1,n4 n1,n2 n2,n4 n1,n4)
t_pairs_run() {
  local i t; t=$(date +%s%N)
  for i in "${!A[@]}"; do train "pair-$i" "${A[$i]}" || { echo "job A $i failed" >>"$tmp/err"; return 1; }; done
  grep -c 'injected fault' "$tmp/err" | grep -qx 8 || { echo "expected 8 injected faults" >>"$tmp/err"; return 1; }
  for i in "${!B[@]}"; do train "pair-$i" "${B[$i]}" || { echo "job B $i failed" >>"$tmp/err"; return 1; }; done
  grep -c 'injected fault' "$tmp/err" | grep -qx 8 || { echo "a B run met the fault" >>"$tmp/err"; return 1; }
  echo "16 jobs in $(( ($(date +%s%N) - t) / 1000000 )) ms" >>"$tmp/err"
}
# Each run's placement comes from slurmstepd (the plugin's attestation), and pair-0's A run put rank 1 on n3.
t_attested() {
  local i id
  for i in "${!A[@]}"; do
    for id in $(get "/runs?group=pair-$i" | json "' '.join(r['run_id'] for r in d['items'])"); do
      get "/runs/$id" | json "d['attested'] and d['attested']['by'] == 'slurmstepd' and d['attested']['user'] == 'root' and sorted(r for p in d['attested']['placement'] for r in p['ranks']) == [0, 1]" |
        grep -qx True || { get "/runs/$id" >>"$tmp/err"; return 1; }
    done
  done
  local n3=
  for id in $(get "/runs?group=pair-0" | json "' '.join(r['run_id'] for r in d['items'])"); do
    n3+=$(get "/runs/$id" | json "''.join(str(p['ranks']) for p in d['attested']['placement'] if p['node'] == 'n3')")
  done
  [ "$n3" = "[1]" ] || { echo "pair-0: n3 ran ranks '$n3'" >>"$tmp/err"; return 1; }
}
n3_blamed_all() { [ "$(get "/nodes/n3/history?limit=1000" | json "sum(1 for e in d['items'] if e['kind']=='involvement')")" = 8 ]; }
t_n3_suspect() {
  wait_for 20 n3_blamed_all || { get "/nodes" >>"$tmp/err"; return 1; }
  wait_for 10 is_state n3 suspect || { get "/nodes" >>"$tmp/err"; return 1; }
  get "/nodes" >"$tmp/out"
  json "' '.join('%s=%s' % (n['name'], n['state']) for n in d['items'])" <"$tmp/out" >>"$tmp/err"
  [ "$(json "d['items'][0]['name']" <"$tmp/out")" = n3 ] &&
    [ "$(json "round(d['items'][0]['score'], 2) >= 0.95" <"$tmp/out")" = True ] || return 1
  local n
  for n in n1 n2 n4; do is_state $n ok || { echo "$n is $(node_field $n state)" >>"$tmp/err"; return 1; }; done
}
t_n3_drained_in_slurm() {
  wait_for 10 bash -c "sinfo -h -n n3 -o '%T' | grep -q drain" || { sinfo -N >>"$tmp/err"; return 1; }
  sinfo -h -n n3 -o '%E' | grep -q '^lockstep: ' || { sinfo -h -n n3 -o '%E' >>"$tmp/err"; return 1; }
  for n in n1 n2 n4; do sinfo -h -n $n -o '%T' | grep -q drain && { echo "$n drained" >>"$tmp/err"; return 1; }; done
  get "/nodes/n3/history?limit=1000" | json "[e['detail'] for e in d['items'] if e['kind']=='slurm']" | grep -q 'state=drain.*: ok'
}
suspect_alert_delivered() {
  get "/alerts?kind=suspect" | json "[(a['node'], sorted((x['sink'], x['state']) for x in a['deliveries'])) for a in d['items']]" |
    grep -qx "\[('n3', \[('alertmanager', 'delivered'), ('slack', 'delivered'), ('webhook', 'delivered')\])\]"
}
hooks() { # hooks GROUP: "PATH=COUNT ..." of the receiver's requests about GROUP's divergence
  python3 -c "
import json,sys,collections
c=collections.Counter()
for line in open('$tmp/hooks.jsonl'):
    r=json.loads(line); b=json.loads(r['body'])
    if r['path']=='/hook': g=b.get('group') if b.get('kind')=='divergence' else None
    elif r['path']=='/slack': g='$1' if 'twin group $1 diverged' in b['text'] else None
    else: g=b[0]['labels'].get('twin_group')
    if g=='$1': c[r['path']]+=1
print(' '.join('%s=%d' % kv for kv in sorted(c.items())))"
}
t_alerts() {
  wait_for 10 suspect_alert_delivered || { get "/alerts?kind=suspect" >>"$tmp/err"; return 1; }
  local i
  for i in "${!A[@]}"; do # one alert per group, whatever the number of diverging ranks and records
    [ "$(group_alert "pair-$i" "a['classification']")" = hardware ] || return 1
    [ "$(hooks "pair-$i")" = "/api/v2/alerts=1 /hook=1 /slack=1" ] ||
      { echo "pair-$i: $(hooks "pair-$i")" >>"$tmp/err"; return 1; }
  done
  group_alert pair-0 "a['text']" >"$tmp/out"
  grep -q 'step 2, rank 1, record allreduce.in' "$tmp/out" && grep -q 'node n3): fp ' "$tmp/out" &&
    grep -q 'http://dashboard.test:8080/#/twins/pair-0' "$tmp/out" &&
    grep -q '"path": "/api/v2/alerts"' "$tmp/hooks.jsonl" && grep -q '"path": "/slack"' "$tmp/hooks.jsonl" &&
    grep -q 'To: root@cluster.test' "$tmp/mail.txt"
}
t_nondet_software() {
  : >"$tmp/err"
  train nd n1,n2 --nondeterministic --steps 8 && train nd n1,n2 --nondeterministic --steps 8 || return 1
  local c i
  for i in $(seq 1 100); do c=$(group_alert nd "a['classification']" 2>/dev/null) && break; sleep 0.1; done
  [ "$c" = software ] || { echo "nd: '$c'" >>"$tmp/err"; return 1; }
  group_alert nd "a['text']" | grep 'same hardware' >/dev/null || return 1
  [ -z "$(involvements n1 nd)" ] && [ -z "$(involvements n2 nd)" ]
}
t_repair_resumes() {
  local body='{"action": "repair", "reason": "GPU reseated", "actor": "ops"}'
  [ "$(curl -s -o /dev/null -w '%{http_code}' -d "$body" "$api/nodes/n3/actions")" = 401 ] || return 1
  curl -sS -H "Authorization: Bearer fleet-admin-token" -d "$body" "$api/nodes/n3/actions" >"$tmp/out" || return 1
  [ "$(json "d['node']['state']" <"$tmp/out")" = repaired ] || return 1
  wait_for 10 bash -c "sinfo -h -n n3 -o '%T' | grep -qv drain" || { sinfo -N >>"$tmp/err"; return 1; }
}
# sbatch_train GROUP NODES: the same job as train, submitted with sbatch (the options carry into its srun step);
# waits for the job to finish.
sbatch_train() {
  local exp="ALL" jid
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  printf '#!/bin/bash\nsrun --mpi=pmix -N2 -n2 %s --quiet --steps 3 --hidden 16 --batch 8\n' "$train" >"$tmp/job.sh"
  jid=$(LOCKSTEP_FAULT=node=n3,step=2,bit=12 sbatch --parsable --export="$exp" -N2 -w "$2" --lockstep=det \
        --lockstep-twin="$1" -o "$tmp/sbatch.out" "$tmp/job.sh") || return 1
  for _ in $(seq 1 600); do [ -n "$(squeue -h -j "$jid" 2>/dev/null)" ] || break; sleep 0.1; done
  cat "$tmp/sbatch.out" >>"$tmp/err"
  [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && grep -q 'injected fault: rank 0 node n3' "$tmp/sbatch.out"
}
t_three_runs() {
  # only the third run has n3 (its rank 0); it goes through sbatch
  train three n1,n2 && train three n2,n4 && sbatch_train three n3,n4 || return 1
  wait_for 20 bash -c "[ \"\$(curl -s '$api/nodes/n3/history?limit=1000' | python3 -c \"import json,sys; d=json.load(sys.stdin); print(' '.join(str(e['weight']) for e in d['items'] if e['kind']=='involvement' and e['group']=='three'))\")\" = 1.0 ]" ||
    { get "/nodes/n3/history" >>"$tmp/err"; return 1; }
  local n
  for n in n1 n2 n4; do [ -z "$(involvements $n three)" ] || { echo "$n blamed: $(involvements $n three)" >>"$tmp/err"; return 1; }; done
  group_alert three "a['details']['reason']" | grep 'strong evidence against n3' >/dev/null
}

check "16 lockstep-train jobs: 8 twin pairs, the fault fires on n3" t_pairs_run
check "slurmstepd attested every run's rank placement (the plugin, not the job)" t_attested
check "n3 turns suspect (score >= 0.95); n1, n2, n4 stay ok" t_n3_suspect
check "lockstepd drains n3 in Slurm with a lockstep: reason" t_n3_drained_in_slurm
check "alerts: one per group, suspect n3 delivered to webhook, Slack, Alertmanager; mail to the user" t_alerts
check "nondeterministic twins: software, no node blamed" t_nondet_software
check "repair resumes n3 in Slurm (admin token required)" t_repair_resumes
check "a three-run group with one faulty run (sbatch) names n3 (strong evidence)" t_three_runs
t_clean_stop() { # SIGTERM: exit 0, no sanitizer report (SAN=1), nothing left in the outbox
  get "/alerts?limit=1000" | json "sum(1 for a in d['items'] for x in a['deliveries'] if x['state'] != 'delivered')" >"$tmp/out"
  kill -TERM "$srv_pid"; wait "$srv_pid"; local rc=$?; srv_pid=
  [ "$rc" = 0 ] && [ "$(cat "$tmp/out")" = 0 ] && ! grep -E 'AddressSanitizer|runtime error|LeakSanitizer' "$tmp/lsd.log" >>"$tmp/err"
}
# Figures: divergence stored -> group alert committed -> webhook delivered, over the eight pairs.
python3 - "$api" <<'PY' || true
import json, sys, urllib.request, datetime, statistics
api = sys.argv[1]
get = lambda p: json.load(urllib.request.urlopen(api + p))
ts = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
al = {a["group"]: a for a in get("/alerts?kind=divergence&limit=1000")["items"]}
d2a, a2d = [], []
for i in range(8):
    g = "pair-%d" % i
    fd = get("/twins/" + g)["first_divergence"]
    a = al[g]
    d2a.append((ts(a["created_at"]) - ts(fd["detected_at"])) * 1000)
    w = [x for x in a["deliveries"] if x["sink"] == "webhook"][0]
    a2d.append((ts(w["delivered_at"]) - ts(a["created_at"])) * 1000)
print('{"bench": "fleet_alerts", "groups": 8, "divergence_to_alert_p50_ms": %.1f, "divergence_to_alert_max_ms": %.1f, '
      '"alert_to_webhook_p50_ms": %.1f, "alert_to_webhook_max_ms": %.1f}'
      % (statistics.median(d2a), max(d2a), statistics.median(a2d), max(a2d)))
PY
check "lockstepd stops cleanly, every alert delivered" t_clean_stop

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

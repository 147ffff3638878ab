#!/usr/bin/env bash
# fleet.sh - the fleet tier: lockstep-train twins on a real local 4-node Slurm with the SPANK plugin and a real
# lockstepd; a fault that follows node n3 makes n3 a suspect (drained by scontrol), nondeterministic twins are
# software, a three-run group names the faulty node, alerts reach real local receivers and a mail program (and end
# when n3 is repaired), and the slurmctld epilog writes each job's outcome into its AdminComment.
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
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/epilog"
cp "$plugin" "$agent" "$tmp/lib/" && cp "$train" "$lockstepd" "$build/bin/lockstep" "$tmp/bin/" &&
  cp "$src/deploy/slurm/epilog-lockstep.sh" "$tmp/epilog/" || bail "cannot copy the binaries"
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

# The slurmctld epilog (deploy/slurm/epilog-lockstep.sh), configured by the file beside it.
cat >"$tmp/epilog/epilog-lockstep.conf" <<CONF
LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port
LOCKSTEP_CLI=$tmp/bin/lockstep
SLURM_CONF=$tmp/cluster/slurm.conf
LOCKSTEP_EPILOG_LOG=$tmp/epilog.log
CONF
[ -n "$user_preload" ] && echo "export ASAN_OPTIONS=detect_leaks=0" >>"$tmp/epilog/epilog-lockstep.conf"

t0=$(date +%s%N)
args="agent=$agent secret=$tmp/secret spool=$tmp/spool server=http://127.0.0.1:$lsd_port timeout_ms=3000"
# Accounting through slurmdbd (up.sh -A) where slurmdbd and MariaDB are installed: the epilog's comments then
# reach `sacct -o AdminComment`; without them the cluster has accounting_storage/none and jobcomp/filetxt.
acct=
command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null && command -v my_print_defaults >/dev/null && acct=-A
run=$("$src/deploy/slurm/up.sh" -d "$tmp/cluster" -n 4 -p "$plugin" -a "$args" -o required $acct \
      -e "$tmp/epilog/epilog-lockstep.sh" 2>"$tmp/up.err") || {
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
alert_resend_s = 5
cluster = fleet-test
CONF
"$lockstepd" --config "$tmp/lockstepd.conf" --port-file "$tmp/lsd.port" >>"$tmp/lsd.log" 2>&1 &
srv_pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/lsd.port" ] && break; alive "$srv_pid" || break; sleep 0.1; done
[ -s "$tmp/lsd.port" ] || { tail -20 "$tmp/lsd.log"; bail "lockstepd did not start"; }
echo "cluster and lockstepd up in $(( ($(date +%s%N) - t0) / 1000000 )) ms (accounting: $([ -n "$acct" ] && echo slurmdbd || echo "none, jobcomp/filetxt"))"

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
hooks() { # hooks GROUP [resolved]: "PATH=COUNT ..." of the receiver's firing (or resolution) messages about GROUP's
  # divergence; Alertmanager's re-sends of one alert (every alert_resend_s) count once
  python3 - "$tmp/hooks.jsonl" "$1" "${2:-}" <<'PY'
import json, sys, collections, datetime
log, group, resolved = sys.argv[1], sys.argv[2], sys.argv[3] == "resolved"
ts = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
c, am = collections.Counter(), set()
for line in open(log):
    r = json.loads(line); b = json.loads(r["body"])
    if r["path"] == "/hook":
        if b.get("kind") == "divergence" and b.get("group") == group and (b.get("status") == "resolved") == resolved:
            c["/hook"] += 1
    elif r["path"] == "/slack":
        if f"twin group {group} diverged" in b["text"] and b["text"].startswith("lockstep: resolved") == resolved:
            c["/slack"] += 1
    else:
        for a in b:
            if a["labels"].get("group") == group and (ts(a["endsAt"]) <= r["at"]) == resolved:
                am.add(a["labels"]["lockstep_alert_id"] + a["endsAt"] * resolved)
c["/api/v2/alerts"] = len(am)
print(" ".join("%s=%d" % kv for kv in sorted(c.items()) if kv[1]))
PY
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
  grep -q 'step 2, rank 1, record allreduce.in' "$tmp/out" && grep -q 'node n3, exit 0): fp ' "$tmp/out" && grep -q '^Cause: origin' "$tmp/out" &&
    grep -q 'http://dashboard.test:8080/#/twins/pair-0' "$tmp/out" &&
    grep -q '"path": "/api/v2/alerts"' "$tmp/hooks.jsonl" && grep -q '"path": "/slack"' "$tmp/hooks.jsonl" &&
    grep -q 'To: root@cluster.test' "$tmp/mail.txt" || return 1
  # Alertmanager's labels: the pair's diverging rank ran on n3 (job A) and n4 (job B); the cluster's name
  python3 - "$tmp/hooks.jsonl" "$(get /twins/pair-0 | json "','.join(r['job_id'] for r in d['runs'])")" \
    "$(get /twins/pair-0 | json "json.dumps(d['first_divergence']['site'])")" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] != "/api/v2/alerts":
        continue
    for a in json.loads(r["body"]):
        l = a["labels"]
        if l.get("group") == "pair-0":
            # user: the group's owner as slurmstepd attested it (the jobs run as root here)
            want = {"alertname": "LockstepTwinDivergence", "kind": "divergence", "group": "pair-0", "node": "n3,n4",
                    "job_id": sys.argv[2], "user": "root", "severity": "warning", "cluster": "fleet-test",
                    "service": "lockstep"}
            assert {k: l.get(k) for k in want} == want, l
            an = a["annotations"]
            assert an["classification"] == "hardware" and an["first_step"] == "2" and "verdict" not in an, an
            assert an["cause"] == "origin" and an["cause_detail"] and an["status"] == "diverged", an
            assert an["dashboard"] == "http://dashboard.test:8080/#/twins/pair-0" and "\n" not in an["description"], an
            site = json.loads(sys.argv[3])  # GET /twins/pair-0's first divergence's call site
            assert an.get("site") == (site or {}).get("text"), (an, site)
            sys.exit(0)
sys.exit("no Alertmanager alert for pair-0")
PY
}
# The slurmctld epilog. Slurm refuses to change a job that has ended, so a job's own comment can only go to the
# accounting database: with slurmdbd, the last pair's jobs carry their own outcomes in `sacct -o AdminComment`
# (job A's written first as pending, then again by job B's epilog), the line `lockstep job --summary` prints;
# without it, the epilog says there is nowhere to write, and `sacct -c` (jobcomp/filetxt) keeps no comment.
comment() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *AdminComment=//p' | sed 's/ *$//'; }
acct_comment() { sacct -n -X -P -j "$1" -o AdminComment 2>/dev/null | head -1; }
# want_comment GROUP JOB TWIN: the line `lockstep job JOB --summary` gives a job of a pair that diverged: its twin,
# the group's first divergence, its cause and the classification as GET /twins/GROUP says them, and where this job's
# run ran the diverging rank (slurmstepd's attestation) - each job its own line.
want_comment() {
  local run; run=$(get "/runs?job=$2" | json "d['items'][0]['run_id']")
  get "/twins/$1" | python3 -c "
import json, sys, urllib.request
d = json.load(sys.stdin); fd = d['first_divergence']
run = json.load(urllib.request.urlopen('$api/runs/$run'))
node = [p['node'] for p in run['attested']['placement'] if fd['rank'] in p['ranks']][0]
print('lockstep: $1 diverged from its twin, job $3, at step %d, rank %d (%s): %s, %s (its rank %d ran on %s) '
      'http://127.0.0.1:$lsd_port/#/twins/$1' % (fd['step'], fd['rank'], fd['name'], fd['cause'],
      d['classification']['class'], fd['rank'], node))"
}
t_epilog_comments() {
  get "/twins/pair-7" >"$tmp/out" || return 1
  local ja jb want wa wb got
  ja=$(json "d['runs'][0]['job_id']" <"$tmp/out"); jb=$(json "d['runs'][1]['job_id']" <"$tmp/out")
  wa=$(want_comment pair-7 "$ja" "$jb") && wb=$(want_comment pair-7 "$jb" "$ja") || return 1
  # job A ran on n3, job B did not: each comment names its own node
  case "$wa|$wb" in *", hardware (its rank "*" ran on n3) http"*"|"*) ;; *) echo "pair-7: $wa | $wb" >>"$tmp/err"; return 1 ;; esac
  case $wb in *" ran on n3) "*) echo "pair-7 B: $wb" >>"$tmp/err"; return 1 ;; esac
  [ "$(LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port "$tmp/bin/lockstep" job "$jb" --summary)" = "$wb" ] &&
    [ "$(LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port "$tmp/bin/lockstep" job "$ja" --summary)" = "$wa" ] || return 1
  LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port "$tmp/bin/lockstep" job "$jb" >"$tmp/out"; [ $? = 1 ] || return 1
  grep -q "pair-7 *diverged" "$tmp/out" || return 1
  if [ -z "$acct" ]; then
    wait_for 20 grep -q "job $jb: nowhere to write 'lockstep: pair-7 diverged from its twin, job $ja" "$tmp/epilog.log" ||
      { cat "$tmp/epilog.log" >>"$tmp/err"; return 1; }
    { echo "no slurmdbd: sacct -c (jobcomp/filetxt) for job $jb:"; sacct -c -j "$jb" -o JobID,State,AdminComment 2>&1; } >>"$tmp/err"
    sacct -c -j "$jb" -o JobID,State 2>/dev/null | grep -q "^$jb .*COMPLETED"
    return
  fi
  for j in "$jb" "$ja"; do
    want=$wb; [ "$j" = "$ja" ] && want=$wa
    for _ in $(seq 1 100); do [ "$(acct_comment "$j")" = "$want" ] && break; sleep 0.2; done
    got=$(acct_comment "$j")
    [ "$got" = "$want" ] || { echo "job $j: sacct AdminComment='$got', want '$want'" >>"$tmp/err"; cat "$tmp/epilog.log" >>"$tmp/err"; return 1; }
  done
  grep -q "job $ja: AdminComment (accounting): lockstep: pair-7 pending" "$tmp/epilog.log" ||
    { echo "job $ja was not first written as pending:" >>"$tmp/err"; cat "$tmp/epilog.log" >>"$tmp/err"; return 1; }
  echo "sacct -j $ja,$jb -o JobID,State,AdminComment:" >>"$tmp/err"; sacct -X -j "$ja,$jb" -o JobID,State,AdminComment%120 >>"$tmp/err" 2>&1
}
# A twin that still runs when its group's outcome is known gets it in slurmctld: `scontrol show job` shows it.
# Job A (sbatch: lockstep-train, then a sleep) has ended its run when job B (srun, other nodes) ends; B's epilog
# writes A's comment while A still runs.
t_epilog_running_twin() {
  local exp="ALL" ja jb want
  [ -n "$user_preload" ] && exp="ALL,LD_PRELOAD=$user_preload"
  printf '#!/bin/bash\nsrun --mpi=pmix -N2 -n2 %s --quiet --steps 3 --hidden 16 --batch 8\nsleep 30\n' "$train" >"$tmp/job-live.sh"
  wait_idle
  ja=$(sbatch --parsable --export="$exp" -N2 -w n1,n2 --lockstep=det --lockstep-twin=ep-live -o "$tmp/live.out" \
       "$tmp/job-live.sh") || return 1
  wait_for 60 bash -c "curl -s '$api/runs?job=$ja' | grep -q '\"status\": *\"ended\"'" || { cat "$tmp/live.out" >>"$tmp/err"; return 1; }
  timeout 60 srun --immediate=10 --mpi=pmix --export="$exp" -N2 -n2 -w n3,n4 --lockstep=det --lockstep-twin=ep-live \
    "$train" --quiet --steps 3 --hidden 16 --batch 8 >>"$tmp/out" 2>>"$tmp/err" || return 1
  want="lockstep: ep-live matched"
  wait_for 20 bash -c "[ \"\$(scontrol show job $ja | sed -n 's/^ *AdminComment=//p' | sed 's/ *\$//')\" = '$want' ]" ||
    { echo "job $ja: AdminComment='$(comment "$ja")'"; cat "$tmp/epilog.log"; } >>"$tmp/err"
  [ "$(comment "$ja")" = "$want" ] || return 1
  squeue -h -j "$ja" -o %T | grep -q RUNNING || { echo "job $ja no longer ran when its comment was written" >>"$tmp/err"; return 1; }
  scancel "$ja"
  if [ -n "$acct" ]; then # and the accounting database has it, for A from slurmctld, for B from its own epilog
    jb=$(get "/twins/ep-live" | json "[r['job_id'] for r in d['runs'] if r['job_id'] != '$ja'][0]")
    wait_for 20 bash -c "[ \"\$(sacct -n -X -P -j $jb -o AdminComment | head -1)\" = '$want' ]" &&
      wait_for 20 bash -c "[ \"\$(sacct -n -X -P -j $ja -o AdminComment | head -1)\" = '$want' ]" ||
      { sacct -X -j "$ja,$jb" -o JobID,State,AdminComment%60 >>"$tmp/err" 2>&1; return 1; }
  fi
}
t_nondet_software() {
  : >"$tmp/err"
  train nd n1,n2 --nondeterministic --steps 8 && train nd n1,n2 --nondeterministic --steps 8 || return 1
  local c i
  for i in $(seq 1 100); do c=$(group_alert nd "a['classification']" 2>/dev/null) && break; sleep 0.1; done
  [ "$c" = software ] || { echo "nd: '$c'" >>"$tmp/err"; return 1; }
  # every input matched and the sums differ: the operation itself (a reduction in arrival order)
  group_alert nd "a['text']" | grep '^Cause: operation' >/dev/null || return 1
  [ -z "$(involvements n1 nd)" ] && [ -z "$(involvements n2 nd)" ]
}
t_repair_resumes() {
  local body='{"action": "repair", "reason": "GPU reseated", "actor": "ops"}'
  [ "$(curl -s -o /dev/null -w '%{http_code}' -d "$body" "$api/nodes/n3/actions")" = 401 ] || return 1
  curl -sS -H "Authorization: Bearer fleet-admin-token" -d "$body" "$api/nodes/n3/actions" >"$tmp/out" || return 1
  [ "$(json "d['node']['state']" <"$tmp/out")" = repaired ] || return 1
  wait_for 10 bash -c "sinfo -h -n n3 -o '%T' | grep -qv drain" || { sinfo -N >>"$tmp/err"; return 1; }
}
resolved_everywhere() { [ "$(hooks "$1" resolved)" = "/api/v2/alerts=1 /hook=1 /slack=1" ]; }
t_repair_resolves() { # the repair ended every alert that blamed n3: each sink heard it once more
  local i
  [ "$(get "/alerts?kind=suspect" | json "[(a['node'], a['state'], a['resolved_reason']) for a in d['items']]")" = \
    "[('n3', 'resolved', 'repaired')]" ] || { get "/alerts?kind=suspect" >>"$tmp/err"; return 1; }
  for i in "${!A[@]}"; do
    [ "$(group_alert "pair-$i" "a['state'] + ' ' + a['resolved_reason']")" = "resolved repaired" ] || return 1
    wait_for 10 resolved_everywhere "pair-$i" || { echo "pair-$i resolutions: $(hooks "pair-$i" resolved)" >>"$tmp/err"; return 1; }
  done
  # the software group blamed no node: still open, and Alertmanager still hears of it
  [ "$(group_alert nd "a['state']")" = open ]
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
  group_alert three "a['details']['reason']" | grep 'strong evidence against n3' >/dev/null || return 1
  # each job's own outcome (what the epilog writes into its AdminComment): the odd one out, the others not
  local odd j line
  odd=$(get /twins/three | json "[r['job_id'] for r in d['runs'] if r['run_id'] == d['first_divergence']['odd_run_id']][0]")
  for j in $(get /twins/three | json "' '.join(r['job_id'] for r in d['runs'])"); do
    line=$(LOCKSTEP_SERVER=http://127.0.0.1:$lsd_port "$tmp/bin/lockstep" job "$j" --summary)
    echo "job $j: $line" >>"$tmp/err"
    if [ "$j" = "$odd" ]; then
      case $line in "lockstep: three odd one out at step "*", hardware http"*) ;; *) return 1 ;; esac
    else
      [ "$line" = "lockstep: three matched the majority (job $odd is the odd one out) http://127.0.0.1:$lsd_port/#/twins/three" ] ||
        return 1
    fi
  done
}

check "16 lockstep-train jobs: 8 twin pairs, the fault fires on n3" t_pairs_run
check "the slurmctld epilog writes each job's outcome into its AdminComment (sacct, with slurmdbd)" t_epilog_comments
check "slurmstepd attested every run's rank placement (the plugin, not the job)" t_attested
check "n3 turns suspect (score >= 0.95); n1, n2, n4 stay ok" t_n3_suspect
check "lockstepd drains n3 in Slurm with a lockstep: reason" t_n3_drained_in_slurm
check "alerts: one per group, suspect n3 delivered to webhook, Slack, Alertmanager; mail to the user" t_alerts
check "nondeterministic twins: software, no node blamed" t_nondet_software
check "repair resumes n3 in Slurm (admin token required)" t_repair_resumes
check "the repair resolves n3's alerts: a resolution to webhook, Slack and Alertmanager each" t_repair_resolves
check "the epilog writes a twin that still runs: scontrol show job shows its group's outcome" t_epilog_running_twin
check "a three-run group with one faulty run (sbatch) names n3 (strong evidence); each job its own outcome" t_three_runs
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
    w = [x for x in a["deliveries"] if x["sink"] == "webhook" and x["phase"] == "firing"][0]
    a2d.append((ts(w["delivered_at"]) - ts(a["created_at"])) * 1000)
print('{"bench": "fleet_alerts", "groups": 8, "divergence_to_alert_p50_ms": %.1f, "divergence_to_alert_max_ms": %.1f, '
      '"alert_to_webhook_p50_ms": %.1f, "alert_to_webhook_max_ms": %.1f}'
      % (statistics.median(d2a), max(d2a), statistics.median(a2d), max(a2d)))
PY
check "lockstepd stops cleanly, every alert delivered" t_clean_stop

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

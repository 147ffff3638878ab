#!/usr/bin/env bash
# run.sh - the demo tier: a short `make demo` (lockstepd, 4-node Slurm, twin jobs) whose summary is checked.
# usage: tests/demo/run.sh BUILD_DIR      (ends with "N passed, N failed")
set -u
build=$(readlink -f "${1:-build}")
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/ls-demo-XXXXXX)
chmod 755 "$tmp"
trap '"$src/deploy/demo/stop.sh" "$tmp/demo" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
# No admin token from this machine's own shell or ~/.config/lockstep: the checks say where theirs comes from.
export HOME=$tmp/home
unset XDG_CONFIG_HOME LOCKSTEP_ADMIN_TOKEN LOCKSTEP_ADMIN_TOKEN_FILE
pass=0; fail=0
case $build in */san) export ASAN_OPTIONS=detect_leaks=0 ;; esac

if "$src/deploy/demo/demo.sh" -q -b "$build" -d "$tmp/demo" -s 12 >"$tmp/out" 2>&1; then
  pass=$((pass+1)); echo "ok   the demo's expectations hold (match, nondeterministic, faulty n3 at step 8, resume, one-off on n4, verdicts by replay, n3 suspect)"
else
  fail=$((fail+1)); echo "FAIL the demo"; sed 's/^/     /' "$tmp/out" | tail -40
fi
check_line() { # check_line NAME PATTERN: the printed summary has such a line
  if grep -Eq "$2" "$tmp/out"; then pass=$((pass+1)); echo "ok   $1"
  else fail=$((fail+1)); echo "FAIL $1: no line matching /$2/"; fi
}
check_line "summary: the deterministic pair matches" '^  demo-match +match +2 deterministic runs on n1 \| n2'
check_line "summary: the nondeterministic pair diverges" '^  demo-nondet +diverged +--nondeterministic .*first divergence at step'
check_line "summary: the faulty node is named" '^  demo-faulty +diverged +first divergence at step 8, .*odd one out runs on n3'
check_line "summary: the resumed run matches on its overlap" '^  demo-resume +match +resumed run compared on its overlap \(from step 11\)'
check_line "summary: the one-off group names n4" '^  demo-once +diverged +first divergence at step 8, .*odd one out runs on n4'
check_line "summary: n3 is the one suspect" '^  suspects +n3 \('
check_line "summary: the experiment's change is beyond the noise, first at step 2" '^  demo-exp +beyond-noise +--lr 2e-3 against the noise of 4 .*first effect at step 2, rank 0, "loss"'
check_line "verdict by replay: demo-faulty is persistent hardware on n3" '^    demo-faulty +persistent-hardware, node n3 \('
check_line "verdict by replay: demo-once is transient hardware on n4" '^    demo-once +transient-hardware, node n4 \('
check_line "verdict by replay: demo-nondet is software" '^    demo-nondet +software \('
check_line "summary: the dashboard URL" '^dashboard: +http://127\.0\.0\.1:[0-9]+/$'

# The services stay up after the demo: narrow its faulty group, and check twin's refusals.
if [ -f "$tmp/demo/port" ]; then
  export LOCKSTEP_SERVER=http://127.0.0.1:$(cat "$tmp/demo/port") SLURM_CONF=$tmp/demo/slurm/slurm.conf
  export LOCKSTEP_DEMO_TRAIN=$build/bin/lockstep-train
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
  ls=$build/bin/lockstep
  sub() { # sub NAME EXPECTED_EXIT PATTERN COMMAND...: exit code and a line of output
    local name=$1 want=$2 pat=$3; shift 3
    "$@" >"$tmp/o" 2>&1
    local got=$?
    if [ "$got" -eq "$want" ] && grep -Eq "$pat" "$tmp/o"; then pass=$((pass+1)); echo "ok   $name"
    else fail=$((fail+1)); echo "FAIL $name (exit $got, wanted $want; /$pat/)"; sed 's/^/     /' "$tmp/o" | tail -15; fi
  }
  # README.md's commands as written, after `. build/demo/env`: lockstep by PATH, the server from the env file.
  envrun() { env -u LOCKSTEP_SERVER -u SLURM_CONF bash -c '. "$0/env" && cd / && eval "$1"' "$tmp/demo" "$1"; }
  sub "the env file: lockstep twins demo-faulty" 1 '^replay verdict: persistent-hardware on n3' envrun "lockstep twins demo-faulty"
  sub "the env file: lockstep twins" 0 'demo-faulty' envrun "lockstep twins"
  sub "the env file: lockstep narrow demo-faulty --show" 0 '^verdict: persistent-hardware, node n3' envrun "lockstep narrow demo-faulty --show"
  sub "the env file: lockstep nodes" 0 '^n3 +suspect ' envrun "lockstep nodes"
  sub "the env file: lockstep node n3" 0 'involvement +demo-faulty' envrun "lockstep node n3"
  sub "the env file: lockstep compare" 1 'beyond-noise' envrun "lockstep compare demo-exp demo-exp.change --noise demo-exp.noise"
  # The env file points the CLI at the token's file, never at the token: jobs submitted from that shell carry its
  # environment. Admin commands still work from it.
  adm=$(cat "$tmp/demo/admin-token")
  sub "the env file holds no admin token, and exports none" 0 '^none$' \
    envrun "! grep -qF '$adm' '$tmp/demo/env' && ! env | grep -q '^LOCKSTEP_ADMIN_TOKEN=' && echo none"
  sub "the env file: an admin command (lockstep node n3 note)" 0 '^n3: suspect' \
    envrun "lockstep node n3 note 'looked at from the env file'"
  sub "the env file: lockstep narrow reaches lockstepd as admin" 2 'nothing to narrow' envrun "lockstep narrow demo-match"
  # No manifest of the demo's jobs (submitted from a shell set up like the env file) holds the admin token.
  sub "no run's manifest holds the admin token" 0 '^checked [1-9][0-9]* runs$' python3 - "$LOCKSTEP_SERVER" "$adm" <<'PY'
import json, sys, urllib.request
base, adm = sys.argv[1], sys.argv[2]
runs = json.load(urllib.request.urlopen(base + "/api/v1/runs?limit=1000", timeout=10))["items"]
for r in runs:
    body = urllib.request.urlopen(base + "/api/v1/runs/" + r["run_id"], timeout=10).read().decode()
    if adm in body or not json.loads(body)["manifests"]:
        sys.exit("run %s: %s" % (r["run_id"], "holds the admin token" if adm in body else "has no manifest"))
print("checked %d runs" % len(runs))
PY
  # The demo narrowed its groups; the verdict, the placements and the record are kept, with history.
  sub "narrow --show: the verdict on demo-faulty names n3" 0 '^verdict: persistent-hardware, node n3' \
    "$ls" narrow demo-faulty --show
  sub "narrow --show: the replays that ran on n3 reproduced it" 0 'odd-again +on n3 .*reproduced the divergence' \
    "$ls" narrow demo-faulty --show
  sub "narrow --show: the record named at step 8" 0 '^  step 8, rank [01], "allreduce\.in"' "$ls" narrow demo-faulty --show
  sub "twins shows the group's verdict by replay" 1 '^replay verdict: persistent-hardware on n3' "$ls" twins demo-faulty
  sub "narrow needs the admin token" 4 'admin token' "$ls" narrow demo-faulty
  sub "narrow refuses a group that matches" 2 'nothing to narrow' \
    "$ls" narrow demo-match --token-file "$tmp/demo/admin-token"
  sub "twin --spread refuses more copies than nodes" 2 'not enough nodes' \
    "$ls" twin -n 5 --spread -- sbatch -N1 "$src/deploy/demo/train.sh"
  sub "nodes lists n3 first, suspect" 0 '^n3 +suspect ' "$ls" nodes
  # lockstep-train's allreduce.out carries every rank's input fingerprint: the nondeterministic pair's
  # sum differs while its inputs matched, so it is software and n1, n2 get no evidence.
  sub "the nondeterministic pair blames no node" 0 '^n1 +ok +[^ ]+ +0 ' "$ls" nodes
  sub "node n3 shows its history" 0 'involvement +demo-faulty' "$ls" node n3
  sub "nodes --json is the server's document" 0 '"baseline"' "$ls" nodes --json
  sub "alerts list the divergences" 0 'divergence +open .*twin group demo-faulty' "$ls" alerts
  id=$("$ls" alerts --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["id"])')
  sub "alerts ack needs the admin token" 4 'HTTP 401' "$ls" alerts ack "$id"
  sub "alerts ack with the admin token" 0 "alert $id acknowledged" \
    "$ls" alerts ack "$id" --token-file "$tmp/demo/admin-token"
  sub "node note with the admin token" 0 '^n3: suspect' \
    "$ls" node n3 note "reseated the GPU" --token-file "$tmp/demo/admin-token"
  sub "node refuses an unknown action" 2 "unknown action" "$ls" node n3 reboot now
  sub "twin submits only with sbatch" 2 'twin submits with sbatch' "$ls" twin -n 2 -- srun true
  sub "twin submits N copies in one group" 0 '^twin group tw-check: 2 jobs' \
    "$ls" twin -n 2 --spread --group tw-check -- sbatch -N1 -n1 --lockstep=fp -o "$tmp/%j.out" "$src/deploy/demo/train.sh" --steps 3
  # README.md's own MPI program on the demo's cluster: its two lines stand in the README word for word, and run here
  # as they read there, from argument vectors (its build/ is this tier's build): an unmodified Fortran program's
  # twins, the MPI wrappers preloaded by the job, started by a plain srun. (A sanitized build's wrappers would need
  # the ASan runtime ahead of them in sbatch's own LD_PRELOAD: the plain build checks it.)
  readme_mpi() {
    local out g
    grep -qxF "printf '#!/bin/bash\\nsrun %q 20\\n' \"\$PWD/build/tests/apps/fortran_usempi\" > job.sh" "$src/README.md" &&
      grep -qF 'LD_PRELOAD=$PWD/build/lib/liblockstep_mpi.so lockstep twin -n 2 -- sbatch -n 2 --lockstep=det job.sh' \
        "$src/README.md" || { echo "README.md lost its MPI example"; return 1; }
    printf '#!/bin/bash\nsrun %q 20\n' "$build/tests/apps/fortran_usempi" >"$tmp/job.sh" || return 1
    out=$(cd "$tmp" && env \
      LD_PRELOAD="$build/lib/liblockstep_mpi.so" "$ls" twin -n 2 -- sbatch -n 2 --lockstep=det job.sh 2>&1) ||
      { echo "$out"; return 1; }
    g=$(sed -n 's/^twin group \([^:]*\): 2 jobs$/\1/p' <<<"$out")
    [ -n "$g" ] || { echo "$out"; return 1; }
    for _ in $(seq 120); do
      "$ls" twins "$g" >"$tmp/tw" 2>&1
      grep -Eq "^twin group $g: (match|diverged|incomplete)" "$tmp/tw" && break
      sleep 1
    done
    cat "$tmp/tw"
  }
  case $build in
    */san) ;;
    *) sub "README: an unmodified MPI program's twins on the demo's Slurm match" 0 '^twin group twin-.*: match' readme_mpi ;;
  esac
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# demo.sh - the whole system on one machine: lockstepd on an embedded PostgreSQL, a 4-node local Slurm
# with the SPANK plugin, and real twin jobs of lockstep-train; prints what matched, where each
# divergence is, which node is suspect, and the dashboard URL. Services stay up until demo-stop.
#
# usage: deploy/demo/demo.sh [-b BUILD_DIR] [-d DEMO_DIR] [-s STEPS] [-q]
#   -q  quick: fewer steps, exit code says whether every expectation held (used by the test tier)
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build
dir=$src/build/demo
steps=30
quick=0
while getopts "b:d:s:q" o; do
  case $o in
    b) build=$OPTARG ;;
    d) dir=$OPTARG ;;
    s) steps=$OPTARG ;;
    q) quick=1 ;;
    *) exit 2 ;;
  esac
done
build=$(readlink -f "$build")
ls=$build/bin/lockstep
say() { printf '%s\n' "$*"; }
die() { say "demo: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root: the local Slurm's slurmd starts job steps as their user"
for f in bin/lockstepd bin/lockstep bin/lockstep-train lib/liblockstep.so lib/spank_lockstep.so; do
  [ -e "$build/$f" ] || die "$build/$f is missing: run make first"
done

"$src/deploy/demo/stop.sh" "$dir" >/dev/null 2>&1
rm -rf "$dir"
mkdir -p "$dir"
dir=$(readlink -f "$dir")
chmod 755 "$dir" # the embedded PostgreSQL runs as postgres and must reach its state dir
t0=$(date +%s)

# --- lockstepd on an embedded PostgreSQL
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/secret"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/admin-token"
chmod 600 "$dir/secret" "$dir/admin-token"
port=8080
if ss -Htln "sport = :$port" 2>/dev/null | grep -q .; then port=0; fi
"$build/bin/lockstepd" --listen "127.0.0.1:$port" --port-file "$dir/port" --state-dir "$dir/lockstepd" \
  --secret "$dir/secret" --admin-token "$dir/admin-token" --log-file "$dir/lockstepd.log" \
  </dev/null >>"$dir/lockstepd.log" 2>&1 &
echo $! >"$dir/lockstepd.pid"
for _ in $(seq 300); do [ -s "$dir/port" ] && break; sleep 0.1; done
[ -s "$dir/port" ] || die "lockstepd did not start; see $dir/lockstepd.log"
url=http://127.0.0.1:$(cat "$dir/port")
export LOCKSTEP_SERVER=$url LOCKSTEP_ADMIN_TOKEN=$(cat "$dir/admin-token")
say "lockstepd   $url (embedded PostgreSQL in $dir/lockstepd)"

# --- a 4-node Slurm with the plugin
# lockstep-train records its own collectives through the API; the zero-code MPI wrappers
# (liblockstep_mpi.so) would also fingerprint its closing reduction of step timings, which
# differ from run to run by nature.
agent=$build/lib/liblockstep.so
"$src/deploy/slurm/up.sh" -d "$dir/slurm" -n 4 -p "$build/lib/spank_lockstep.so" \
  -a "server=$url secret=$dir/secret agent=$agent spool=$dir/spool" </dev/null >/dev/null 2>"$dir/slurm-up.log" ||
  die "the local Slurm did not start; see $dir/slurm-up.log"
export SLURM_CONF=$dir/slurm/slurm.conf
say "slurm       4 nodes n1-n4 ($dir/slurm), spank_lockstep.so in plugstack.conf"

# Jobs start from an environment without lockstep or determinism settings of this shell.
for v in $(compgen -e | grep -E '^(LOCKSTEP_(TRACE|MODE|RUN_ID|TWIN_GROUP|FAULT|START_STEP)|SLURM_JOB|NCCL_)'); do unset "$v"; done
export LOCKSTEP_DEMO_TRAIN=$build/bin/lockstep-train
job=$src/deploy/demo/train.sh
train=(--steps "$steps" --hidden 32 --batch 32)
# A sanitized build (make SAN=1) preloads an ASan agent into sanitized tasks: the ASan runtime
# must come first in their LD_PRELOAD, where the plugin keeps the user's own entries.
exp=()
case $build in */san)
  exp=(--export="ALL,LD_PRELOAD=$(gcc -print-file-name=libasan.so)")
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} ;;
esac

# --- the jobs
say ""
say "submitting twin jobs of lockstep-train ($steps steps, 2 ranks each):"
"$ls" twin -n 2 --spread --group demo-match -- sbatch "${exp[@]}" -N1 -n2 --lockstep=det -o "$dir/%j.out" "$job" "${train[@]}" |
  sed 's/^/  /'
"$ls" twin -n 2 --spread --group demo-nondet -- sbatch "${exp[@]}" -N1 -n2 --lockstep=det -o "$dir/%j.out" "$job" "${train[@]}" \
  --nondeterministic | sed 's/^/  /'
# A "GPU" on n3 flips bit 12 of a gradient at step 8 whenever a rank runs there. Three such
# three-run groups give the fleet enough evidence to turn n3 suspect.
for g in demo-faulty demo-faulty-2 demo-faulty-3; do
  LOCKSTEP_FAULT=node=n3,step=8,bit=12 "$ls" twin -n 3 --spread --group "$g" -- \
    sbatch "${exp[@]}" -N1 -n2 --lockstep=det -o "$dir/%j.out" "$job" "${train[@]}" | sed 's/^/  /'
done
# A run checkpointed every 10 steps, then a twin resumed from its step-20 checkpoint.
resume_at=$((steps * 2 / 3 / 10 * 10)); [ "$resume_at" -ge 10 ] || resume_at=10
full=$(sbatch "${exp[@]}" --parsable -N1 -n2 -w n4 --lockstep=det --lockstep-twin=demo-resume -o "$dir/%j.out" "$job" \
  "${train[@]}" --checkpoint-every 10 --checkpoint-dir "$dir/ckpt") || die "sbatch failed"
say "  job $full (demo-resume: $steps steps, checkpoints every 10 in $dir/ckpt)"

wait_jobs() { # wait_jobs SECONDS: until the queue is empty
  for _ in $(seq $(($1 * 5))); do
    [ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  return 1
}
wait_jobs 150 || die "jobs still queued after 150 s: squeue; logs in $dir"
ckpt=$(printf '%s/ckpt/step-%08d' "$dir" "$resume_at")
[ -f "$ckpt/COMPLETE" ] || die "no checkpoint at step $resume_at ($ckpt); see $dir/$full.out"
mkdir -p "$dir/resume" && cp -r "$ckpt" "$dir/resume/"
resumed=$(LOCKSTEP_START_STEP=$((resume_at + 1)) sbatch "${exp[@]}" --parsable -N1 -n2 -w n4 --lockstep=det \
  --lockstep-twin=demo-resume -o "$dir/%j.out" "$job" "${train[@]}" --resume "$dir/resume") || die "sbatch failed"
say "  job $resumed (demo-resume: resumed from step $resume_at)"
wait_jobs 60 || die "the resumed job is still queued after 60 s"

# --- wait for the comparisons to settle, then summarize
status_of() { "$ls" twins "$1" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null; }
for g in demo-match demo-nondet demo-faulty demo-faulty-2 demo-faulty-3 demo-resume; do
  for _ in $(seq 100); do [ "$(status_of $g)" != pending ] && break; sleep 0.2; done
done
# The suspect scores follow the divergences: give the fleet a moment to settle.
for _ in $(seq 50); do
  curl -s "$url/api/v1/nodes" | grep -q '"state": *"suspect"' && break
  sleep 0.2
done
say ""
say "== what Lockstep found ($(( $(date +%s) - t0 )) s)"
summary=$dir/summary.json
for g in demo-match demo-nondet demo-faulty demo-resume; do "$ls" twins "$g" --json >"$dir/$g.json" 2>/dev/null; done
"$ls" runs --limit 100 --json >"$dir/runs.json"
curl -s "$url/api/v1/nodes" >"$dir/nodes.json" 2>/dev/null
python3 - "$dir" "$resume_at" >"$summary" <<'PY'
import json, os, sys
d, resume_at = sys.argv[1], int(sys.argv[2])
runs = {r["run_id"]: r for r in json.load(open(os.path.join(d, "runs.json")))["items"]}
out = {}
for g in ("demo-match", "demo-nondet", "demo-faulty", "demo-resume"):
    t = json.load(open(os.path.join(d, g + ".json")))
    fd = t.get("first_divergence") or {}
    odd = fd.get("odd_run_id")
    out[g] = {"status": t["status"], "runs": len(t["runs"]),
              "nodes": sorted(r["nodes"] for r in t["runs"]),
              "step": fd.get("step"), "rank": fd.get("rank"), "record": fd.get("name"),
              "odd_node": runs[odd]["nodes"] if odd in runs else None,
              "start_steps": sorted(r.get("start_step", 0) for r in t["runs"])}
try:
    nodes = json.load(open(os.path.join(d, "nodes.json")))
    out["suspects"] = None if "error" in nodes else sorted(
        n["name"] for n in nodes.get("items", nodes.get("nodes", [])) if n.get("state") == "suspect")
except (OSError, ValueError):
    out["suspects"] = None
print(json.dumps(out))
PY
python3 - "$summary" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def line(g, text): print(f"  {g:<12} {s[g]['status']:<9} {text}")
m = s["demo-match"]; line("demo-match", f"{m['runs']} deterministic runs on {' | '.join(m['nodes'])}: bit-identical")
n = s["demo-nondet"]
line("demo-nondet", f"--nondeterministic reduction order: first divergence at step {n['step']}, rank {n['rank']}, "
     f"\"{n['record']}\" (software: it diverges wherever it runs)" if n["status"] == "diverged" else "no divergence seen")
f = s["demo-faulty"]
line("demo-faulty", f"first divergence at step {f['step']}, rank {f['rank']}, \"{f['record']}\"; odd one out runs on "
     f"{f['odd_node']} (its 'GPU' flips a bit)" if f["status"] == "diverged" else "no divergence seen")
r = s["demo-resume"]
line("demo-resume", f"resumed run compared on its overlap (from step {max(r['start_steps'])}): "
     + ("bit-identical" if r["status"] == "match" else "diverged"))
if s.get("suspects") is not None:
    print(f"  suspects     {', '.join(s['suspects']) or 'none'} (after 3 faulty three-run groups: "
          "lockstep nodes, lockstep node n3)")
PY
say ""
say "dashboard:  $url/"
say "try:        LOCKSTEP_SERVER=$url $ls twins demo-faulty"
say "            LOCKSTEP_SERVER=$url SLURM_CONF=$SLURM_CONF $ls narrow demo-faulty"
say "stop with:  make demo-stop"

if [ "$quick" = 1 ]; then # the expectations the test tier checks
  python3 - "$summary" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ok = (s["demo-match"]["status"] == "match" and s["demo-nondet"]["status"] == "diverged"
      and s["demo-faulty"]["status"] == "diverged" and s["demo-faulty"]["odd_node"] == "n3"
      and s["demo-faulty"]["step"] == 8 and s["demo-resume"]["status"] == "match"
      and s["suspects"] == ["n3"])
sys.exit(0 if ok else 1)
PY
fi

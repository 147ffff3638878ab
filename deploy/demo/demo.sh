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
# The CLI reads the admin token from its file: a token in an exported variable would ride along in every job.
export LOCKSTEP_SERVER=$url LOCKSTEP_ADMIN_TOKEN_FILE=$dir/admin-token
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
# The simulated faulty "GPU" belongs to node n3: every task that starts there, whoever submitted it (replays
# included), flips bit 12 of a gradient at step 8 (the cluster's TaskProlog exports n3's own environment).
"$src/deploy/slurm/node-env.sh" "$dir/slurm" n3 LOCKSTEP_FAULT=node=n3,step=8,bit=12 ||
  die "cannot give n3 its faulty GPU"
say "n3          its GPU flips bit 12 of a gradient at step 8 in every job ($dir/slurm/nodes/n3/env)"

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
# Three three-run groups spread over n1-n3: the run on n3 meets its GPU. Three of them give the fleet
# enough evidence to turn n3 suspect.
for g in demo-faulty demo-faulty-2 demo-faulty-3; do
  "$ls" twin -n 3 --spread --group "$g" -- \
    sbatch "${exp[@]}" -N1 -n2 --lockstep=det -o "$dir/%j.out" "$job" "${train[@]}" | sed 's/^/  /'
done
# An experiment: a baseline, a change (a doubled learning rate) and 4 noise replicas (--nondeterministic), to
# judge the change against run-to-run noise (lockstep compare).
"$ls" twin -n 1 --spread --group demo-exp --change --lr=2e-3 --noise 4 --noise-arg --nondeterministic -- \
  sbatch "${exp[@]}" -N1 -n2 --lockstep=det -o "$dir/%j.out" "$job" "${train[@]}" | sed 's/^/  /'
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

# A one-off: the next task that starts on n4 flips a bit at step 8, and no task after it (a cosmic ray, not a
# bad GPU). A three-run group away from n3 takes it.
"$src/deploy/slurm/node-env.sh" "$dir/slurm" n4 --once LOCKSTEP_FAULT=node=n4,step=8,bit=12 ||
  die "cannot arm the one-off fault on n4"
"$ls" twin -n 3 --spread --exclude n3 --group demo-once -- \
  sbatch "${exp[@]}" -N1 -n2 --lockstep=det -o "$dir/%j.out" "$job" "${train[@]}" | sed 's/^/  /'
wait_jobs 60 || die "the one-off group is still queued after 60 s"
[ -e "$dir/slurm/nodes/n4/once.env" ] && die "no task on n4 took the one-off fault; see $dir"

# --- wait for the comparisons to settle, then summarize
status_of() { "$ls" twins "$1" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null; }
for g in demo-match demo-nondet demo-faulty demo-faulty-2 demo-faulty-3 demo-resume demo-once demo-exp.noise; do
  for _ in $(seq 100); do [ "$(status_of $g)" != pending ] && break; sleep 0.2; done
done
# The suspect scores follow the divergences: give the fleet a moment to settle.
for _ in $(seq 50); do
  curl -s "$url/api/v1/nodes" | grep -q '"state": *"suspect"' && break
  sleep 0.2
done

# --- verdicts by replay: lockstep narrow re-runs each diverged group's window on chosen nodes
# (the replays need MPI on loopback too; a sanitized build's tasks need the ASan runtime first)
say ""
say "replaying the diverged groups (lockstep narrow):"
mkdir -p "$dir/narrow"
for g in demo-faulty demo-once demo-nondet; do
  t1=$(date +%s%N)
  env OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp \
    ${exp:+LD_PRELOAD=$(gcc -print-file-name=libasan.so)} \
    "$ls" narrow "$g" --json --timeout 300 --output "$dir/narrow" >"$dir/$g.narrow.json" 2>"$dir/$g.narrow.log"
  say "  $g: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"] + (", node " + d["node"] if d.get("node") else "") + " (%d replays)" % len(d["placements"]))' "$dir/$g.narrow.json" 2>/dev/null || echo "no verdict; see $dir/$g.narrow.log") in $(( ($(date +%s%N) - t1) / 1000000 )) ms"
done

say ""
say "== what Lockstep found ($(( $(date +%s) - t0 )) s)"
summary=$dir/summary.json
for g in demo-match demo-nondet demo-faulty demo-resume demo-once; do "$ls" twins "$g" --json >"$dir/$g.json" 2>/dev/null; done
# The change against the noise, and the demo's nondeterministic pair (replicas of the same noise) against it too.
for _ in $(seq 50); do # until every run's last batch is in (a run still streaming covers fewer steps: exit 2)
  "$ls" compare demo-exp demo-exp.change --noise demo-exp.noise --json >"$dir/demo-exp.json" 2>"$dir/demo-exp.err"
  [ $? -le 1 ] && break
  sleep 0.2
done
"$ls" compare demo-exp demo-nondet --noise demo-exp.noise --json >"$dir/demo-exp-nondet.json" 2>>"$dir/demo-exp.err"
"$ls" runs --limit 100 --json >"$dir/runs.json"
curl -s "$url/api/v1/nodes" >"$dir/nodes.json" 2>/dev/null
python3 - "$dir" "$resume_at" >"$summary" <<'PY'
import json, os, sys
d, resume_at = sys.argv[1], int(sys.argv[2])
runs = {r["run_id"]: r for r in json.load(open(os.path.join(d, "runs.json")))["items"]}
out = {}
for g in ("demo-match", "demo-nondet", "demo-faulty", "demo-resume", "demo-once"):
    t = json.load(open(os.path.join(d, g + ".json")))
    fd = t.get("first_divergence") or {}
    odd = fd.get("odd_run_id")
    out[g] = {"status": t["status"], "runs": len(t["runs"]),
              "nodes": sorted(r["nodes"] for r in t["runs"]),
              "step": fd.get("step"), "rank": fd.get("rank"), "record": fd.get("name"),
              "odd_node": runs[odd]["nodes"] if odd in runs else None,
              "start_steps": sorted(r.get("start_step", 0) for r in t["runs"])}
    try:
        n = json.load(open(os.path.join(d, g + ".narrow.json")))
        out[g]["narrow"] = {"verdict": n.get("verdict"), "node": n.get("node"), "reason": n.get("reason"),
                            "replays": len(n.get("placements", [])), "elapsed_s": n.get("elapsed_s")}
    except (OSError, ValueError):
        out[g]["narrow"] = None
for name in ("demo-exp", "demo-exp-nondet"):
    try:
        c = json.load(open(os.path.join(d, name + ".json")))
        fe = c.get("first_effect") or {}
        out[name] = {"verdict": c["verdict"], "step": fe.get("step"), "rank": fe.get("rank"), "record": fe.get("name"),
                     "noise": len((c.get("noise") or {}).get("runs", [])),
                     "metrics": {m["name"]: m["verdict"] for m in c["metrics"]}}
    except (OSError, ValueError, KeyError):
        out[name] = None
try:
    nodes = json.load(open(os.path.join(d, "nodes.json")))
    out["suspects"] = None if "error" in nodes else sorted(
        n["name"] for n in nodes.get("items", []) if n.get("state") == "suspect")
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
o = s["demo-once"]
line("demo-once", f"first divergence at step {o['step']}, rank {o['rank']}, \"{o['record']}\"; odd one out runs on "
     f"{o['odd_node']} (a one-off bit flip there)" if o["status"] == "diverged" else "no divergence seen")
r = s["demo-resume"]
line("demo-resume", f"resumed run compared on its overlap (from step {max(r['start_steps'])}): "
     + ("bit-identical" if r["status"] == "match" else "diverged"))
print("  verdicts by replay (lockstep narrow GROUP: the diverging window re-run on chosen nodes):")
for g in ("demo-faulty", "demo-once", "demo-nondet"):
    n = s[g].get("narrow")
    if not n:
        print(f"    {g:<12} no verdict")
        continue
    what = n["verdict"] + (f", node {n['node']}" if n.get("node") else "")
    print(f"    {g:<12} {what} ({n['replays']} replays, {n['elapsed_s']:.1f} s): {n['reason']}")
e, n = s.get("demo-exp"), s.get("demo-exp-nondet")
if e:
    print(f"  {'demo-exp':<12} {e['verdict']:<9} --lr 2e-3 against the noise of {e['noise']} --nondeterministic replicas: "
          f"first effect at step {e['step']}, rank {e['rank']}, \"{e['record']}\"")
if n:
    print(f"  {'':<12} {n['verdict']:<9} the demo-nondet pair against the same noise (replicas of it, so within)")
if s.get("suspects") is not None:
    print(f"  suspects     {', '.join(s['suspects']) or 'none'} (after 3 faulty three-run groups: "
          "lockstep nodes, lockstep node n3)")
PY
say ""
say "dashboard:  $url/"
# The shell environment to explore the demo with (README.md): the lockstep command on PATH, pointed at this
# lockstepd and this Slurm, and at the file of the demo's admin token (mode 0600), never the token itself: jobs
# submitted from that shell carry its environment.
cat >"$dir/env" <<ENV
# . $dir/env - the demo's lockstepd and Slurm for this shell, and the lockstep command on PATH (written by make demo)
export PATH="$build/bin:\$PATH"
export LOCKSTEP_SERVER=$url
export SLURM_CONF=$SLURM_CONF
export LOCKSTEP_ADMIN_TOKEN_FILE=$dir/admin-token
unset LOCKSTEP_ADMIN_TOKEN
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
ENV
chmod 600 "$dir/env"
say "explore:    . $dir/env     (lockstep on PATH, pointed at this demo)"
say "            lockstep twins;  lockstep twins demo-faulty;  lockstep narrow demo-faulty --show"
say "            lockstep nodes;  lockstep node n3;  lockstep alerts"
say "            lockstep compare demo-exp demo-exp.change --noise demo-exp.noise"
say "            lockstep narrow demo-faulty     (replays its window again on the demo's Slurm)"
say "            $url/#/compare?base=demo-exp&changed=demo-exp.change&noise=demo-exp.noise"
say "stop with:  make demo-stop"

if [ "$quick" = 1 ]; then # the expectations the test tier checks
  python3 - "$summary" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
v = lambda g: ((s[g].get("narrow") or {}).get("verdict"), (s[g].get("narrow") or {}).get("node"))
ok = (s["demo-match"]["status"] == "match" and s["demo-nondet"]["status"] == "diverged"
      and s["demo-faulty"]["status"] == "diverged" and s["demo-faulty"]["odd_node"] == "n3"
      and s["demo-faulty"]["step"] == 8 and s["demo-resume"]["status"] == "match"
      and s["demo-once"]["status"] == "diverged" and s["demo-once"]["odd_node"] == "n4"
      and v("demo-faulty") == ("persistent-hardware", "n3") and v("demo-once") == ("transient-hardware", "n4")
      and v("demo-nondet") == ("software", None)
      and s["suspects"] == ["n3"]
      and (s.get("demo-exp") or {}).get("verdict") == "beyond-noise" and s["demo-exp"]["step"] == 2
      and s["demo-exp"]["record"] == "loss")
sys.exit(0 if ok else 1)
PY
fi

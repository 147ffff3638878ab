#!/usr/bin/env python3
"""check_run.py - compare what lockstepd stored for a run with the local trace files: same records, once each.

usage: check_run.py SERVER_URL JOB_ID TRACE_DIR RANKS [--lockstep BIN]
Prints one line per rank; exits 1 on any difference (missing, doubled or different records, missing manifest).
"""
import json
import subprocess
import sys
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=20) as r:
        return json.loads(r.read().decode())


def main():
    server, job, trace_dir, ranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    lockstep = sys.argv[sys.argv.index("--lockstep") + 1] if "--lockstep" in sys.argv else "lockstep"
    runs = [r for r in get(f"{server}/api/v1/runs?job={job}&limit=1000")["items"] if r["job_id"] == job]
    if len(runs) != 1:
        print(f"FAIL job {job}: {len(runs)} runs on the server, want 1")
        return 1
    run = runs[0]
    detail = get(f"{server}/api/v1/runs/{run['run_id']}")
    manifests = {m["rank"] for m in detail.get("manifests", [])}
    bad = 0
    for rank in range(ranks):
        local = subprocess.run([lockstep, "dump", f"{trace_dir}/rank-{rank:05d}.lstrace"], capture_output=True,
                               text=True, check=True).stdout.splitlines()
        # consensus digests are not records: lockstepd keeps them apart (common/record.h, REC_CONSENSUS_DIGEST)
        want = [r for r in map(json.loads, local) if r["name"] != "consensus.digest"]
        got = get(f"{server}/api/v1/runs/{run['run_id']}/records?rank={rank}&limit=100000")["items"]
        key = lambda r: (r["seq"], r["step"], r["name"], r["occurrence"], r["fp"], tuple(r.get("shape", [])))
        w = sorted(map(key, want))
        g = sorted(map(key, got))
        seqs = [r["seq"] for r in got]
        doubled = len(seqs) - len(set(seqs))
        if w != g or doubled:
            missing = len(set(w) - set(g))
            print(f"FAIL rank {rank}: trace {len(w)} records, server {len(g)} ({missing} missing, {doubled} doubled)")
            bad = 1
        elif rank not in manifests:
            print(f"FAIL rank {rank}: no manifest on the server")
            bad = 1
        else:
            print(f"ok   rank {rank}: {len(g)} records on the server equal the trace")
    print(f"run {run['run_id']} status {run['status']}")
    return bad


if __name__ == "__main__":
    sys.exit(main())

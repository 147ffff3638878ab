#!/usr/bin/env python3
"""findings.py - wait for a twin group's findings on lockstepd and print the fields the tiers check.

usage: findings.py SERVER_URL GROUP RANKS [--timeout S]
Waits until the group is no longer pending and, when it diverged, until RANKS ranks have their divergence
(the comparison has settled); prints one line of JSON:
  {"status", "cause", "origin_ranks", "rank", "occurrence", "name", "site", "suggest_ignore", "configuration",
   "per_rank", "exits"}
Exits 1 when the group stays pending or unknown.
"""
import json
import sys
import time
import urllib.error
import urllib.request


def main():
    server, group, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timeout = float(sys.argv[sys.argv.index("--timeout") + 1]) if "--timeout" in sys.argv else 30
    deadline = time.time() + timeout
    d = None
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{server}/api/v1/twins/{group}", timeout=10) as r:
                d = json.loads(r.read().decode())
        except urllib.error.HTTPError:
            d = None
        if d and d["status"] != "pending" and (d["status"] != "diverged" or len(d["per_rank"]) >= ranks):
            break
        time.sleep(0.2)
    if not d:
        print(json.dumps({"status": "unknown"}))
        return 1
    f = d.get("first_divergence") or {}
    site = f.get("site") or {}
    print(json.dumps({
        "status": d["status"], "reason": d.get("status_reason"), "cause": f.get("cause"),
        "origin_ranks": f.get("origin_ranks"), "rank": f.get("rank"), "occurrence": f.get("occurrence"),
        "name": f.get("name"), "site": site.get("text"), "function": site.get("function"), "caller": site.get("caller"),
        "suggest_ignore": f.get("suggest_ignore"), "configuration": f.get("configuration"),
        "per_rank": len(d.get("per_rank", [])), "exits": [r.get("exit_code") for r in d["runs"]],
        "run_status": [r["status"] for r in d["runs"]]}, sort_keys=True))
    return 0 if d["status"] != "pending" else 1


if __name__ == "__main__":
    sys.exit(main())

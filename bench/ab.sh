#!/usr/bin/env bash
# ab.sh - two builds side by side in one run: each bench of each build in turn, rounds alternating which goes first;
# one JSON line per bench with each figure's median for both builds, their ratio (new / old) and every run's
# figure (old_runs, new_runs: how far apart the runs of one build are says how much of the ratio is noise).
#
# usage: bench/ab.sh OLD_BUILD NEW_BUILD [ROUNDS] [BENCH ...]
#   OLD_BUILD, NEW_BUILD: build directories (each holds bin/lockstepd and bench/<name>/<name>); ROUNDS: 3 by default;
#   BENCH: ingest and api by default (any bench/<name>/<name> binary that prints one JSON line), each run with its
#   defaults (to give a bench options, run it by hand).
# Why alternate: these machines are shared, and load drifts over minutes; a figure is compared only with the other
# build's figure of the same round's neighbourhood, never with last week's.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_BUILD NEW_BUILD [ROUNDS] [BENCH ...]" >&2
    exit 2
fi
old=$(cd "$1" && pwd) || exit 2
new=$(cd "$2" && pwd) || exit 2
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(ingest api)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for b in "${benches[@]}"; do
    for side in old new; do
        dir=${!side}
        if [ ! -x "$dir/bench/$b/$b" ] || [ ! -x "$dir/bin/lockstepd" ]; then
            echo "ab.sh: $dir has no bench/$b/$b or bin/lockstepd: build it with make first" >&2
            exit 2
        fi
    done
done

for ((r = 0; r < rounds; r++)); do
    for b in "${benches[@]}"; do
        order=(old new)
        [ $((r % 2)) -eq 1 ] && order=(new old)
        for side in "${order[@]}"; do
            dir=${!side}
            if ! LOCKSTEP_BUILD=$dir "$dir/bench/$b/$b" >>"$out/$b.$side" 2>>"$out/$b.$side.err"; then
                echo "ab.sh: $b of the $side build ($dir) failed in round $((r + 1)); its stderr:" >&2
                tail -20 "$out/$b.$side.err" >&2
                exit 1
            fi
        done
    done
done

python3 - "$out" "$old" "$new" "$rounds" "${benches[@]}" <<'PY'
import json, statistics, sys
out, old, new, rounds, benches = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
for b in benches:
    sides = {}
    for side in ("old", "new"):
        with open("%s/%s.%s" % (out, b, side)) as f:
            sides[side] = [json.loads(l) for l in f if l.startswith("{")]
    line = {"bench": "ab", "of": b, "ab_rounds": rounds, "old": old, "new": new}
    for k, v in sides["old"][0].items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        o = statistics.median(x[k] for x in sides["old"] if k in x)
        n = statistics.median(x[k] for x in sides["new"] if k in x)
        line[k] = {"old": o, "new": n, "ratio": round(n / o, 3) if o else None,
                   "old_runs": [x.get(k) for x in sides["old"]], "new_runs": [x.get(k) for x in sides["new"]]}
    print(json.dumps(line))
PY

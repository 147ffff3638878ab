#!/usr/bin/env bash
# bench-watch.sh - run bench_watch.py (lockstep.torch overhead by level) and bench_replicas.py (a replica check of every parameter against a training step) with Debian's python3 and the build tree's library.
src=$(cd "$(dirname "$0")/../.." && pwd)
export LOCKSTEP_BUILD=${LOCKSTEP_BUILD:-$src/build} PYTHONDONTWRITEBYTECODE=1
/usr/bin/python3 "$src/tests/python/bench_watch.py" || exit 1
exec /usr/bin/python3 "$src/tests/python/bench_replicas.py"

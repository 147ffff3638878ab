#!/usr/bin/env bash
# run.sh - the fuzz tier: run each libFuzzer target briefly (FUZZ_SECONDS, default 15) from its seed corpus:
# fuzz_batch (lockstepd's ingest decoders) and fuzz_text (trace windows, fault specs, lockstepd config lines, request targets, node lists, sanitized text).
# usage: tests/fuzz/run.sh BUILD_DIR   (ends with "N passed, N failed")
set -u
build=${1:-build}
secs=${FUZZ_SECONDS:-15}
pass=0; fail=0
if [ ! -x "$build/tests/fuzz/fuzz_batch" ]; then
  echo "fuzz: $build/tests/fuzz/fuzz_batch not built (clang with libFuzzer missing?)"
  echo "0 passed, 1 failed"
  exit 1
fi
for t in "$build"/tests/fuzz/fuzz_*; do
  case "$t" in *.o|*.d) continue ;; esac
  name=$(basename "$t")
  work=$(mktemp -d /tmp/lsfuzz.XXXXXX)
  mkdir -p "$work/corpus"
  "$build/tests/fuzz/seeds" "$work/corpus" "$name" || { fail=$((fail+1)); continue; }
  if (cd "$work" && "$OLDPWD/$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 \
        corpus >"$work/log" 2>&1); then
    echo "fuzz: $name ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$') runs in ${secs}s)"
    pass=$((pass+1)); rm -rf "$work"
  else
    echo "fuzz: $name FAILED; crash input and log kept in $work"; tail -30 "$work/log"
    fail=$((fail+1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

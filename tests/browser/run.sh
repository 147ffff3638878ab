#!/usr/bin/env bash
# run.sh - browser tier: lockstepd with its embedded PostgreSQL on a free port, real runs ingested through
# the API, then node's test runner driving headless Chromium through the dashboard. usage: run.sh BUILD_DIR
set -u
B=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cd "$SRC"
fail() { echo "browser: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

[ -x "$B/bin/lockstepd" ] || fail "no $B/bin/lockstepd; run make first"
[ -f web/vendor/uPlot.iife.min.js ] || fail "uPlot is not vendored into web/vendor; run make first"
[ -x /usr/bin/chromium ] || fail "no /usr/bin/chromium; run deploy/install-deps.sh"
[ -d web/node_modules/playwright-core ] || fail "no web/node_modules; run deploy/install-deps.sh (npm ci in web/)"

tmp=$(mktemp -d /tmp/lockstep-browser.XXXXXX)
chmod 755 "$tmp"   # the embedded PostgreSQL runs as postgres and must reach its data dir below
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export LOCKSTEP_ADMIN_TOKEN="browser-admin-$$-$RANDOM"
printf '%s\n' "$LOCKSTEP_ADMIN_TOKEN" > "$tmp/admin-token"
"$B/bin/lockstepd" --listen "127.0.0.1:$port" --state-dir "$tmp/state" --web-dir web \
  --admin-token "$tmp/admin-token" 2>"$tmp/lockstepd.log" &
pid=$!
export LOCKSTEP_URL="http://127.0.0.1:$port"
up=0
for _ in $(seq 1 300); do
  if node -e "fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" "$LOCKSTEP_URL/api/v1/health"; then up=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
[ "$up" = 1 ] || { tail -20 "$tmp/lockstepd.log" >&2; fail "lockstepd did not come up on $LOCKSTEP_URL"; }

export LOCKSTEP_BUILD="$B" LOCKSTEP_FIXTURES="$tmp/fixtures.json" LOCKSTEP_SHOTS="$B/screenshots"
node tests/browser/setup.mjs "$LOCKSTEP_FIXTURES" || { tail -20 "$tmp/lockstepd.log" >&2; fail "ingesting the test runs failed"; }

node --test --test-concurrency=1 --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tmp/tap" tests/browser/*.test.mjs
rc=$?
pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tmp/tap" | tail -1)
failed=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tmp/tap" | tail -1)
[ "$rc" -ne 0 ] && tail -30 "$tmp/lockstepd.log" >&2
echo "screenshots: $B/screenshots"
echo "${pass:-0} passed, ${failed:-1} failed"
[ "$rc" -eq 0 ]

#!/usr/bin/env bash
# run.sh - the SQL tier: SQL that restates a C rule, run against that rule's case table (tests/data/) on a private
# PostgreSQL (each cmocka binary starts its own cluster), the step digests as the batch write packs them and the
# views add them up (test_step_packs), the settings of lockstepd's sessions (test_db_session), and the checks of
# the sql/ split (sql/README.md).
# usage: tests/sql/run.sh BUILD_DIR   (ends with "N passed, N failed", counting cmocka tests)
set -u
build=${1:-build}
export LOCKSTEP_BUILD=$build LOCKSTEP_SRC=${LOCKSTEP_SRC:-$(pwd)}
pass=0; fail=0
for t in "$build"/tests/sql/test_*; do
  case "$t" in *.o|*.d) continue ;; esac
  if [ ! -x "$t" ]; then echo "sql: $t is not executable"; fail=$((fail + 1)); continue; fi
  out=$("$t" 2>&1); rc=$?
  echo "$out"
  p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # a crash or a failed group setup
  pass=$((pass + p)); fail=$((fail + f))
done
# The split's checks (server/store/gen-migrations.sh --check, run by make): the tree passes them, and each
# refuses what it is for, planted in a copy.
gen=server/store/gen-migrations.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # check WANT WHAT MIGRATION... -- FUNCTIONS...: WANT 0 = accepted, 1 = refused
  want=$1 what=$2; shift 2
  if "$gen" --check "$@" 2>"$tmp/err"; then got=0; else got=1; fi
  if [ "$got" -eq "$want" ]; then echo "ok   $what"; pass=$((pass + 1))
  else echo "FAIL $what"; cat "$tmp/err"; fail=$((fail + 1)); fi
}
migs=$(ls sql/migrations/*.sql) funcs=$(ls sql/functions/*.sql)
check 0 "sql/: no migration defines or calls a function, each function is defined once" $migs -- $funcs
printf 'CREATE OR REPLACE FUNCTION lockstep_x() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n' >"$tmp/900_def.sql"
check 1 "a migration that defines a function is refused" $migs "$tmp/900_def.sql" -- $funcs
printf 'UPDATE runs SET nodes = lockstep_x(nodes);\n' >"$tmp/901_call.sql"
check 1 "a migration that calls a function is refused" $migs "$tmp/901_call.sql" -- $funcs
cp sql/functions/nodes.sql "$tmp/nodes_again.sql"
check 1 "a function defined twice in sql/functions/ is refused" $migs -- $funcs "$tmp/nodes_again.sql"
printf 'CREATE TABLE t (a int);\n' >"$tmp/table.sql"
check 1 "a table in sql/functions/ is refused" $migs -- $funcs "$tmp/table.sql"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

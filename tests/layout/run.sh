#!/usr/bin/env bash
# run.sh - layout tier: lockstepd's folders keep their layers and no module includes its way into a cycle.
#
# Layers, lowest first: server/core -> server/rules (pure rules) -> server/store, server/http -> server/peers (the
# instances on one database: leases, forwards) -> server/twins (twin comparison), server/consensus (a run against
# itself), server/alerts (the outbox) -> server/replay (replay experiments), server/effect (the effect check's
# reads) -> server/fleet (suspects) ->
# server/api -> server/main.c. A file may include headers of its own folder and of lower layers only (folders of
# one rank sit side by side and include neither each other). common/ and include/ are below everything.
# A module is a .c with its .h; module A depends on B when A.c or A.h includes B.h, or A.c names a function B.c
# defines; the dependency graph has no cycle.
# A header serves one .c (its own), unless it is an *_int.h shared inside its folder. server/rules/ is pure.
# server/api/ holds handlers only: no SQL text, no database call.
# Across the whole tree, no function is defined and never referenced (tests/layout/unreferenced.py), the
# JavaScript of web/js and tests/browser passes eslint (web/eslint.config.js), and the commit-msg hook judges its
# cases right. No function of server/ is longer than 100 lines (its body, from the `{` at column 0 to the `}` at
# column 0).
# usage: run.sh [BUILD_DIR]  (the build dir is not needed; the sources are read). Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
python3 - "$@" <<'PY'
import os, re, sys

RANK = {"core": 0, "rules": 1, "store": 2, "http": 2, "peers": 3, "twins": 4, "consensus": 4, "alerts": 4,
        "replay": 5, "effect": 5, "fleet": 6, "api": 7, "main": 8}
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
passed = failed = 0

def layer(path):
    """The layer name of a file under server/ (main.c is its own), or None outside server/."""
    parts = path.split("/")
    if parts[0] != "server":
        return None
    return "main" if len(parts) == 2 else parts[1]

files = []
for root, _, names in os.walk("server"):
    for n in names:
        if n.endswith((".c", ".h")):
            files.append(os.path.join(root, n))

# 1. every folder is a known layer
unknown = sorted({layer(f) for f in files} - set(RANK))
if unknown:
    print("FAIL server/ holds folders that are no layer: %s (add them to RANK with their place)" % ", ".join(unknown))
    failed += 1
else:
    passed += 1
    print("ok   every folder of server/ is a layer: %s" % ", ".join(sorted(RANK, key=RANK.get)))

# 2. no include reaches a higher layer, nor a sibling of the same rank
bad = []
deps = {}
for f in files:
    src = open(f, encoding="utf-8").read()
    me = layer(f)
    mod = f[:-2]
    for h in inc.findall(src):
        if not h.startswith("server/"):
            continue
        if not os.path.exists(h):
            bad.append("%s includes %s, which does not exist" % (f, h))
            continue
        other = layer(h)
        if other != me and (RANK[other] > RANK[me] or RANK[other] == RANK[me]):
            bad.append("%s (%s) includes %s (%s)" % (f, me, h, other))
        if h[:-2] != mod:
            deps.setdefault(mod, set()).add(h[:-2])
if bad:
    failed += 1
    print("FAIL a lower layer includes a higher one (or a sibling):")
    for b in bad:
        print("       " + b)
else:
    passed += 1
    print("ok   no file of server/ includes a higher layer or a sibling layer (%d files)" % len(files))

# 3. no cycle among modules. A module also depends on the module whose .c defines a function it names (calls, or
# passes as a callback): a loop of calls through an *_int.h header, or through a header of the caller's own, shows
# no include cycle, yet still ties the two .c files into one. Comments and strings are blanked first.
def code_of(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
defn = re.compile(r'^(?!static\b)[A-Za-z_][\w \t*]*?\b(\w+)\s*\([^;{]*\)\s*\{', re.M)
code = {f: code_of(open(f, encoding="utf-8").read()) for f in files if f.endswith(".c")}
owner = {}
for f, text in code.items():
    for m in defn.finditer(text):
        owner.setdefault(m.group(1), f[:-2])
for f, text in code.items():
    for name in set(re.findall(r'\b([A-Za-z_]\w*)\b', text)):
        o = owner.get(name)
        if o and o != f[:-2]:
            deps.setdefault(f[:-2], set()).add(o)
state, stack, cycle = {}, [], None
def visit(m):
    global cycle
    state[m] = 1
    stack.append(m)
    for d in sorted(deps.get(m, ())):
        if cycle:
            return
        if state.get(d) == 1:
            cycle = stack[stack.index(d):] + [d]
            return
        if not state.get(d):
            visit(d)
    stack.pop()
    state[m] = 2
for m in sorted(deps):
    if not state.get(m) and not cycle:
        visit(m)
if cycle:
    failed += 1
    print("FAIL a cycle of includes or calls: " + " -> ".join(cycle))
else:
    passed += 1
    print("ok   no include or call cycle among %d modules" % len({f[:-2] for f in files}))

# 4. a header serves one .c: X.h declares functions X.c defines (an *_int.h, what the modules of its folder share:
# functions defined in its folder); a header without its .c is an *_int.h, or holds macros only (limits.h).
# Prototypes are read at the left margin, as every server header writes them.
proto = re.compile(r'^(?!typedef\b|static\b|#)[A-Za-z_][\w \t*]*?\b(\w+)\s*\([^;{)]*(\([^)]*\)[^;{)]*)*\)'
                   r'\s*(__attribute__\s*\(\(.*?\)\))?\s*;', re.M)
astray, checked = [], 0
for h in sorted(f for f in files if f.endswith(".h")):
    text = code_of(open(h, encoding="utf-8").read())
    internal = h.endswith("_int.h")
    if not internal and not os.path.exists(h[:-2] + ".c"):
        rest = [l for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#")]
        if rest:
            astray.append("%s has no %s.c and is no *_int.h" % (h, os.path.basename(h[:-2])))
    for m in proto.finditer(text):
        checked += 1
        o = owner.get(m.group(1))
        if internal and (not o or os.path.dirname(o) != os.path.dirname(h)):
            astray.append("%s declares %s, defined %s" % (h, m.group(1), "in " + o + ".c" if o else "nowhere"))
        elif not internal and o != h[:-2]:
            astray.append("%s declares %s, defined %s" % (h, m.group(1), "in " + o + ".c" if o else "nowhere"))
if astray:
    failed += 1
    print("FAIL a header serves other .c files than its own:")
    for a in astray:
        print("       " + a)
else:
    passed += 1
    print("ok   each header serves its own .c, or is an *_int.h of its folder (%d prototypes)" % checked)

# 5. the pure rules stay pure: server/rules/ includes no libpq, Jansson, libcurl nor libmicrohttpd, and of the
# server only core/ headers that do no I/O (limits.h, xalloc.h)
sysinc = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
impure = []
for f in sorted(f for f in files if layer(f) == "rules"):
    src = open(f, encoding="utf-8").read()
    for h in sysinc.findall(src):
        if h.split("/")[0] in ("libpq-fe.h", "jansson.h", "curl", "microhttpd.h", "pthread.h"):
            impure.append("%s includes <%s>" % (f, h))
    for h in inc.findall(src):
        if h.startswith("server/") and layer(h) != "rules" and h not in ("server/core/limits.h", "server/core/xalloc.h"):
            impure.append("%s includes %s" % (f, h))
if impure:
    failed += 1
    print("FAIL server/rules/ is not pure:")
    for i in impure:
        print("       " + i)
else:
    passed += 1
    print("ok   server/rules/ is pure (no libpq, Jansson, libcurl, libmicrohttpd, threads; of core only limits, xalloc)")

# 6. api/ holds handlers only: no SQL text and no database call. The SQL of an endpoint lives in the folder of
# its data (store, twins, consensus, replay, effect, fleet, alerts), behind a read function the handler calls once.
sqltext = re.compile(r'\b(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS|FROM|WHERE|JOIN)\b')
dbcall = re.compile(r'\b(db_register|db_exec|db_exec_bin|db_do|db_exec_once|db_prepared|db_conn|db_begin|'
                    r'db_commit|db_rollback|sql_begin|sql_commit|sql_rollback|sql_retry|'
                    r'PQexec\w*|PQprepare)\s*\(')
strlit = re.compile(r'"((?:\\.|[^"\\\n])*)"')
sqlapi = []
for f in sorted(f for f in files if layer(f) == "api"):
    raw = re.sub(r'/\*.*?\*/', ' ', open(f, encoding="utf-8").read(), flags=re.S)
    raw = re.sub(r'//[^\n]*', ' ', raw)
    n_sql = sum(1 for lit in strlit.findall(raw) if sqltext.search(lit))
    n_db = len(dbcall.findall(code_of(raw)))
    if n_sql or n_db:
        sqlapi.append("%s: %d string(s) of SQL, %d database call(s)" % (f, n_sql, n_db))
if sqlapi:
    failed += 1
    print("FAIL api/ holds SQL (move it to the folder of its data):")
    for a in sqlapi:
        print("       " + a)
else:
    passed += 1
    print("ok   api/ holds no SQL text and calls the database only through the domain folders")

# 6b. one database idiom: statements are db_register'd and run by name (server/store/db.h). libpq runs SQL text only
# in the modules that are the idiom or come before it: db.c itself, sql.c (the evaluator's lock and transaction
# control), and what runs on a connection of its own before the statements exist (migrate.c, convert.c, pgembed.c).
TEXT_OK = {"server/store/db.c", "server/store/sql.c", "server/store/migrate.c", "server/store/convert.c",
           "server/store/pgembed.c"}
pqtext = re.compile(r'\b(PQexec|PQexecParams|PQprepare|PQsendQuery\w*)\s*\(')
textsql = sorted("%s: %d" % (f, len(pqtext.findall(code_of(open(f, encoding="utf-8").read()))))
                 for f in files if f not in TEXT_OK and pqtext.search(code_of(open(f, encoding="utf-8").read())))
if textsql:
    failed += 1
    print("FAIL SQL text run outside the database idiom (db_register the statement, run it with db_exec/db_do):")
    for t in textsql:
        print("       " + t)
else:
    passed += 1
    print("ok   libpq runs SQL text only in db.c, sql.c and the start-time modules; the rest run statements by name")

# 7. the router includes no handler, and nothing outside main.c includes server/api
leaks = [f for f in files if layer(f) != "api" and layer(f) != "main" and
         any(h.startswith("server/api/") for h in inc.findall(open(f, encoding="utf-8").read()))]
if leaks:
    failed += 1
    print("FAIL handlers are included below main.c: " + ", ".join(sorted(leaks)))
else:
    passed += 1
    print("ok   only main.c includes the handlers (they register routes in tables)")

# 8. common/ includes nothing of the programs above it
up = []
for root, _, names in os.walk("common"):
    for n in names:
        if n.endswith((".c", ".h")):
            p = os.path.join(root, n)
            for h in inc.findall(open(p, encoding="utf-8").read()):
                if not h.startswith(("common/", "include/")):
                    up.append("%s includes %s" % (p, h))
if up:
    failed += 1
    print("FAIL common/ includes a program's header: " + "; ".join(up))
else:
    passed += 1
    print("ok   common/ includes only common/ and include/")

# 6. no function is defined and never referenced; the scan still finds those planted in its fixture
import subprocess
def unreferenced(*args):
    r = subprocess.run([sys.executable, "tests/layout/unreferenced.py", "--tests-only"] + list(args),
                       capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines()
rc, lines = unreferenced("--root", "tests/layout/cases/unreferenced")
found = sorted(l.split()[1] for l in lines if l.startswith("FAIL "))
want = ["b_dead", "dead_global", "dead_helper", "dead_recursive", "fortran_never", "same_name"]
if rc != 1 or found != want:
    failed += 1
    print("FAIL the unreferenced-function scan finds %s in its fixture, not %s" % (found, want))
else:
    passed += 1
    print("ok   the unreferenced-function scan finds the %d planted in its fixture" % len(want))
rc, lines = unreferenced()
dead = [l for l in lines if l.startswith("FAIL ")]
if rc != 0 or dead:
    failed += 1
    print("FAIL functions defined and never referenced (delete them, or call them):")
    for l in dead:
        print("       " + l[5:])
else:
    passed += 1
    print("ok   every function is referenced (%s)" % lines[-1])
for l in lines:
    if l.startswith("note "):
        print("     " + l)

# 7. the dashboard's JavaScript and its browser tests pass the lint (web/eslint.config.js, eslint pinned in
#    web/package.json and installed by deploy/install-deps.sh)
eslint = "web/node_modules/.bin/eslint"
if not os.path.exists(eslint):
    failed += 1
    print("FAIL no %s: run deploy/install-deps.sh (npm ci in web/)" % eslint)
else:
    r = subprocess.run([eslint, "-c", "web/eslint.config.js", "--max-warnings", "0", "web/js", "tests/browser"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        failed += 1
        print("FAIL eslint finds problems in web/js or tests/browser:")
        for l in (r.stdout + r.stderr).strip().splitlines():
            print("       " + l)
    else:
        passed += 1
        print("ok   eslint passes web/js and tests/browser")

# 8. the commit-msg hook (deploy/hooks/commit-msg) passes every message of cases/commit-msg/pass and refuses every
#    one of cases/commit-msg/fail
wrong = []
for want in ("pass", "fail"):
    d = os.path.join("tests/layout/cases/commit-msg", want)
    for n in sorted(os.listdir(d)):
        r = subprocess.run(["deploy/hooks/commit-msg", os.path.join(d, n)], capture_output=True, text=True)
        if (r.returncode == 0) != (want == "pass"):
            wrong.append("%s/%s (exit %d)" % (want, n, r.returncode))
if wrong:
    failed += 1
    print("FAIL the commit-msg hook judges these messages wrongly: " + ", ".join(wrong))
else:
    passed += 1
    print("ok   the commit-msg hook passes and refuses the messages of tests/layout/cases/commit-msg")

# 9. code and tests give reasons, not issue numbers ("issue 20's lifecycle" says nothing once the tracker is gone)
issue = re.compile(r"\bissues? ?#?[0-9]+", re.I)
cited = []
for top in ("agent", "bench", "cli", "common", "deploy", "examples", "include", "kernels", "server", "spank", "tests",
            "web/js"):
    for root, subdirs, names in os.walk(top):
        subdirs[:] = [x for x in subdirs if x != "node_modules"]
        for n in names:
            p = os.path.join(root, n)
            if not n.endswith((".c", ".h", ".cu", ".sh", ".mk", ".py", ".js", ".mjs")) or p == "tests/layout/run.sh":
                continue  # (this file names the habit it checks)
            for i, line in enumerate(open(p, encoding="utf-8", errors="replace"), 1):
                if issue.search(line):
                    cited.append("%s:%d" % (p, i))
if cited:
    failed += 1
    print("FAIL code cites issue numbers instead of reasons: " + ", ".join(cited))
else:
    passed += 1
    print("ok   no code or test comment cites an issue number")

# 10. no function of server/ is longer than MAX_FUNC lines. The code's style puts a definition's name at column 0
# and its body's braces alone on a line at column 0, and nothing else there; a body is counted from its `{` to its
# `}`, both included. A `{` or `}` at column 0 that breaks that shape fails the check too, so it cannot miscount.
MAX_FUNC = 100
name_re = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(')
long_funcs, shape = [], []
for f in sorted(x for x in files if x.endswith(".c")):
    lines = open(f, encoding="utf-8").read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{") and line.rstrip() != "{":
            shape.append("%s:%d: a line starts with { but holds more" % (f, i + 1))
        if line.rstrip() == "{":
            if start is not None:
                shape.append("%s:%d: { at column 0 inside the body opened at line %d" % (f, i + 1, start + 1))
            start = i
        elif line.rstrip() == "}":
            if start is None:
                shape.append("%s:%d: } at column 0 with no { at column 0 before it" % (f, i + 1))
                continue
            # the name: the first identifier followed by ( on the nearest column-0 line of the head above the {
            name = None
            for k in range(start - 1, max(start - 8, -1), -1):
                if lines[k][:1] not in ("", " ", "\t", "#", "/", "*"):
                    m = name_re.search(lines[k])
                    if m:
                        name = m.group(1)
                        break
            n = i - start + 1
            if n > MAX_FUNC:
                long_funcs.append((n, f, name or "(line %d)" % (start + 1)))
            start = None
    if start is not None:
        shape.append("%s:%d: { at column 0 never closed at column 0" % (f, start + 1))
if shape:
    failed += 1
    print("FAIL function bodies in server/ do not have their braces alone at column 0, so their length is unknown:")
    for s in shape:
        print("       " + s)
elif long_funcs:
    failed += 1
    print("FAIL functions in server/ longer than %d lines (split them by their steps):" % MAX_FUNC)
    for n, f, name in sorted(long_funcs, reverse=True):
        print("       %s %s: %d lines" % (f, name, n))
else:
    passed += 1
    print("ok   no function of server/ is longer than %d lines" % MAX_FUNC)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY

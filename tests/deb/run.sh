#!/usr/bin/env bash
# run.sh - the deb tier: build the Debian packages as `make deb` does (lintian included), check what each holds
# (tests/deb/files.txt), then install them with dpkg -i into a throwaway overlay of this machine's /etc, /usr and
# /var (a private mount namespace whose writes go to a tmpfs: nothing here changes) and run what they installed:
# lockstepd as the unit starts it, as the lockstep user the postinst made, on its embedded PostgreSQL; the CLI,
# the agent and the Python binding against it; then a purge.
# usage: tests/deb/run.sh BUILD_DIR      (ends with "N passed, N failed"; needs root)
#
# Under SAN=1 it checks nothing: packages are never sanitized (deploy/deb/deb.mk), so the plain `make test` builds
# and checks the same packages.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
self=$src/tests/deb/run.sh
pass=0; fail=0

check() { # check NAME COMMAND...: the command must succeed
  local name=$1; shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then pass=$((pass+1)); echo "ok   $name"
  else fail=$((fail+1)); echo "FAIL $name"; sed 's/^/     /' "$tmp/out" "$tmp/err" | head -30; fi
}
json() { python3 -c 'import json, sys; d = json.load(sys.stdin); print('"$1"')'; }

# ---- inside the namespace: install, run, purge (run.sh --inside TMP)
inside() {
  tmp=$1
  trap 'inside_cleanup' EXIT
  # The overlays: writes land on a tmpfs of this namespace, reads fall through to the machine.
  mkdir -p "$tmp/ovl" && mount -t tmpfs tmpfs "$tmp/ovl" || { echo "FAIL cannot mount a tmpfs"; return 1; }
  for d in etc usr var; do
    mkdir -p "$tmp/ovl/$d.up" "$tmp/ovl/$d.work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$tmp/ovl/$d.up,workdir=$tmp/ovl/$d.work" "/$d" ||
      { echo "FAIL cannot overlay /$d"; return 1; }
  done
  # No service starts or reaches this machine's systemd: policy-rc.d says no, and systemd's runtime dir is hidden.
  [ -d /run/systemd ] && mount -t tmpfs tmpfs /run/systemd
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
  rm -f /var/lib/man-db/auto-update # man-db's trigger then skips mandb (seconds); man -w finds the pages anyway
  unset LOCKSTEP_BUILD LOCKSTEP_SRC LOCKSTEP_LIB LOCKSTEP_SERVER LOCKSTEP_TRACE LOCKSTEP_RUN_ID PYTHONPATH LD_PRELOAD
  cd /

  t_dpkg_install() {
    DEBIAN_FRONTEND=noninteractive dpkg -i "${debs[@]}" || return 1
    for p in lockstepd lockstep-node lockstep python3-lockstep liblockstep-dev; do
      [ "$(dpkg-query -W -f='${Status}' "$p")" = "install ok installed" ] || { echo "$p is not installed"; return 1; }
    done
  }
  t_postinst() { # the system user, the secret and the admin token, the state directory, the enabled unit
    getent passwd lockstep |
      awk -F: '$3 < 1000 && $6 == "/var/lib/lockstep" && $7 ~ /nologin$/ { ok = 1 } END { exit !ok }' ||
      { getent passwd lockstep; echo "no lockstep system user"; return 1; }
    for f in /etc/lockstep/secret /etc/lockstep/admin-token; do
      [ "$(stat -c '%U:%G %a' "$f")" = "root:lockstep 640" ] && grep -Eq '^[0-9a-f]{64}$' "$f" ||
        { ls -l "$f"; return 1; }
    done
    [ "$(stat -c %U /var/lib/lockstep)" = lockstep ] && [ -L /etc/systemd/system/multi-user.target.wants/lockstepd.service ] &&
      man -w lockstep >/dev/null && man -w 8 lockstepd >/dev/null
  }
  check "dpkg -i installs the five packages" t_dpkg_install
  [ "$fail" -eq 0 ] || return
  check "postinst: system user, secret and admin token (root:lockstep 0640), state dir, unit enabled, man pages" t_postinst

  # lockstepd as the unit starts it: its User= and ExecStart=, the installed configuration (embedded PostgreSQL
  # under /var/lib/lockstep), on a free loopback port instead of 8080.
  unit=/lib/systemd/system/lockstepd.service
  user=$(sed -n 's/^User=//p' $unit)
  read -r -a exec_start <<<"$(sed -n 's/^ExecStart=//p' $unit)"
  log=$tmp/lockstepd.log
  setpriv --reuid "$user" --regid "$user" --init-groups -- "${exec_start[@]}" --listen 127.0.0.1:0 \
    --port-file /var/lib/lockstep/port >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do [ -s /var/lib/lockstep/port ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if [ ! -s /var/lib/lockstep/port ]; then
    fail=$((fail+1)); echo "FAIL the installed lockstepd did not start (${exec_start[*]} as $user):"
    sed 's/^/     /' "$log"
    return
  fi
  export LOCKSTEP_SERVER=http://127.0.0.1:$(cat /var/lib/lockstep/port)

  t_unit() { [ "$user ${exec_start[*]}" = "lockstep /usr/sbin/lockstepd --config /etc/lockstep/lockstepd.conf" ]; }
  t_health() {
    curl -sf "$LOCKSTEP_SERVER/api/v1/health" >"$tmp/health" || return 1
    [ "$(json 'd["status"], d["database"], d["embedded_postgres"]["state"]' <"$tmp/health")" = "ok ok up" ] ||
      { cat "$tmp/health"; return 1; }
    grep -q "embedded PostgreSQL" "$log" && [ "$(stat -c %U /var/lib/lockstep/pgdata)" = lockstep ]
  }
  t_dashboard() { # from the compiled-in /usr/share/lockstep/web: the configuration names no web_dir
    grep -q 'serving the dashboard from /usr/share/lockstep/web$' "$log" || { cat "$log"; return 1; }
    curl -sf "$LOCKSTEP_SERVER/" | cmp - /usr/share/lockstep/web/index.html &&
      curl -sf "$LOCKSTEP_SERVER/vendor/uPlot.iife.min.js" | cmp - /usr/share/lockstep/web/vendor/uPlot.iife.min.js
  }
  t_python_library() { # the binding finds the installed agent beside its package, nothing from the build tree
    /usr/bin/python3 -c 'import lockstep; print(lockstep.__file__); print(*lockstep.library())' >"$tmp/lib" || return 1
    printf '%s\n' /usr/lib/python3/dist-packages/lockstep/__init__.py 'install prefix /usr/lib/liblockstep.so' >"$tmp/want"
    diff "$tmp/want" "$tmp/lib" || return 1
    /usr/bin/python3 -c 'import ctypes; ctypes.CDLL("/usr/lib/liblockstep_mpi.so")' # finds liblockstep.so beside it
  }
  t_stream() { # a run streamed by the installed agent (through the binding) with a token the installed CLI made
    local token; token=$(lockstep token 4242 --secret /etc/lockstep/secret) || return 1
    mkdir -p "$tmp/trace" "$tmp/spool"
    LOCKSTEP_TOKEN=$token LOCKSTEP_JOB_ID=4242 LOCKSTEP_STEP_ID=0 LOCKSTEP_RANKS=1 LOCKSTEP_RANK=0 \
      LOCKSTEP_TWIN_GROUP=deb-tier LOCKSTEP_TRACE=metrics LOCKSTEP_TRACE_DIR=$tmp/trace LOCKSTEP_SPOOL_DIR=$tmp/spool \
      /usr/bin/python3 -c '
import lockstep
lockstep.init()
for i in range(4):
    with lockstep.step(i):
        lockstep.metric("loss", 1.0 / (i + 1))
lockstep.shutdown()' || return 1
    for _ in $(seq 50); do
      lockstep runs --job 4242 --json >"$tmp/runs" &&
        [ "$(json 'd["total"], d["items"][0]["status"]' <"$tmp/runs")" = "1 ended" ] && break
      sleep 0.2
    done
    [ "$(json 'd["items"][0]["status"], d["items"][0]["twin_group"], d["items"][0]["user"]' <"$tmp/runs")" = \
      "ended deb-tier root" ] || { cat "$tmp/runs"; return 1; }
    lockstep runs --group deb-tier | grep -q ' ended '
  }
  t_admin_token() { # the admin token the postinst made is the one lockstepd takes
    local mine; mine=$(lockstep token 4242 --secret /etc/lockstep/secret) || return 1
    [ "$(lockstep token 4242 --token-file /etc/lockstep/admin-token)" = "$mine" ]
  }
  t_completion() { # bash completion: where bash-completion looks, and what the installed CLI writes
    local f=/usr/share/bash-completion/completions/lockstep
    lockstep completion bash | cmp - "$f" && bash -n "$f" &&
      [ "$(bash -c 'source "$1"; COMP_WORDS=(lockstep twi); COMP_CWORD=1; _lockstep; printf "[%s]" "${COMPREPLY[@]}"' \
        _ "$f")" = "[twins][twin]" ]
  }
  t_epilog() { # the slurmctld epilog reads /etc/lockstep/epilog.conf, gets the job's line from the installed CLI,
    # and exits 0 (there is no slurmctld here to write it to)
    echo "LOCKSTEP_SERVER=$LOCKSTEP_SERVER" >/etc/lockstep/epilog.conf
    SLURM_JOB_ID=4242 LOCKSTEP_EPILOG_WAIT=0 LOCKSTEP_EPILOG_LOG=$tmp/epilog.log \
      /usr/libexec/lockstep/epilog-lockstep.sh || return 1
    cat "$tmp/epilog.log" >&2
    grep -q "'lockstep: deb-tier " "$tmp/epilog.log"
  }
  check "the unit runs /usr/sbin/lockstepd --config /etc/lockstep/lockstepd.conf as lockstep" t_unit
  check "installed lockstepd: /api/v1/health ok on its embedded PostgreSQL in /var/lib/lockstep" t_health
  check "installed lockstepd serves the dashboard from /usr/share/lockstep/web" t_dashboard
  check "python3-lockstep loads /usr/lib/liblockstep.so (and liblockstep_mpi.so loads)" t_python_library
  check "a run streamed by the installed agent shows in the installed CLI" t_stream
  check "the installed admin token is lockstepd's" t_admin_token
  check "the installed bash completion is the installed CLI's" t_completion
  check "the installed epilog gets the job's outcome from the installed CLI" t_epilog

  stop_lockstepd
  t_purge() { # purge: the secret, the token and the configuration go, the database stays; the rest removes cleanly
    dpkg --purge lockstepd || return 1
    [ ! -e /etc/lockstep/secret ] && [ ! -e /etc/lockstep/admin-token ] && [ ! -e /etc/lockstep/lockstepd.conf ] &&
      [ -d /var/lib/lockstep/pgdata ] && [ ! -e /usr/sbin/lockstepd ] ||
      { ls -la /etc/lockstep /var/lib/lockstep; return 1; }
    dpkg --purge python3-lockstep liblockstep-dev lockstep lockstep-node || return 1
    [ ! -e /usr/lib/liblockstep.so ] && [ ! -e /etc/slurm/plugstack.conf.d/lockstep.conf ] &&
      [ ! -e /usr/lib/python3/dist-packages/lockstep ]
  }
  check "dpkg --purge removes them (the database in /var/lib/lockstep stays)" t_purge
}

stop_lockstepd() { # SIGTERM stops lockstepd and its embedded PostgreSQL
  [ -n "${pid:-}" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  pid=
}

inside_cleanup() {
  stop_lockstepd
  # A cluster lockstepd left behind would keep this namespace's tmpfs alive.
  [ -f /var/lib/lockstep/pgdata/postmaster.pid ] &&
    setpriv --reuid lockstep --regid lockstep --init-groups -- /usr/lib/postgresql/15/bin/pg_ctl stop \
      -D /var/lib/lockstep/pgdata -m immediate >/dev/null 2>&1
  echo "$pass $fail" >"$tmp/inside.count"
}

if [ "${1:-}" = --inside ]; then
  tmp=$2
  mapfile -t debs < <(ls "$tmp"/debs/*.deb | grep -v -- '-dbgsym_')
  inside "$tmp"
  exit 0
fi

# ---- outside: prerequisites, build, contents, then the namespace
build=${1:-build}
if ldd "$build/bin/lockstepd" 2>/dev/null | grep -q libasan; then
  echo "deb tier: nothing to check under SAN=1 (packages are built without sanitizers; make test checks them)"
  echo "0 passed, 0 failed"
  exit 0
fi
die() { echo "deb tier: $1"; echo "0 passed, 1 failed"; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (dpkg -i into a private overlay of /etc, /usr and /var)"
for t in dpkg-buildpackage dh dh_python3 help2man lintian unshare setpriv curl; do
  command -v $t >/dev/null || die "$t not found (hint: deploy/install-deps.sh)"
done
[ -x /usr/lib/postgresql/15/bin/initdb ] || die "PostgreSQL 15's server is missing (hint: deploy/install-deps.sh)"
unshare -m --propagation private true 2>/dev/null || die "cannot make a private mount namespace here (unshare -m)"

tmp=$(mktemp -d /tmp/ls-deb-XXXXXX)
chmod 755 "$tmp" # the lockstep user reads under it inside the namespace
trap 'rm -rf "$tmp"' EXIT

echo "deb tier: building the packages (deploy/deb/build.sh)"
t_build() { # offline, as package builds are (a network namespace of its own); without the -dbgsym packages
  DEB_BUILD_OPTIONS=noddebs unshare -n "$src/deploy/deb/build.sh" -o "$tmp/debs" -l >"$tmp/build.log" 2>&1 ||
    { tail -40 "$tmp/build.log"; return 1; }
  # nor does it fetch the dashboard's libraries again (npm may find them in its cache): it takes web/vendor
  ! grep -E '^(cd web && )?npm ' "$tmp/debs/build.log"
}
check "make deb's build, offline: dpkg-buildpackage, then lintian without errors or warnings" t_build
[ "$fail" -eq 0 ] || { echo "$pass passed, $fail failed"; exit 1; }

t_lintian_clean() { # no tag at all, info included: every tag left is overridden with its reason in debian/
  ! grep -E '^[EWI]: ' "$tmp/build.log"
}
t_versions() { # the five packages, each at deploy/version.sh --deb
  local want got
  want=$("$src/deploy/version.sh" --deb)
  got=$(for d in "$tmp"/debs/*.deb; do dpkg-deb --show --showformat='${Package} ${Version}\n' "$d"; done | sort)
  [ "$got" = "$(printf "%s $want\n" liblockstep-dev lockstep lockstep-node lockstepd python3-lockstep | sort)" ] ||
    { echo "$got"; return 1; }
}
t_control() { # what the control files promise
  local node slurm next
  node=$(ls "$tmp"/debs/lockstep-node_*.deb)
  slurm=$(dpkg-query -W -f='${Version}' libslurm-dev | sed -E 's/^([0-9]+:)?([0-9]+\.[0-9]+).*/\2/')
  next=$(echo "$slurm" | awk -F. '{ printf "%d.%02d", $1, $2 + 1 }')
  dpkg-deb -f "$node" Breaks | grep "slurmd (<< $slurm)" | grep -q "slurmd (>= $next~)" ||
    { dpkg-deb -f "$node" Breaks; return 1; }
  dpkg-deb --info "$node" triggers | grep -qx 'activate-noawait ldconfig' &&
    dpkg-deb -f "$tmp"/debs/lockstepd_*.deb Depends | grep -q adduser &&
    dpkg-deb -f "$tmp"/debs/lockstepd_*.deb Recommends | grep -q postgresql-15
}
check "lintian: no tag left unexplained (info included)" t_lintian_clean
check "five packages at deploy/version.sh --deb" t_versions
check "control: lockstep-node breaks other Slurm releases and triggers ldconfig; lockstepd depends on adduser" t_control

# Contents against tests/deb/files.txt: one line per package.
python3 - "$src" "$tmp/debs" >"$tmp/contents" <<'PY'
import fnmatch, glob, io, os, subprocess, sys, tarfile
src, debs = sys.argv[1:]
rules = {}


def match(name, pat):
    """fnmatch per path component, so that a '*' never crosses a '/' (as in the shell)."""
    a, b = name.split("/"), pat.split("/")
    return len(a) == len(b) and all(fnmatch.fnmatchcase(x, y) for x, y in zip(a, b))


for line in open(os.path.join(src, "tests/deb/files.txt")):
    f = line.split("#", 1)[0].split()
    if f:
        rules.setdefault(f[0], []).append((f[1], f[2:]))
for pkg, lines in rules.items():
    deb = glob.glob(os.path.join(debs, pkg + "_*.deb"))[0]
    conff = subprocess.run(["dpkg-deb", "--info", deb, "conffiles"], capture_output=True, text=True).stdout.split()
    members = {}
    data = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        for m in t.getmembers():
            if not m.isdir():
                members[m.name[2:]] = (m, t.extractfile(m).read() if m.isfile() else None)
    bad, seen = [], set()
    for pat, opts in lines:
        hit = sorted(n for n in members if match(n, pat))
        seen.update(hit)
        if not hit:
            bad.append("%s: missing" % pat)
            continue
        for n in hit:
            m, data = members[n]
            if "exec" in opts and not m.mode & 0o111:
                bad.append("%s: not executable" % n)
            if "conffile" in opts and "/" + n not in conff:
                bad.append("%s: not a conffile" % n)
        for o in opts:
            if o.startswith("="):
                want = sorted(glob.glob(os.path.join(src, o[1:])))
                if sorted(map(os.path.basename, want)) != sorted(map(os.path.basename, hit)):
                    bad.append("%s: holds %s, the tree has %s" % (pat, [os.path.basename(h) for h in hit],
                                                                  [os.path.basename(w) for w in want]))
                for n in hit:
                    w = [x for x in want if os.path.basename(x) == os.path.basename(n)]
                    if w and open(w[0], "rb").read() != members[n][1]:
                        bad.append("%s: differs from %s" % (n, os.path.relpath(w[0], src)))
    doc = "usr/share/doc/%s/" % pkg
    stray = sorted(n for n in members if n not in seen and not n.startswith(doc))
    if stray:
        bad.append("files no line of tests/deb/files.txt names: %s" % ", ".join(stray))
    print("%s %s %s" % ("ok  " if not bad else "FAIL", pkg, "; ".join(bad)))
PY
while read -r st pkg why; do
  if [ "$st" = ok ]; then pass=$((pass+1)); echo "ok   $pkg holds what tests/deb/files.txt says"
  else fail=$((fail+1)); echo "FAIL $pkg holds what tests/deb/files.txt says"; echo "     $why"; fi
done <"$tmp/contents"
[ -s "$tmp/contents" ] || { fail=$((fail+1)); echo "FAIL the contents check did not run"; }

# Installed, in a private mount namespace.
unshare -m --propagation private "$self" --inside "$tmp"
if [ -s "$tmp/inside.count" ]; then
  read -r p f <"$tmp/inside.count"
  pass=$((pass+p)); fail=$((fail+f))
else
  fail=$((fail+1)); echo "FAIL the install checks did not finish"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

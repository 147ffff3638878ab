#!/usr/bin/env bash
# up.sh - start a private, loopback-only Slurm cluster (munge, slurmctld, N slurmd "nodes") on this machine.
#
# usage: deploy/slurm/up.sh [-d RUN_DIR] [-n NODES] [-c CPUS_PER_NODE] [-p PLUGIN.so] [-a 'PLUGSTACK ARGS']
#                           [-o optional|required] [-e EPILOG] [-A]
#
#   -d RUN_DIR   all state, logs, sockets and pid files live here (default: a new /tmp/lockstep-slurm.XXXXXX)
#   -n NODES     number of slurmd "nodes" n1..nN (default 4)
#   -c CPUS      CPUs each node advertises (default 4; oversubscription of the real cores is fine)
#   -p PLUGIN    a SPANK plugin to put in plugstack.conf (default: none)
#   -a ARGS      arguments for the plugin's plugstack.conf line, e.g. 'server=http://127.0.0.1:8080 secret=/x'
#   -o KIND      optional (default) or required
#   -e EPILOG    a slurmctld epilog (EpilogSlurmctld), e.g. deploy/slurm/epilog-lockstep.sh
#   -A           accounting through slurmdbd, on a private MariaDB (needs slurmdbd and mariadb-server-core):
#                sacct and sacctmgr work as on a production cluster. Without -A: no slurmdbd,
#                AccountingStorageType=accounting_storage/none with JobCompType=jobcomp/filetxt (`sacct -c`).
#
# On success prints RUN_DIR on stdout and writes RUN_DIR/env, a file to source
# (SLURM_CONF and the munge socket), and RUN_DIR/pids, the pids this script started,
# which deploy/slurm/down.sh stops (and nothing else). Every daemon listens on
# 127.0.0.1 only, on ports picked free at start. Needs root (slurmd runs as root).
#
# Each node has properties of its own that every task started there sees, whoever submitted it:
# RUN_DIR/nodes/NODE/env (NAME=VALUE lines, e.g. a simulated faulty GPU) and RUN_DIR/nodes/NODE/once.env
# (the same, for the next task that starts on the node only), exported by the cluster's TaskProlog
# (RUN_DIR/task-prolog.sh). deploy/slurm/node-env.sh writes them.
set -euo pipefail

run=
nodes=4
cpus=4
plugin=
plugargs=
kind=optional
epilog=
accounting=0
while getopts "d:n:c:p:a:o:e:Ah" o; do
  case $o in
    d) run=$OPTARG ;;
    n) nodes=$OPTARG ;;
    c) cpus=$OPTARG ;;
    p) plugin=$OPTARG ;;
    a) plugargs=$OPTARG ;;
    o) kind=$OPTARG ;;
    e) epilog=$OPTARG ;;
    A) accounting=1 ;;
    h) sed -n '2,24p' "$0"; exit 0 ;;
    *) exit 2 ;;
  esac
done

# die MESSAGE: fail; once daemons were started, stop them (deploy/slurm/down.sh -k: the logs stay in $run/log).
die() {
  echo "slurm-up: $*" >&2
  if [ -n "${run:-}" ] && [ -s "$run/pids" ]; then
    trap - ERR
    "$(dirname "$0")/down.sh" -k "$run" >&2 || true
  fi
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "must run as root: slurmd starts job steps as their user"
for b in munged slurmctld slurmd scontrol sinfo; do
  command -v "$b" >/dev/null || die "$b not found; run deploy/install-deps.sh"
done
case $nodes in '' | *[!0-9]*) die "-n wants a number of nodes, got '$nodes'" ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] || die "-n wants 1 to 64 nodes"
if [ "$accounting" = 1 ]; then
  for b in slurmdbd mariadbd mariadb-install-db sacctmgr; do
    command -v "$b" >/dev/null || die "-A needs $b (apt-get install slurmdbd mariadb-server-core)"
  done
fi
case $kind in optional | required) ;; *) die "-o wants optional or required, got '$kind'" ;; esac
if [ -n "$plugin" ]; then
  [ -f "$plugin" ] || die "plugin '$plugin' does not exist; build it first (make)"
  plugin=$(readlink -f "$plugin")
fi
if [ -n "$epilog" ]; then
  [ -x "$epilog" ] || die "epilog '$epilog' is not an executable file"
  epilog=$(readlink -f "$epilog")
fi

if [ -z "$run" ]; then
  run=$(mktemp -d /tmp/lockstep-slurm.XXXXXX)
else
  mkdir -p "$run"
fi
run=$(readlink -f "$run")
[ -e "$run/pids" ] && die "$run/pids exists: a cluster may still run there; stop it with deploy/slurm/down.sh $run"
chmod 755 "$run"
mkdir -p "$run/munge" "$run/state" "$run/log" "$run/spool" "$run/tmp" "$run/pid" "$run/nodes"
chmod 755 "$run/munge"
: >"$run/pids"

# On any failure, stop what was started so far.
cleanup_on_error() {
  echo "slurm-up: failed; stopping what was started (logs in $run/log)" >&2
  "$(dirname "$0")/down.sh" "$run" >&2 || true
}
trap cleanup_on_error ERR

# Ports: a block of nodes+1 consecutive free TCP ports (slurmctld, then one per slurmd).
port_free() { ! ss -Htan "sport = :$1" 2>/dev/null | grep -q .; }
pick_ports() {
  local need=$1 tries base i ok
  for tries in $(seq 1 50); do
    base=$((20000 + (RANDOM * 7 + tries * 131) % 30000))
    ok=1
    for ((i = 0; i < need; i++)); do port_free $((base + i)) || { ok=0; break; }; done
    [ $ok -eq 1 ] && { echo "$base"; return 0; }
  done
  return 1
}
base=$(pick_ports $((nodes + 1))) || die "no block of $((nodes + 1)) free ports found"
ctld_port=$base
node_port_lo=$((base + 1))
node_port_hi=$((base + nodes))

# munge: a private key, socket and daemon.
sock="$run/munge/munge.socket"
dd if=/dev/urandom of="$run/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$run/munge/munge.key"
munged --force --socket="$sock" --key-file="$run/munge/munge.key" --pid-file="$run/pid/munged.pid" \
  --log-file="$run/log/munged.log" --seed-file="$run/munge/munged.seed" --num-threads=2
for _ in $(seq 1 100); do [ -s "$run/pid/munged.pid" ] && [ -S "$sock" ] && break; sleep 0.05; done
[ -s "$run/pid/munged.pid" ] || die "munged did not start; see $run/log/munged.log"
cat "$run/pid/munged.pid" >>"$run/pids"

# Accounting (-A): a private MariaDB on loopback, then slurmdbd, both under $run.
acct_conf="AccountingStorageType=accounting_storage/none"
if [ "$accounting" = 1 ]; then
  # other_port USED...: a free port outside Slurm's block and not among USED
  other_port() {
    local p u ok
    for _ in $(seq 1 50); do
      p=$(pick_ports 1) || return 1
      ok=1
      [ "$p" -ge "$base" ] && [ "$p" -le "$((base + nodes))" ] && ok=0
      for u in "$@"; do [ "$p" = "$u" ] && ok=0; done
      [ $ok = 1 ] && { echo "$p"; return 0; }
    done
    return 1
  }
  db_port=$(other_port) || die "no free port for MariaDB"
  dbd_port=$(other_port "$db_port") || die "no free port for slurmdbd"
  mkdir -p "$run/mysql" "$run/bin"
  mariadb-install-db --no-defaults --datadir="$run/mysql/data" --user=root --auth-root-authentication-method=normal \
    >"$run/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed; see $run/log/mariadb-install.log"
  printf '%s\n' "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'lockstep-test';" \
    "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" "FLUSH PRIVILEGES;" >"$run/mysql/init.sql"
  mariadbd --no-defaults --datadir="$run/mysql/data" --socket="$run/mysql/sock" --port="$db_port" \
    --bind-address=127.0.0.1 --skip-name-resolve --user=root --pid-file="$run/pid/mariadbd.pid" \
    --log-error="$run/log/mariadbd.log" --init-file="$run/mysql/init.sql" --innodb-buffer-pool-size=32M \
    >/dev/null 2>&1 &
  for _ in $(seq 1 200); do [ -s "$run/pid/mariadbd.pid" ] && [ -S "$run/mysql/sock" ] && break; sleep 0.1; done
  [ -s "$run/pid/mariadbd.pid" ] || die "mariadbd did not start; see $run/log/mariadbd.log"
  cat "$run/pid/mariadbd.pid" >>"$run/pids"
  # slurmdbd reads slurmdbd.conf from SLURM_CONF's directory; it runs through a link under $run so that down.sh
  # knows it for this cluster's.
  {
    echo "# slurmdbd.conf - accounting for the private test cluster in $run (deploy/slurm/up.sh -A)."
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$sock"
    echo "DbdAddr=127.0.0.1"
    echo "DbdHost=localhost"
    echo "DbdPort=$dbd_port"
    echo "SlurmUser=root"
    echo "PidFile=$run/pid/slurmdbd.pid"
    echo "LogFile=$run/log/slurmdbd.log"
    echo "StorageType=accounting_storage/mysql"
    echo "StorageHost=127.0.0.1"
    echo "StoragePort=$db_port"
    echo "StorageUser=slurm"
    echo "StoragePass=lockstep-test"
    echo "StorageLoc=slurm_acct_db"
  } >"$run/slurmdbd.conf"
  chmod 600 "$run/slurmdbd.conf"
  ln -sf "$(command -v slurmdbd)" "$run/bin/slurmdbd"
  SLURM_CONF="$run/slurm.conf" "$run/bin/slurmdbd"
  for _ in $(seq 1 300); do
    [ -s "$run/pid/slurmdbd.pid" ] && ss -Htln "sport = :$dbd_port" 2>/dev/null | grep -q . && break
    sleep 0.1
  done
  [ -s "$run/pid/slurmdbd.pid" ] || die "slurmdbd did not start; see $run/log/slurmdbd.log"
  cat "$run/pid/slurmdbd.pid" >>"$run/pids"
  # AccountingStoragePass names the munge socket that slurmctld and the clients authenticate to slurmdbd with.
  acct_conf="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$dbd_port
AccountingStoragePass=$sock"
fi

# The TaskProlog: each node's own environment (RUN_DIR/nodes/NODE/env, and once.env for one task only),
# printed as `export NAME=VALUE` lines, which slurmstepd sets in the task before it starts. once.env is
# claimed with an atomic rename, so of two tasks starting at once exactly one gets it; only tasks of job steps
# (srun) claim it: a batch script's environment would carry it into every step of the job.
cat >"$run/task-prolog.sh" <<PROLOG
#!/bin/sh
# task-prolog.sh - written by deploy/slurm/up.sh: the properties of node \$SLURMD_NODENAME for every task it runs.
[ -n "\$SLURMD_NODENAME" ] || exit 0
d=$run/nodes/\$SLURMD_NODENAME
emit() { sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*=.*\)\$/export \1/p' "\$1"; }
[ -f "\$d/env" ] && emit "\$d/env"
# once.env goes to a task of a job step (srun), never to a batch script, whose environment its steps inherit.
case "\$SLURM_STEP_ID" in '' | *[!0-9]*) exit 0 ;; esac
if [ -f "\$d/once.env" ] && mv "\$d/once.env" "\$d/once.env.taken.\$\$" 2>/dev/null; then
  emit "\$d/once.env.taken.\$\$"
  echo "job \$SLURM_JOB_ID step \$SLURM_STEP_ID task \${SLURM_PROCID:-?} took it at \$(date +%s.%N)" >>"\$d/once.log"
  rm -f "\$d/once.env.taken.\$\$"
fi
exit 0
PROLOG
chmod 755 "$run/task-prolog.sh"

# slurm.conf and plugstack.conf.
if [ -n "$plugin" ]; then
  echo "$kind $plugin $plugargs" >"$run/plugstack.conf"
else
  : >"$run/plugstack.conf"
fi
cat >"$run/slurm.conf" <<EOF
# slurm.conf - a private test cluster written by deploy/slurm/up.sh; everything under $run.
ClusterName=lockstep
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$node_port_lo
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$run/state
SlurmdSpoolDir=$run/spool/%n
TmpFS=$run/tmp/%n
SlurmctldPidFile=$run/pid/slurmctld.pid
SlurmdPidFile=$run/pid/slurmd-%n.pid
SlurmctldLogFile=$run/log/slurmctld.log
SlurmdLogFile=$run/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$run/plugstack.conf
TaskProlog=$run/task-prolog.sh
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$acct_conf
JobCompType=jobcomp/filetxt
JobCompLoc=$run/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
MpiDefault=pmix
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=60
${epilog:+EpilogSlurmctld=$epilog
}NodeName=n[1-$nodes] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$node_port_lo-$node_port_hi] CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP
EOF
# mpi.conf, beside slurm.conf: every PMIx fence by the ring algorithm. By default Slurm's pmix plugin runs a fence that
# carries no data (Open MPI's barrier at the end of MPI_Init) by its tree algorithm, and on these nodes of one host a
# rank could then leave MPI_Init while a rank of another node still waited in the fence before: that rank got the
# first message before it could take it and died of SIGSEGV at a null PC inside MPI_Init (plain Open MPI 4.1.4, no
# Lockstep; CONTRIBUTING.md, "MPI under the local Slurm").
printf 'PMIxCollFence=ring\n' >"$run/mpi.conf"
export SLURM_CONF="$run/slurm.conf"
if [ "$accounting" = 1 ]; then # the cluster must exist in the accounting database before slurmctld registers
  timeout 30 sacctmgr -i add cluster lockstep >"$run/log/sacctmgr.log" 2>&1 ||
    die "sacctmgr could not add the cluster; see $run/log/sacctmgr.log and $run/log/slurmdbd.log"
fi

# slurmctld, then one slurmd per node. -i: ignore any state from an earlier run.
slurmctld -f "$SLURM_CONF" -i
for _ in $(seq 1 100); do [ -s "$run/pid/slurmctld.pid" ] && break; sleep 0.05; done
[ -s "$run/pid/slurmctld.pid" ] || die "slurmctld did not start; see $run/log/slurmctld.log"
cat "$run/pid/slurmctld.pid" >>"$run/pids"

for i in $(seq 1 "$nodes"); do
  mkdir -p "$run/spool/n$i" "$run/tmp/n$i" "$run/nodes/n$i"
  slurmd -f "$SLURM_CONF" -N "n$i"
done
for i in $(seq 1 "$nodes"); do
  for _ in $(seq 1 100); do [ -s "$run/pid/slurmd-n$i.pid" ] && break; sleep 0.05; done
  [ -s "$run/pid/slurmd-n$i.pid" ] || die "slurmd n$i did not start; see $run/log/slurmd-n$i.log"
  cat "$run/pid/slurmd-n$i.pid" >>"$run/pids"
done

# Wait until every node is idle (registered with slurmctld).
ok=0
for _ in $(seq 1 200); do
  idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
  if [ "$idle" -eq "$nodes" ]; then ok=1; break; fi
  sleep 0.05
done
[ $ok -eq 1 ] || die "only $idle of $nodes nodes came up idle; see $run/log/"

cat >"$run/env" <<EOF
# Source this to use the cluster in $run.
export SLURM_CONF=$run/slurm.conf
export LOCKSTEP_SLURM_RUN=$run
EOF
trap - ERR
echo "$run"

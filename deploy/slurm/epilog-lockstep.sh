#!/bin/bash
# epilog-lockstep.sh - an optional slurmctld epilog (EpilogSlurmctld) that writes a job's Lockstep outcome into its
# AdminComment, as Princeton's jobstats does: `scontrol show job` shows it, and where accounting runs through
# slurmdbd, `sacct -o AdminComment` does too.
#
#   slurm.conf:  EpilogSlurmctld=/usr/local/libexec/lockstep/epilog-lockstep.sh
#
# The comment is one line from `lockstep job JOBID --summary`: that job's own outcome in each of its twin groups
# (odd one out, matched the majority, diverged from its twin, matched, pending, failed), e.g.
#   lockstep: g1 odd one out at step 57, rank 3 (grad_norm): origin, hardware https://lockstep.example/#/twins/g1
#   lockstep: g1 matched the majority (job 4711 is the odd one out) https://lockstep.example/#/twins/g1
# Jobs that ran nothing under --lockstep get no comment.
#
# Where it lands: Slurm refuses to change a job that has ended (scontrol update: "Job has already finished"), and
# the epilog runs once it has. So the job's own comment goes into the accounting database (sacctmgr update job, as
# jobstats does) and `sacct -o AdminComment` shows it - which needs slurmdbd. The comments of the job's twins
# (the other jobs of its twin groups, LOCKSTEP_EPILOG_TWINS) are rewritten too: a twin that still runs gets it in
# slurmctld, where `scontrol show job` shows it (and slurmdbd records it when the twin ends); a twin that ended
# earlier (and read "pending" then) gets the final status in accounting. A comment another tool wrote (jobstats'
# JS1:...) is left alone. Without slurmdbd only twins that still run can be written. What could not be read or
# written (Slurm's configuration, a job's comment, Slurm's answer) is logged as Slurm said it.
#
# Settings, as shell assignments, from epilog-lockstep.conf beside this script, else /etc/lockstep/epilog.conf
# (slurmctld gives its epilog no environment of its own but SLURM_JOB_*):
#   LOCKSTEP_SERVER=https://lockstep.example.org:8080   lockstepd (required)
#   LOCKSTEP_CLI=/usr/local/bin/lockstep                the lockstep command (default: lockstep on PATH)
#   LOCKSTEP_CA_FILE=/etc/lockstep/ca.pem               for https with a private CA
#   SLURM_CONF=/etc/slurm/slurm.conf                    for scontrol, when it is not the default
#   LOCKSTEP_EPILOG_WAIT=10      seconds to wait for the job's own runs to end and be compared (not its twins)
#   LOCKSTEP_EPILOG_TWINS=1      also rewrite the comments of the job's twins (0: only this job)
#   LOCKSTEP_EPILOG_LOG=FILE     append what it does there (default: syslog through logger)
#
# It never fails the job: every problem is logged and the script exits 0. Runs as SlurmUser (an operator, so
# scontrol may set AdminComment).

export PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
here=$(cd "$(dirname "$0")" && pwd)
conf=$here/epilog-lockstep.conf
[ -f "$conf" ] || conf=/etc/lockstep/epilog.conf
# shellcheck disable=SC1090
[ -f "$conf" ] && . "$conf"
LOCKSTEP_CLI=${LOCKSTEP_CLI:-lockstep}
LOCKSTEP_EPILOG_WAIT=${LOCKSTEP_EPILOG_WAIT:-10}
LOCKSTEP_EPILOG_TWINS=${LOCKSTEP_EPILOG_TWINS:-1}
export LOCKSTEP_SERVER LOCKSTEP_CA_FILE
[ -n "${SLURM_CONF:-}" ] && export SLURM_CONF

log() {
  if [ -n "${LOCKSTEP_EPILOG_LOG:-}" ]; then
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) epilog-lockstep (job ${SLURM_JOB_ID:-?} ended): $*" >>"$LOCKSTEP_EPILOG_LOG"
  elif command -v logger >/dev/null; then
    logger -t epilog-lockstep "(job ${SLURM_JOB_ID:-?} ended) $*"
  else
    echo "epilog-lockstep (job ${SLURM_JOB_ID:-?} ended): $*" >&2
  fi
}

job=${SLURM_JOB_ID:-${1:-}}
case $job in '' | *[!0-9_]*) log "no job id (SLURM_JOB_ID is '${SLURM_JOB_ID:-}')"; exit 0 ;; esac
[ -n "${LOCKSTEP_SERVER:-}" ] || { log "LOCKSTEP_SERVER is not set (in $conf); nothing written"; exit 0; }
command -v "$LOCKSTEP_CLI" >/dev/null || { log "$LOCKSTEP_CLI not found; nothing written"; exit 0; }

# summary JOB [WAIT]: the job's one-line outcome on stdout; 1 when there is none to write.
summary() {
  local out rc
  out=$(timeout $((${2:-0} + 30)) "$LOCKSTEP_CLI" job "$1" --summary --wait "${2:-0}" 2>&1)
  rc=$?
  case $rc in
    0 | 1) ;;  # 1: a group diverged, which is an answer
    *) log "lockstep job $1 failed (exit $rc): $(echo "$out" | tr '\n' ' ')"; return 1 ;;
  esac
  [ "$out" = "lockstep: no run" ] && return 1
  printf '%s\n' "$out" | head -1
}

# Where Slurm keeps an AdminComment: slurmctld takes one only for a job that has not ended (scontrol update of an
# ended job is refused, "Job has already finished", in every Slurm up to the current one); after that only the
# accounting database can take it (sacctmgr update job, as jobstats does), and only where slurmdbd runs. Whether it
# does is in Slurm's configuration; when that cannot be read, nothing can be written, and the log says why.
dbd=0 storage= conf_err=
if [ -n "${SLURM_CONF:-}" ] && [ ! -r "$SLURM_CONF" ]; then
  conf_err="SLURM_CONF=$SLURM_CONF: $( [ -e "$SLURM_CONF" ] && echo "not readable by $(id -un)" || echo "no such file")"
elif config=$(timeout 30 scontrol show config 2>&1); then
  storage=$(printf '%s\n' "$config" | sed -n 's/^AccountingStorageType *= *//p' | head -1)
  [ "$storage" = accounting_storage/slurmdbd ] && dbd=1
else
  conf_err="scontrol show config: $(printf '%s' "$config" | tr '\n' ' ' | cut -c1-300) (SLURM_CONF=${SLURM_CONF:-unset})"
fi
[ -n "$conf_err" ] && log "cannot read Slurm's configuration, so no AdminComment can be read or written: $conf_err"

# current JOB: the job's AdminComment now (slurmctld's, else the accounting database's); says what it could not read.
current() {
  local c= out
  if out=$(scontrol show job "$1" 2>&1); then
    c=$(printf '%s\n' "$out" | sed -n 's/^ *AdminComment=//p' | head -1)
  elif [ "$dbd" != 1 ]; then
    log "job $1: cannot read its AdminComment: scontrol show job: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200)"
  fi
  [ -z "$c" ] && [ "$dbd" = 1 ] && c=$(sacct -n -X -P -j "$1" -o AdminComment 2>/dev/null | head -1)
  printf '%s' "${c%"${c##*[![:space:]]}"}"
}

# write JOB LINE: make LINE the job's AdminComment: in slurmctld while the job has not ended, else in the
# accounting database. A comment another tool wrote (jobstats' JS1:…) is left alone. What Slurm answered when it
# cannot be written is logged.
write() {
  local old where err acct_err
  if [ -n "$conf_err" ]; then
    log "job $1: cannot write '$2': Slurm's configuration could not be read ($conf_err)"
    return
  fi
  old=$(current "$1")
  if [ -n "$old" ] && [ "${old#lockstep:}" = "$old" ]; then
    log "job $1: its AdminComment holds another tool's text; left alone"
    return
  fi
  [ "$old" = "$2" ] && return
  if err=$(scontrol update "JobId=$1" "AdminComment=$2" 2>&1); then
    where=slurmctld
  elif [ "$dbd" = 1 ] && acct_err=$(timeout 30 sacctmgr -i update job where "jobid=$1" set "AdminComment=$2" 2>&1); then
    where=accounting
  else
    err="scontrol update: $(printf '%s' "$err" | tr '\n' ' ' | cut -c1-200)"
    if [ "$dbd" = 1 ]; then
      log "job $1: cannot write '$2': $err; sacctmgr update job: $(printf '%s' "$acct_err" | tr '\n' ' ' | cut -c1-200)"
    else
      log "job $1: nowhere to write '$2': $err; AccountingStorageType is ${storage:-not set}, not accounting_storage/slurmdbd, and without slurmdbd Slurm keeps no AdminComment set after a job ends"
    fi
    return
  fi
  log "job $1: AdminComment ($where): $2"
}

line=$(summary "$job" "$LOCKSTEP_EPILOG_WAIT") || exit 0
write "$job" "$line"

if [ "$LOCKSTEP_EPILOG_TWINS" = 1 ]; then
  for twin in $(timeout 30 "$LOCKSTEP_CLI" job "$job" --twin-jobs 2>/dev/null); do
    case $twin in *[!0-9_]*) continue ;; esac
    tline=$(summary "$twin" 0) && write "$twin" "$tline"
  done
fi
exit 0

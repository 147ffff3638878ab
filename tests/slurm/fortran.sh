# fortran.sh - the Slurm tier's Fortran programs (sourced by tests/slurm/run.sh beside its other real programs, whose
# helpers it uses): a Fortran test program with a flipped bit, and Quantum ESPRESSO's pw.x from Debian, each run
# twice with --lockstep=det as a user would, judged by their first report.

t_slurm_fortran() { # a bit flipped on rank 2 of a use mpi_f08 program: rank 2 named, at its module procedure
  ajob --nodelist=n1,n2 --lockstep=det --lockstep-twin=s-fortran -- "$apps/fortran_f08" 3 || return 1
  FORTRAN_FLIP=2:1 ajob --nodelist=n3,n4 --lockstep=det --lockstep-twin=s-fortran -- "$apps/fortran_f08" 3 || return 1
  local v; v=$(findings_of s-fortran)
  echo "$v" >>"$tmp/err"
  [ "$(vfield "$v" cause)" = origin ] && [ "$(vfield "$v" origin_ranks)" = "[2]" ] && [ "$(vfield "$v" rank)" = 2 ] &&
    [ "$(vfield "$v" function)" = physics::exchange ] && [ "$(vfield "$v" name)" = mpi.allreduce ]
}

# pw_run NAME: pw.x on 2 ranks of one node: silicon, 2 atoms, a 12 Ry cutoff, 2x2x2 k-points (about a second;
# its hundreds of all-to-alls take ten times longer over TCP, hence one node and shared memory). Both twins read
# the same input file (its path is on the command line, which twins must share).
pw_run() {
  mkdir -p "$tmp/pw" "$tmp/pw-$1" && sed "s|OUTDIR|$tmp/pw|" "$src/tests/apps/pw-si.in" >"$tmp/pw/si.in" || return 1
  OMPI_MCA_btl=self,vader,tcp ajob -N1 -n2 --lockstep=det --lockstep-twin=s-pw -- /usr/bin/pw.x -in "$tmp/pw/si.in"
  local rc=$?
  mv "$tmp/out" "$tmp/pw-$1/out" && : >"$tmp/out"
  grep -q '^!    total energy' "$tmp/pw-$1/out" && [ $rc -eq 0 ] && return 0
  echo "pw.x run $1: exit $rc; $(grep -i 'error\|total energy' "$tmp/pw-$1/out" | head -3)" >>"$tmp/err"
  tail -5 "$tmp/pw-$1/out" >>"$tmp/err"
  return 1
}
# Twice, unchanged: every rank records (Fortran MPI through mpif.h), both runs print the same energy, and the first
# report is what the records show: rank 0 broadcasts 2 KiB of which some bytes are never set (uninitialized memory,
# different in every process: seen with a dump of the buffer), so the runs diverge there, origin rank 0, at a site
# in the stripped pw.x; the evidence rule root_input says software and scores no node. Before liblockstep_mpi.so
# took Fortran calls, these runs recorded nothing.
t_slurm_pw() {
  pw_run a && pw_run b || return 1
  local ea eb; ea=$(grep '^!    total energy' "$tmp/pw-a/out"); eb=$(grep '^!    total energy' "$tmp/pw-b/out")
  echo "energies: $ea / $eb" >>"$tmp/err"
  [ "$ea" = "$eb" ] || return 1
  local v; v=$(python3 "$src/tests/agent/findings.py" "http://127.0.0.1:$lsd_port" s-pw 2 --timeout 40)
  echo "$v" >>"$tmp/err"
  api "http://127.0.0.1:$lsd_port/api/v1/twins/s-pw" >"$tmp/out" || return 1
  local recs; recs=$(python3 -c '
import json, sys, urllib.request
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    x = json.load(urllib.request.urlopen(sys.argv[2] + "/api/v1/runs/" + r["run_id"], timeout=10))
    print(" ".join(str(s["records"] > 1000) for s in x["rank_status"]))' "$tmp/out" "http://127.0.0.1:$lsd_port")
  echo "ranks with records: $recs" >>"$tmp/err"
  [ "$(echo $recs)" = "True True True True" ] &&
    [ "$(vfield "$v" status)" = diverged ] && [ "$(vfield "$v" cause)" = origin ] &&
    [ "$(vfield "$v" origin_ranks)" = "[0]" ] && [ "$(vfield "$v" name)" = mpi.bcast ] &&
    vfield "$v" site | grep -q '^pw.x+0x[0-9a-f]*' || return 1
  # the value entered at the root (root_input): software, no node scored, and the report says how to leave it out
  [ "$(group_class s-pw)" = software ] || return 1
  for n in n1 n2 n3 n4; do [ "$(involved $n s-pw)" = 0 ] || { echo "$n was blamed" >>"$tmp/err"; return 1; }; done
  "$lockstep_cli" twins s-pw --server "http://127.0.0.1:$lsd_port" >"$tmp/out" 2>&1
  grep -q "never set" "$tmp/out"
}

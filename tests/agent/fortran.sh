# fortran.sh - the agent tier's Fortran programs (sourced by tests/agent/run.sh, after its app and findings
# helpers): tests/apps/fortran_* make every recorded collective through one Open MPI Fortran binding each
# (mpif.h, use mpi, use mpi_f08), in place and not, with a derived datatype; tests/apps/mixed is half Fortran,
# half C. Every finding is lockstepd's, read as a user would.

# fortran_counts TRACE: "name:count ..." of one rank's records, sorted.
fortran_counts() { "$LS" dump "$1" | grep -v '"consensus.digest"' | python3 -c 'import json,sys,collections; c=collections.Counter(json.loads(l)["name"] for l in sys.stdin); print(" ".join(f"{k}:{v}" for k,v in sorted(c.items())))'; }

if [ -x "$B/tests/apps/fortran_mpifh" ] && [ -f "$B/lib/liblockstep_mpi.so" ]; then
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
  # 10h. Each binding: 3 exchanges of 2 allreduces (one in place), a bcast of a strided derived type, a bcast of
  #      the same row from MPI_BOTTOM, an allgather, an in-place allgatherv and a reduce, then a closing allreduce
  #      from an external procedure.
  #      Twins match; every call is recorded once, at the user's line in the module procedure.
  want="mpi.allgather:3 mpi.allgatherv:3 mpi.allreduce:7 mpi.bcast:6 mpi.reduce:3"
  for b in mpifh usempi f08; do
    g=g-fortran-$b-$$
    app "f$b-a" "$g" "$B/tests/apps/fortran_$b" -- 3; ra=$?
    app "f$b-b" "$g" "$B/tests/apps/fortran_$b" -- 3; rb=$?
    v=$(findings "$g")
    got=$(fortran_counts "$T/app-f$b-a/trace/rank-00003.lstrace")
    sites=$("$LS" dump "$T/app-f$b-a/trace/rank-00001.lstrace" | grep -v '"consensus.digest"' | python3 -c 'import json,sys; print(" ".join(sorted({json.loads(l)["site"]["function"] for l in sys.stdin})))')
    if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ "$(field "$v" status)" = match ] && [ "$got" = "$want" ] &&
       [ "$sites" = "closing physics::exchange" ]; then
      ok "Fortran $b: every collective recorded once ($got), at physics::exchange and closing; twins match"
    else bad "Fortran $b: rc $ra/$rb, $v, records '$got', sites '$sites': $(tail -3 "$T/app-f$b-a.out")"; fi
  done

  # 10i. A flipped bit in rank 2's allreduce input in its second exchange: lockstepd names rank 2 as the origin, at
  #      physics::exchange, and the site's offset is the Fortran line of that MPI_Allreduce (addr2line).
  for b in mpifh f08; do
    line=$(grep -n 'call MPI_Allreduce(x, y, 8' "$SRC/tests/apps/fortran_$b.f90" | cut -d: -f1)
    g=g-fortran-flip-$b-$$
    app "ff$b-a" "$g" "$B/tests/apps/fortran_$b" -- 3
    app "ff$b-b" "$g" "$B/tests/apps/fortran_$b" FORTRAN_FLIP=2:1 -- 3
    v=$(findings "$g")
    off=$(field "$v" site | sed -n 's/.*(fortran_[a-z0-9]*+\(0x[0-9a-f]*\))$/\1/p')
    at=$(addr2line -e "$B/tests/apps/fortran_$b" "$(printf '0x%x' $((off - 1)))" 2>/dev/null | sed 's/ .*//')
    if [ "$(field "$v" status)" = diverged ] && [ "$(field "$v" cause)" = origin ] &&
       [ "$(field "$v" origin_ranks)" = "[2]" ] && [ "$(field "$v" rank)" = 2 ] &&
       [ "$(field "$v" function)" = physics::exchange ] && [ "$(field "$v" occurrence)" = 2 ] &&
       [ "$at" = "$SRC/tests/apps/fortran_$b.f90:$line" ]; then
      ok "Fortran $b, a bit flipped on rank 2: origin rank 2 at $(field "$v" site), line $line"
    else bad "Fortran $b fault: $v; the site's line '$at' (want fortran_$b.f90:$line)"; fi
  done

  # 10j. A mixed Fortran/C program records both halves: the Fortran residual and the C energy, every step.
  g=g-mixed-$$
  app mxa "$g" "$B/tests/apps/mixed" -- 4
  app mxb "$g" "$B/tests/apps/mixed" -- 4
  v=$(findings "$g")
  sites=$("$LS" dump "$T/app-mxa/trace/rank-00000.lstrace" | grep -v '"consensus.digest"' | python3 -c 'import json,sys,collections; c=collections.Counter(json.loads(l)["site"]["function"] for l in sys.stdin); print(" ".join(f"{k}:{v}" for k,v in sorted(c.items())))')
  if [ "$(field "$v" status)" = match ] && [ "$sites" = "mixed_energy:4 solver::residual:4" ]; then
    ok "mixed Fortran/C: both halves recorded ($sites); twins match"
  else bad "mixed Fortran/C: $v, sites '$sites'"; fi

  # 10k. Runs that used MPI and recorded none of it say why, in the status and in `lockstep twins`: calls that take
  #      a way in the wrappers do not interpose (PMPI_* directly), and a Fortran program under the agent alone.
  g=g-unseen-$$
  app una "$g" "$B/tests/agent/mpi_pmpi" --
  app unb "$g" "$B/tests/agent/mpi_pmpi" --
  v=$(findings "$g")
  "$LS" twins "$g" --server "$URL" >"$T/twins-unseen.out" 2>&1
  if [ "$(field "$v" status)" = incomplete ] &&
     grep -q 'incomplete: every run ended, but they recorded nothing to compare: 2 of 2 runs made MPI calls that Lockstep did not see (.*another MPI library or binding)' "$T/twins-unseen.out" &&
     grep -q 'none of its MPI calls reached liblockstep_mpi.so' "$T/app-una.out"; then
    ok "MPI calls the wrappers do not see: lockstep twins says so, not just 'nothing recorded'"
  else bad "MPI calls unseen: $v; $(head -1 "$T/twins-unseen.out")"; fi
  g=g-unloaded-$$
  APP_PRELOAD=$B/lib/liblockstep.so app ula "$g" "$B/tests/apps/fortran_f08" -- 2
  APP_PRELOAD=$B/lib/liblockstep.so app ulb "$g" "$B/tests/apps/fortran_f08" -- 2
  v=$(findings "$g")
  "$LS" twins "$g" --server "$URL" >"$T/twins-unloaded.out" 2>&1
  if [ "$(field "$v" status)" = incomplete ] &&
     grep -q '2 of 2 runs made MPI calls that Lockstep did not see (liblockstep_mpi.so was not .*LD_PRELOAD=.*agent= in plugstack.conf)' "$T/twins-unloaded.out" &&
     grep -qF "preload it for the job (LD_PRELOAD=$B/lib/liblockstep_mpi.so srun" "$T/app-ula.out"; then
    ok "an MPI program without liblockstep_mpi.so: lockstep twins says to load it, the rank's warning where it is"
  else bad "MPI without the wrappers: $v; $(head -1 "$T/twins-unloaded.out")"; fi
else
  bad "tests/apps/fortran_* (mpifort) or liblockstep_mpi.so missing"
fi

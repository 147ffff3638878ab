# python.sh - the Slurm tier's PyTorch programs (sourced by tests/slurm/run.sh, whose helpers it uses): the tier's
# training scripts run as a new user runs them, with srun or sbatch and --lockstep=det, judged by their first report.
# Debian's python3-torch is importable by /usr/bin/python3 only (the python3 on PATH may be another build).

pytorch=/usr/bin/python3
py_ok() { "$pytorch" -c 'import torch' 2>/dev/null; }

# Twins of train_mlp.py on two nodes each, the same command line; only torch.set_num_threads differs (1 vs 2, from
# TRAIN_MLP_THREADS, which no manifest keeps): BatchNorm's batch statistics change in their low bits. The agent
# starts before Python, so the thread count reaches lockstepd only as what the program used: the binding's
# used.threads.torch_intra, and the agent's used.threads.omp (torch.set_num_threads sets OpenMP's count too). These
# are the only configuration differences (no env, no command line), they explain the divergence, no node is blamed.
t_slurm_torch_threads() {
  local o=(-n2 --lockstep=det --lockstep-twin=s-threads --lockstep-trace=modules)
  local p=(-- "$pytorch" "$src/tests/python/train_mlp.py" --steps 2)
  TRAIN_MLP_THREADS=1 PYTHONPATH=$src/agent/python ajob --nodelist=n1,n2 "${o[@]}" "${p[@]}" || return 1
  TRAIN_MLP_THREADS=2 PYTHONPATH=$src/agent/python ajob --nodelist=n3,n4 "${o[@]}" "${p[@]}" || return 1
  local v; v=$(python3 "$src/tests/agent/findings.py" "http://127.0.0.1:$lsd_port" s-threads 2 --timeout 40)
  echo "$v" >>"$tmp/err"
  api "http://127.0.0.1:$lsd_port/api/v1/twins/s-threads/manifest-diff" >"$tmp/out" || return 1
  local keys; keys=$(json '" ".join(sorted({x["key"] for x in d["diffs"] if x["class"] == "configuration"}))' <"$tmp/out")
  local vals; vals=$(json '" ".join(sorted(v["value"] for x in d["diffs"] if x["key"] == "used.threads.torch_intra"
                                           for v in x["values"]))' <"$tmp/out")
  local explains; explains=$(json 'd["explains"]' <"$tmp/out")
  echo "configuration keys: $keys; torch_intra: $vals; explains: $explains" >>"$tmp/err"
  [ "$explains" = True ] && [ "$(vfield "$v" status)" = diverged ] && [ "$(vfield "$v" cause)" = configuration ] &&
    [ "$(vfield "$v" name)" = bn.out ] && [ "$keys" = "used.threads.omp used.threads.torch_intra" ] &&
    [ "$vals" = "1 2" ] &&
    vfield "$v" configuration | grep -q "used\.threads\.torch_intra differs ([^)]*): '1' vs '2'" &&
    [ "$(group_class s-threads)" = software ] || return 1
  for n in n1 n2 n3 n4; do [ "$(involved $n s-threads)" = 0 ] || { echo "$n was blamed" >>"$tmp/err"; return 1; }; done
}

# resume_pair GROUP LOADER [split]: docs/python.md's resume under Slurm, as written there: one sbatch job trains
# train_resume.py uninterrupted for 6 steps and checkpoints step 2 (w.saved(2)); a second job of the same twin group,
# started once the first has ended (--dependency=afterok), resumes from that checkpoint with LOADER (w.restored(2)).
# With `split`, the second job is a run interrupted after step 2 and resumed from its own checkpoint in the job's
# next step (two job steps: two runs of the group). Nothing exported but what a user has: no LOCKSTEP_START_STEP.
# Sets the caller's v (the group's findings, from findings.py) and why (the first divergence's cause_detail);
# `lockstep twins GROUP` in $tmp/GROUP.twins.
resume_pair() {
  local g=$1 loader=$2 exp="ALL,PYTHONPATH=$src/agent/python" a b
  [ -n "$user_preload" ] && exp="$exp,LD_PRELOAD=$user_preload"
  local opts=(--parsable --export="$exp" -N1 -n1 --lockstep=det --lockstep-twin="$g" --lockstep-trace=modules)
  local py="$pytorch $src/tests/python/train_resume.py --steps 6"
  local second="srun $py --resume $tmp/$g.pt --loader $loader" after=--dependency=afterok:
  rm -f "$tmp/$g.pt" "$tmp/$g-own.pt"
  a=$(sbatch "${opts[@]}" -o "$tmp/$g-a.out" --wrap "srun $py --save 2 $tmp/$g.pt" 2>>"$tmp/err") || return 1
  [ "${3:-}" = split ] &&
    second="srun $py --steps 3 --save 2 $tmp/$g-own.pt && srun $py --resume $tmp/$g-own.pt --loader $loader" after=
  b=$(sbatch "${opts[@]}" -o "$tmp/$g-b.out" ${after:+"$after$a"} --wrap "$second" 2>>"$tmp/err") || return 1
  for _ in $(seq 1 600); do [ -z "$(squeue -h -j "$a,$b" 2>/dev/null)" ] && break; sleep 0.1; done
  cat "$tmp/$g-a.out" "$tmp/$g-b.out" >>"$tmp/out"
  [ -s "$tmp/$g.pt" ] || { echo "$g: no checkpoint was written" >>"$tmp/err"; return 1; }
  v=$(python3 "$src/tests/agent/findings.py" "http://127.0.0.1:$lsd_port" "$g" 1 --timeout 40)
  why=$(api "http://127.0.0.1:$lsd_port/api/v1/twins/$g" | json '(d.get("first_divergence") or {}).get("cause_detail")')
  printf '%s\ncause_detail: %s\n' "$v" "$why" >>"$tmp/err"
  "$lockstep_cli" twins "$g" --server "http://127.0.0.1:$lsd_port" >"$tmp/$g.twins" 2>&1 # exit 1 when diverged
  [ -s "$tmp/$g.twins" ]
}
# start_steps GROUP: the start steps lockstepd holds for the group's runs, sorted.
start_steps() {
  api "http://127.0.0.1:$lsd_port/api/v1/runs?group=$1" | json '" ".join(sorted(str(r["start_step"]) for r in d["items"]))'
}
# A correct resume: match, the resumed run compared from step 3 (its start_step, from its restored block).
t_slurm_resume() {
  local v why s
  resume_pair s-resume good || return 1
  s=$(start_steps s-resume); echo "start steps: $s" >>"$tmp/err"
  [ "$(vfield "$v" status)" = match ] && [ "$s" = "0 3" ]
}
# The same, the resumed run interrupted after step 2 and resumed in its job's next step: three runs, match.
t_slurm_resume_split() {
  local v why s
  resume_pair s-resume-split good split || return 1
  s=$(start_steps s-resume-split); echo "start steps: $s" >>"$tmp/err"
  [ "$(vfield "$v" status)" = match ] && [ "$s" = "0 0 3" ]
}
# A loader that forgot opt.load_state_dict: the first report (API and lockstep twins) is the restore difference at
# step 2, with the 4 entries saved and not restored (the momentum buffers of both layers' weights and biases; the
# fresh optimizer's hyperparameters equal the saved ones) and the optimizer named.
t_slurm_resume_no_optim() {
  local v why
  resume_pair s-resume-optim no-optim || return 1
  local said="4 saved entries were not restored (first: optim.0.weight.momentum_buffer): the optimizer state was not"
  said="$said restored, at the checkpoint of step 2 on rank 0"
  [ "$(vfield "$v" status)" = diverged ] && [ "$(vfield "$v" cause)" = restore ] && [ "${why#"$said"}" != "$why" ] &&
    grep -q '^first divergence: RESTORE DIFFERENCE at step 2, rank 0: state entry "optim\.0\.weight\.momentum_buffer"' \
      "$tmp/s-resume-optim.twins" && grep -qF "  cause: restore: $said" "$tmp/s-resume-optim.twins"
}
# A loader that reseeds torch instead of restoring its generator: the first report (API and lockstep twins) is the
# restore difference at rng.torch, named as the random number generator state.
t_slurm_resume_rng() {
  local v why
  resume_pair s-resume-rng wrong-rng || return 1
  local said="a resumed run restored the checkpoint of step 2 on rank 0 with state entry rng.torch (occurrence 0), the"
  said="$said random number generator state, different from what its twin saved"
  [ "$(vfield "$v" status)" = diverged ] && [ "$(vfield "$v" cause)" = restore ] && [ "$(vfield "$v" name)" = rng.torch ] &&
    [ "${why#"$said"}" != "$why" ] &&
    grep -q '^first divergence: RESTORE DIFFERENCE at step 2, rank 0: state entry "rng\.torch"' "$tmp/s-resume-rng.twins" &&
    grep -qF "  cause: restore: $said" "$tmp/s-resume-rng.twins"
}

# py_checks: the checks, or one skip when /usr/bin/python3 has no torch.
py_checks() {
  if py_ok; then
    check "PyTorch twins, 1 vs 2 torch threads: configuration, used.threads.torch_intra named, no node blamed" \
      t_slurm_torch_threads
    check "a PyTorch resume as docs/python.md runs it (sbatch, no LOCKSTEP_START_STEP): match from step 3" t_slurm_resume
    check "a run interrupted after step 2, resumed in its job's next step: match from step 3" t_slurm_resume_split
    check "a resume that forgot the optimizer: the restore difference, entries counted, the optimizer named" \
      t_slurm_resume_no_optim
    check "a resume that reseeded torch: the restore difference names the random number generator state" \
      t_slurm_resume_rng
  else
    echo "skip the PyTorch checks: $pytorch cannot import torch (python3-torch, deploy/install-deps.sh)"; skip=$((skip+1))
  fi
}

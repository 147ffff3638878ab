#!/usr/bin/env bash
# train.sh - the demo's batch job: lockstep-train over MPI on the job's nodes (arguments go to the trainer).
# Submitted by deploy/demo/demo.sh with sbatch; LOCKSTEP_DEMO_TRAIN names the trainer binary.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp
exec srun --mpi=pmix "${LOCKSTEP_DEMO_TRAIN:?}" --quiet "$@"

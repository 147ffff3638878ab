/* train_opts.h - lockstep-train's command line and LOCKSTEP_FAULT, shared by the CPU and CUDA trainers. */
#ifndef KERNELS_TRAIN_OPTS_H
#define KERNELS_TRAIN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/mlp.h"

/* A bit to flip in one rank's local gradient at one step (a faulty device). */
typedef struct train_fault {
    int set;
    int64_t step;
    int rank;       /* -1: every rank that matches `node` */
    int bit;        /* 0..31 of a float32 */
    char node[128]; /* "" : any node */
} train_fault;

typedef struct train_opts {
    int64_t steps;
    uint64_t seed;
    mlp_dims dims;
    int batch;        /* samples per rank per step */
    uint64_t dataset; /* samples in the synthetic data set */
    mlp_adam adam;
    int nondet;         /* --nondeterministic */
    train_fault fault;  /* --inject-fault, else LOCKSTEP_FAULT */
    int64_t ckpt_every; /* 0: never */
    const char *ckpt_dir;
    const char *resume_dir;
    const char *resume_fault; /* --resume-fault moments|rng|data: a loader that forgets it (tests the check) */
    int64_t resume_step;      /* --resume-step N: exactly that checkpoint of resume_dir; -1: the newest */
    const char *order_log;    /* --order-log FILE: rank 0 writes the reduction order per step */
    const char *reduce;       /* GPU path: "det" or "atomic" reductions (default: det, atomic when nondet) */
    int quiet;
    int json;          /* --json: print a one-line JSON summary at the end (rank 0) */
    int record_timing; /* --record-timing: record the closing reduction of step times (differs every run) */
} train_opts;

/* TRAIN_DEFAULT_BIT - the bit --inject-fault flips when none is given. */
#define TRAIN_DEFAULT_BIT 12

/* train_opts_parse - parse argv into `o` (defaults first). Returns 0; 1 when
 * --help was asked (usage printed); -1 with a reason in `why` for a bad
 * argument. Strings in `o` point into argv. */
int train_opts_parse(int argc, char **argv, train_opts *o, char *why, size_t cap);

/* train_fault_parse_flag - parse "STEP:RANK[:BIT]" into `f`. Returns 0 or -1
 * with a reason in `why`. */
int train_fault_parse_flag(const char *s, train_fault *f, char *why, size_t cap);

/* train_fault_parse_env - parse LOCKSTEP_FAULT ("node=n3,step=20,bit=12",
 * keys node, rank, step, bit; step is required) into `f`. Returns 0 or -1
 * with a reason in `why`. */
int train_fault_parse_env(const char *s, train_fault *f, char *why, size_t cap);

/* train_fault_applies - 1 when fault `f` hits `rank` on node `node` at
 * `step`. */
int train_fault_applies(const train_fault *f, int64_t step, int rank, const char *node);

/* train_node_name - this task's node: SLURMD_NODENAME, else the host name.
 * Writes it to out[cap]. */
void train_node_name(char *out, size_t cap);

/* train_timing - this rank's timing figures in milliseconds: out[0] the mean
 * step, out[1] the median step, out[2] the mean time inside recording calls,
 * from `n_timed` per-step times (sorted in place), their total and the
 * recording total (all in ns) over `done` steps. Zeros when done is 0. */
void train_timing(double *step_ns, int64_t n_timed, double step_total, double rec_total, int64_t done, double out[3]);

/* train_usage - the help text. */
const char *train_usage(void);

#endif /* KERNELS_TRAIN_OPTS_H */

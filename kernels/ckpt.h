/* ckpt.h - lockstep-train checkpoints: one file per rank, everything a bit-exact resume needs. */
#ifndef KERNELS_CKPT_H
#define KERNELS_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/mlp.h"

#define CKPT_MAGIC "LSCKPT01"

/* The state of one rank after `step` steps. The arrays (n_params floats
 * each) are borrowed when saving and owned by the caller when loading. */
typedef struct ckpt_state {
    int64_t step; /* steps done */
    int rank, world;
    uint64_t seed;
    mlp_dims dims;
    int batch;
    uint64_t dataset;
    uint64_t data_pos; /* next sample id of rank 0's share */
    uint64_t rng_ctr;  /* this rank's noise stream position */
    int64_t adam_t;    /* Adam updates done */
    uint64_t n_params;
    float *params, *m, *v;
} ckpt_state;

/* ckpt_step_dir - DIR/step-NNNNNNNN into out[cap]. Returns 0, or -1 when it
 * does not fit. */
int ckpt_step_dir(const char *dir, int64_t step, char *out, size_t cap);

/* ckpt_save - write `s` to DIR/step-NNNNNNNN/rank-NNNNN.ckpt through a
 * temporary file and rename, so a crash never leaves a torn checkpoint.
 * The file holds nothing that differs between twin runs. Returns 0 or -1
 * with a reason in `why`. */
int ckpt_save(const char *dir, const ckpt_state *s, char *why, size_t cap);

/* ckpt_mark_complete - write DIR/step-NNNNNNNN/COMPLETE once every rank has
 * saved. Returns 0 or -1 with `why`. */
int ckpt_mark_complete(const char *dir, int64_t step, char *why, size_t cap);

/* ckpt_latest - the largest step in `dir` that has a COMPLETE mark; -1 when
 * there is none (or `dir` cannot be read: `why` says so). */
int64_t ckpt_latest(const char *dir, char *why, size_t cap);

/* ckpt_resolve - the checkpoint `resume` (--resume) names: with `want` >= 0, step `want` of directory `resume`;
 * else `resume` itself when it is a step directory (.../step-NNNNNNNN holding its COMPLETE mark), else the
 * newest complete step of directory `resume`. The directory that holds the step directories goes to `dir`.
 * Returns the step, or -1 with `why` (no such complete step, an unreadable directory). */
int64_t ckpt_resolve(const char *resume, int64_t want, char *dir, size_t dcap, char *why, size_t cap);

/* ckpt_load - read rank `rank`'s checkpoint of `step` from `dir` into `s`,
 * checking its magic, size and CRC32C. s->params, s->m and s->v are
 * allocated (free them). Returns 0 or -1 with `why`. */
int ckpt_load(const char *dir, int64_t step, int rank, ckpt_state *s, char *why, size_t cap);

/* ckpt_record_state - record `s` as a state block of step s->step
 * (LS_STATE_SAVED where the checkpoint is written, LS_STATE_RESTORED right
 * after one was loaded, with what the trainer now holds): params, adam.m,
 * adam.v (float32 [n_params], host arrays), adam_t, data_pos and rng_ctr;
 * without `optimizer` not the Adam entries (a loader that never loaded them
 * names only what it did). `lockstep diff` and lockstepd compare a restored
 * block with the saved one. Returns 0 or -1 (ls_last_error says why; the
 * caller warns, training goes on). */
int ckpt_record_state(const ckpt_state *s, int kind, int optimizer);

/* ckpt_resume_fault - make `s` what a buggy loader would have loaded (`what`:
 * "moments" zeroes Adam's m and v, "optimizer" zeroes them and adam_t as a
 * loader that forgot the optimizer does, "rng" restarts the noise stream,
 * "data" the data position; NULL changes nothing). For tests of the restore
 * check. */
void ckpt_resume_fault(ckpt_state *s, const char *what);

#endif /* KERNELS_CKPT_H */

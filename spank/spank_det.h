/* spank_det.h - the deterministic runtime of --lockstep=det: what to set, and which user settings break it. */
#ifndef SPANK_SPANK_DET_H
#define SPANK_SPANK_DET_H

#include <stddef.h>

/* How many NCCL channels det pins when the user pinned none. */
#define SPANK_DET_NCHANNELS "8"
#define SPANK_DET_MAX 24

/* Reads one variable of the job's environment: its value, or NULL when unset. */
typedef const char *(*spank_getenv_fn)(void *ctx, const char *name);

typedef struct spank_setting {
    const char *name;   /* static string */
    char value[160];
    const char *why;    /* conflicts only: why it breaks determinism, and the fix */
} spank_setting;

/* The outcome of checking a job's environment against the det runtime. */
typedef struct spank_det_plan {
    int n_set;                             /* variables to set: absent from the job's env */
    spank_setting set[SPANK_DET_MAX];
    int n_conflict;                        /* user values that break determinism */
    spank_setting conflict[SPANK_DET_MAX];
} spank_det_plan;

/* spank_det_plan_make - compare the environment read through `get` with the
 * deterministic runtime (docs/design.md). Absent variables go to p->set (with
 * OMP_NUM_THREADS set to `omp_threads`, at least 1); user values that keep
 * determinism are left alone; the others go to p->conflict. Never fails. */
void spank_det_plan_make(spank_getenv_fn get, void *ctx, long omp_threads, spank_det_plan *p);

/* spank_det_message - the user-facing error for the plan's conflicts: one
 * line per variable naming it, its value, why, and the fix. Returns the
 * length written (truncated to cap-1), 0 when there is no conflict. */
size_t spank_det_message(const spank_det_plan *p, char *buf, size_t cap);

/* spank_det_conflicts - "NAME=VALUE;NAME=VALUE" of the conflicts, for the
 * manifest (LOCKSTEP_CONFLICTS). Returns the length (truncated to cap-1). */
size_t spank_det_conflicts(const spank_det_plan *p, char *buf, size_t cap);

#endif /* SPANK_SPANK_DET_H */

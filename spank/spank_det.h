/* spank_det.h - the deterministic runtime of --lockstep=det: what to set, and which user settings break it. */
#ifndef SPANK_SPANK_DET_H
#define SPANK_SPANK_DET_H

#include <stddef.h>

/* How many NCCL channels det pins when the user pinned none. */
#define LSP_DET_NCHANNELS "8"
#define LSP_DET_MAX 24

/* Reads one variable of the job's environment: its value, or NULL when unset. */
typedef const char *(*lsp_getenv_fn)(void *ctx, const char *name);

typedef struct lsp_setting {
    const char *name; /* static string */
    char value[160];
    const char *why; /* conflicts only: why it breaks determinism, and the fix */
} lsp_setting;

/* The outcome of checking a job's environment against the det runtime. */
typedef struct lsp_det_plan {
    int n_set; /* variables to set: absent from the job's env */
    lsp_setting set[LSP_DET_MAX];
    int n_conflict; /* user values that break determinism */
    lsp_setting conflict[LSP_DET_MAX];
} lsp_det_plan;

/* lsp_det_plan_make - compare the environment read through `get` with the
 * deterministic runtime (docs/design.md). Absent variables go to p->set (with
 * OMP_NUM_THREADS set to `omp_threads`, at least 1); user values that keep
 * determinism are left alone; the others go to p->conflict. Never fails. */
void lsp_det_plan_make(lsp_getenv_fn get, void *ctx, long omp_threads, lsp_det_plan *p);

/* lsp_det_message - the user-facing error for the plan's conflicts: one
 * line per variable naming it, its value, why, and the fix. Returns the
 * length written (truncated to cap-1), 0 when there is no conflict. */
size_t lsp_det_message(const lsp_det_plan *p, char *buf, size_t cap);

/* lsp_det_conflicts - "NAME=VALUE;NAME=VALUE" of the conflicts, for the
 * manifest (LOCKSTEP_CONFLICTS). Returns the length (truncated to cap-1). */
size_t lsp_det_conflicts(const lsp_det_plan *p, char *buf, size_t cap);

#endif /* SPANK_SPANK_DET_H */

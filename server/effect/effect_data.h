/* effect_data.h - what GET /api/v1/compare reads: the runs its arguments name and the first record where a changed
 * run departs from the baseline; and how a read of the effect check says why it failed. */
#ifndef SERVER_EFFECT_EFFECT_DATA_H
#define SERVER_EFFECT_EFFECT_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "server/core/limits.h"

#define EFFECT_MAX_SET GROUP_MAX_RUNS /* runs one argument (base, changed or noise) may name */

/* Why a read of the effect check failed, as the request is answered: `status` 503 for the database (`detail`: its
 * message, the rest unset), else the reply's status with its error, detail and hint. */
typedef struct effect_fail {
    int status;
    char error[128];
    char detail[1200];
    char hint[256];
} effect_fail;

/* effect_fail_set - fill `f` with `status`, `error`, `detail` and `hint` (each cut to its field). Returns -1. */
int effect_fail_set(effect_fail *f, int status, const char *error, const char *detail, const char *hint);

/* effect_fail_read - fill `f` for a failed read of stored frames (server/store/frames.h) with code `rc` and
 * message `err`: 500 "stored records are damaged" when they are (FRAMES_DAMAGED), else 503, the database.
 * Returns -1. */
int effect_fail_read(effect_fail *f, int rc, const char *err);

/* The runs one argument names: comma-separated twin groups and run ids, in that order, each run once. */
typedef struct effect_set {
    const char *role; /* "BASE", "CHANGED", "NOISE" */
    const char *spec; /* as given (borrowed) */
    int n;
    int64_t keys[EFFECT_MAX_SET];
    char ids[EFFECT_MAX_SET][40];
    char groups[EFFECT_MAX_SET][256]; /* each run's twin group ("" for none) */
    int running[EFFECT_MAX_SET];      /* 1 while the run has not ended */
} effect_set;

/* effect_set_open - resolve `spec` (role names it in errors) into `s`. A part is a twin group when runs carry
 * it, else a run id. Returns 0, or -1 with why in `f`: 400 (empty, too many runs), 404 (no such group or
 * run), 503 (database). */
int effect_set_open(const char *role, const char *spec, effect_set *s, effect_fail *f);

/* effect_first - the first record of steps from..to where run `changed` departs from run `base` (digests
 * first, then the first-divergence rule on the records of the first differing step), as a new JSON object
 * {"run_id", "step", "rank", "name", "occurrence", "seq", "level", "dtype", "kind", "base", "changed", "ulp",
 * "site", "cause", "cause_detail", "origin_ranks", "thin_evidence", "configuration", "ranks"}, or json_null()
 * when every record agrees. Of the ranks departing at the first step ("ranks"), the cause rule
 * (common/cause.h, with the manifest diff of the two runs) picks the one that stands for them and names the
 * cause; "site" is the record's call site (null when the program records none). Returns 0, or -1 with why in
 * `f`: 413 (a step holds more records than the rule reads), 500 (damaged frames), 503 (database). */
int effect_first(int64_t base, const char *base_id, int64_t changed, const char *changed_id, int64_t from, int64_t to,
                 json_t **out, effect_fail *f);

/* What BASE's own runs say of each other. */
typedef struct effect_base {
    const char *status; /* BASE is one twin group: its status (twin_status, server/rules/status.h); else NULL */
    char status_why[512];
    json_t *first; /* where BASE's runs part (the group's first divergence, or effect_first's departure of a
                      run from the first), or NULL when they do not (so far) */
} effect_base;

/* effect_base_departs - what BASE's runs say of each other into *out (release out->first with json_decref).
 * When BASE is one twin group, lockstepd's findings of it (server/twins/findings.h) answers: its status and
 * first divergence; else each run is searched against the first as effect_first does (no status). Returns 0,
 * or -1 with why in `f` (as effect_first). */
int effect_base_departs(const effect_set *base, effect_base *out, effect_fail *f);

/* effect_data_register - prepare this module's statements. */
void effect_data_register(void);

#endif /* SERVER_EFFECT_EFFECT_DATA_H */

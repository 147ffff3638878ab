/* cmp_int.h - what the comparison's modules share (compare.c, step.c, restore.c, logical.c): the group's runs, records read
 * back from PostgreSQL, and storing a divergence. Not used outside server/compare/. */
#ifndef SERVER_COMPARE_CMP_INT_H
#define SERVER_COMPARE_CMP_INT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "server/compare/rule.h"
#include "server/core/limits.h"
#include "server/store/frames.h"

/* A twin group's runs as one comparison sees them. */
typedef struct cmp_group {
    int nruns;
    int64_t keys[GROUP_MAX_RUNS];
    char ids[GROUP_MAX_RUNS][40];
    int ranks[GROUP_MAX_RUNS];            /* each run's rank count */
    int64_t start[GROUP_MAX_RUNS];        /* each run's start step */
    int64_t max_step[GROUP_MAX_RUNS];     /* on the rank compared: the largest step recorded, INT64_MIN when none */
    int ended[GROUP_MAX_RUNS];            /* on the rank compared: the run's rank ended (or the run did) */
    char keyarr[GROUP_MAX_RUNS * 22 + 3]; /* "{k1,k2,...}" */
} cmp_group;

/* Records read back from their frames (server/store/frames.h), as rule input: names, call sites, extension fields,
 * chunk partials and input fingerprints point into `set`. */
typedef struct cmp_rows {
    cmp_rec *recs;
    size_t n;
    frame_set set;
} cmp_rows;

/* cmp_rows_from_set - the records of `set` that `keep` accepts (NULL: all) as records of the runs of `g`, in the
 * set's order; the set moves into `out` (and is left empty). Free with cmp_rows_release. */
void cmp_rows_from_set(frame_set *set, const cmp_group *g, int (*keep)(const rec_record *), cmp_rows *out);
void cmp_rows_release(cmp_rows *rows);

/* cmp_run_entry - what a run holds for a divergence (a new object, as stored in divergences.runs): its record's
 * seq, fp, dtype, size and value, its input fingerprints (what the cause rule reads, common/cause.h), its call
 * site and its scales' fingerprint, or present: false when `c` is NULL. */
json_t *cmp_run_entry(const char *run_id, const cmp_rec *c);

/* cmp_store_divergence - store a divergence of `group` on `rank` (-1: the logical tensors of runs of different rank
 * counts) unless an earlier one is stored (divergences keep the smallest (step, seq)); `runs` is stolen. When it
 * is new or earlier, the fleet is told (cmp_on_divergence). Returns 1 stored or kept, -1 on a database error. */
int cmp_store_divergence(const char *group, int rank, int64_t step, int64_t seq, const char *name, size_t name_len,
                         uint32_t occ, const char *kind, int64_t odd_key, json_t *runs, double commit_s);

/* cmp_check_restores - check the restored state blocks of the group's runs on `rank` (server/compare/restore.c).
 * Returns 1 when a restore difference was stored, 0 when none, -1 on a database error. */
int cmp_check_restores(const char *group, int rank, const cmp_group *g, double commit_s);

/* cmp_check_logical - compare a group whose runs have different rank counts on its logical tensors
 * (server/compare/logical.c). Returns 1 when a divergence was stored, 0 when none, -1 on a database error. */
int cmp_check_logical(const char *group, double commit_s);

/* cmp_register_restores, cmp_register_logical - their prepared statements. */
void cmp_register_restores(void);
void cmp_register_logical(void);

/* ---- step.c: one step of one rank compared record by record, for the comparison's threads (compare.c) ---- */

/* A rank a look found a differing step on, waiting for any thread to compare its records. */
typedef struct found_item {
    struct found_item *next;
    char group[256];
    int rank, nruns;
    int64_t keys[GROUP_MAX_RUNS];
    char ids[GROUP_MAX_RUNS][40];
    int64_t hi, upto, newest, step;
    double commit_s;
} found_item;

/* cmp_step_register - the prepared statements of this module. */
void cmp_step_register(void);

/* cmp_step_on_divergence - whom to tell about a stored divergence (cmp_on_divergence). */
void cmp_step_on_divergence(void (*fn)(const char *group));

/* cmp_rank - compare rank `rank` of `group` (runs `keys`, their ids) from `first_step` on (the first step a look
 * found differing) up to `upto`, and mark the rank compared up to `hi` (or to the step before one whose records
 * agents hold back), unless a run newer than `newest` joined. Returns 1 when a divergence was stored or made
 * earlier, 0 when none, -1 on a database error. */
int cmp_rank(const char *group, int rank, int nruns, const int64_t *keys, char ids[][40], int64_t hi, int64_t upto,
             int64_t newest, int64_t first_step, double commit_s);

/* cmp_found_run - cmp_rank for a found item; on a database error the rank is queued again. */
int cmp_found_run(const found_item *f);

/* cmp_found_batch - the differing ranks `f` (n >= 2 of them, one look's: one group and one set of runs) compared
 * together in two round trips: their steps' segments and digests, then every divergence and mark. Ranks that need
 * more (an agent holds records back, or the step's records all match) are compared on their own after. The items
 * stay the caller's. */
void cmp_found_batch(found_item **f, size_t n);

#endif /* SERVER_COMPARE_CMP_INT_H */

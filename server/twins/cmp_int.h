/* cmp_int.h - what the comparison's modules share (compare.c, step.c, restore.c, logical.c): the group's runs, records
 * read back from PostgreSQL, and storing a divergence. Not used outside server/twins/. */
#ifndef SERVER_TWINS_CMP_INT_H
#define SERVER_TWINS_CMP_INT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "common/first.h"
#include "server/core/limits.h"
#include "server/store/frames.h"

_Static_assert(GROUP_MAX_RUNS <= FIRST_MAX_RUNS, "the first-divergence rule compares every run of a group");

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
    first_rec *recs;
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
json_t *cmp_run_entry(const char *run_id, const first_rec *c);

/* What a comparison changed, told to the fleet (cmp_on_divergence), the log and the metrics once its
 * transaction commits (cmp_check): the first divergence it wrote, or that it dropped the stored one. */
typedef struct cmp_found {
    int stored; /* 1: a divergence was written (new, earlier or moved); -1: the stored one was dropped; 0: neither */
    int rank;
    int64_t step, seq;
    char name[LS_NAME_MAX + 1];
    unsigned occ;
    char kind[16];
    double commit_s; /* the commit that showed it (the detection latency counts from there); 0 unknown */
} cmp_found;

/* cmp_txn_begin - BEGIN and take the lock of `rank` of `group` without waiting (lockstep_check_key: a batch or an
 * end of the rank holds its shared form while it commits, and asks for the comparison again once committed; another
 * look that holds it does the work); with `wait`, waiting for it (a comparison a reply waits for: a rank's end, whose
 * reply asks for held records, must not leave them to a look that runs after the reply). Returns 1 inside the
 * transaction, 0 when the lock is taken (rolled back: nothing to do now), -1 on a database error (rolled back; also
 * past a wait of 5 s). */
int cmp_txn_begin(const char *group, int rank, int wait);

/* cmp_txn_end - commit the comparison's transaction when `rc` >= 0 (else roll it back), and only then tell the
 * fleet, the log and the metrics what `f` says was written (cmp_tell). Returns rc, or -1 when the commit failed. */
int cmp_txn_end(const char *group, int rc, const cmp_found *f);

/* cmp_tell - what a committed comparison changed: a divergence written (metrics, log, cmp_on_divergence) or a
 * stored one dropped (log, cmp_on_divergence). */
void cmp_tell(const char *group, const cmp_found *f);

/* cmp_register_resumes - resume.c's statements. */
void cmp_register_resumes(void);

/* cmp_resume_starts - move the start of each run of `group` that restored a state block to where
 * rec_resume_start (common/recmatch.h) puts it, and have what was compared with the old start compared again (its
 * step divergences and marks dropped), in one transaction holding every rank's lock of the group. Returns the
 * group's largest rank count when a start moved (the caller queues those ranks), 0 when none did, or none could
 * move now (*again set: a rank's lock was held), -1 on a database error. */
int cmp_resume_starts(const char *group, int *again);

/* cmp_key_array - g->keyarr from g->keys[0 .. g->nruns). */
void cmp_key_array(cmp_group *g);

/* cmp_store_divergence - store a divergence of `group` on `rank` (-1: the logical tensors of runs of different rank
 * counts) unless the same one is stored; an earlier one (step, seq) always replaces the stored one, and with
 * `replace` (the step comparison, which compared from where the stored one stands under the rank's lock) any
 * stored one but a restore difference is replaced. `runs` is stolen. What was written goes to `out` (the fleet is
 * told after the commit). Runs inside the comparison's transaction. Returns 1, or -1 on a database error. */
int cmp_store_divergence(const char *group, int rank, int64_t step, int64_t seq, const char *name, size_t name_len,
                         uint32_t occ, const char *kind, int64_t odd_key, json_t *runs, double commit_s, int replace,
                         cmp_found *out);

/* cmp_check_restores - check the restored state blocks of the group's runs on `rank` (server/twins/restore.c).
 * Returns 1 when a restore difference was stored, 0 when none, -1 on a database error. */
int cmp_check_restores(const char *group, int rank, const cmp_group *g, double commit_s, cmp_found *out);

/* cmp_check_logical - compare a group whose runs have different rank counts on its logical tensors
 * (server/twins/logical.c), and mark every rank's check. Inside the comparison's transaction (it holds the lock
 * of the rank that asked). Returns 1 when a divergence was stored, 0 when none, -1 on a database error;
 * *again when more steps are left. */
int cmp_check_logical(const char *group, double commit_s, cmp_found *out, int *again);

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
    int64_t from; /* where the look started (after the rank's mark, or the shared start) */
    int waiting;  /* a running run of the group has not reached the rank yet (group_checks.waiting) */
    int wait;     /* a reply waits for this comparison (cmp_check): the rank's lock is waited for, not skipped */
    double commit_s;
} found_item;

/* cmp_step_register - the prepared statements of this module. */
void cmp_step_register(void);

/* cmp_step_on_divergence - whom to tell about a stored divergence (cmp_on_divergence). */
void cmp_step_on_divergence(void (*fn)(const char *group));

/* cmp_found_run - compare a rank a look found differing, in one transaction under the rank's lock
 * (cmp_txn_begin): its records from the step found on (frames, server/store/frames.h), the stored step divergence
 * replaced by what the runs show now or dropped when they no longer show it, and the rank's mark (target,
 * members, checked_at, waiting); the fleet is told after the commit. Sets *again when the rank must be compared
 * again (a database error, or more is left): the caller queues it (cmp_notify), so that this module calls nothing
 * of compare.c. Returns 1 when a divergence was found, 0 when none (or the lock was taken), -1 on a database
 * error. */
int cmp_found_run(const found_item *f, int *again);

#endif /* SERVER_TWINS_CMP_INT_H */

/* cmp_int.h - what the comparison's modules share (compare.c, restore.c, logical.c): the group's runs, records read
 * back from PostgreSQL, and storing a divergence. Not used outside server/compare/. */
#ifndef SERVER_COMPARE_CMP_INT_H
#define SERVER_COMPARE_CMP_INT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "server/compare/rule.h"
#include "server/core/limits.h"

/* The columns every record query of the comparison selects, in this order (cmp_rows_load reads them). */
#define CMP_REC_COLS                                                                                                   \
    "run_key, seq, name, occ, fp, value, dtype, shape::text, nbytes, flags, encode(ext, 'hex'), rank, step, "          \
    "chunks::text, inputs::text, site_module, site_offset, site_function, site_function_offset, site_caller"

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

/* Records read back, as rule input: names, shapes, call sites and extension fields point into the result and `ext`;
 * chunk partials and input fingerprints into `words`. */
typedef struct cmp_rows {
    cmp_rec *recs;
    size_t n;
    unsigned char *ext; /* the decoded extension bytes of every row */
    int64_t *words;     /* the chunk partials and input fingerprints of every row */
} cmp_rows;

/* cmp_rows_load - the rows of `res` (columns CMP_REC_COLS) as records of the runs of `g` (rec.rank and rec.step
 * set). `res` must outlive `out`. Free with cmp_rows_release. */
void cmp_rows_load(PGresult *res, const cmp_group *g, cmp_rows *out);
void cmp_rows_release(cmp_rows *rows);

/* cmp_run_entry - what a run holds for a divergence (a new object, as stored in divergences.runs): its record's
 * seq, fp, dtype, size and value, its input fingerprints (what the cause rule reads, common/cause.h), its call
 * site and its scales' fingerprint, or present: false when `c` is NULL. */
json_t *cmp_run_entry(const char *run_id, const cmp_rec *c);

/* What a comparison changed, told to the fleet (cmp_on_divergence), the log and the metrics once its
 * transaction commits (cmp_check): the first divergence it wrote, or that it dropped the stored one. */
typedef struct cmp_found {
    int stored; /* 1: a divergence was written (new, earlier or moved); -1: the stored one was dropped; 0: neither */
    int rank;
    int64_t step, seq;
    char name[LS_NAME_MAX + 1];
    unsigned occ;
    char kind[16];
} cmp_found;

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

/* cmp_check_restores - check the restored state blocks of the group's runs on `rank` (server/compare/restore.c).
 * Returns 1 when a restore difference was stored, 0 when none, -1 on a database error. */
int cmp_check_restores(const char *group, int rank, const cmp_group *g, double commit_s, cmp_found *out);

/* cmp_check_logical - compare a group whose runs have different rank counts on its logical tensors
 * (server/compare/logical.c), and mark every rank's check. Inside the comparison's transaction (it holds the lock
 * of the rank that asked). Returns 1 when a divergence was stored, 0 when none, -1 on a database error;
 * *again when more steps are left. */
int cmp_check_logical(const char *group, double commit_s, cmp_found *out, int *again);

/* cmp_register_restores, cmp_register_logical - their prepared statements. */
void cmp_register_restores(void);
void cmp_register_logical(void);

#endif /* SERVER_COMPARE_CMP_INT_H */

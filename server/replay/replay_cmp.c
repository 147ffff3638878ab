/* replay_cmp.c - two runs compared over a window of steps from their stored records (server/replay/replay_cmp.h). */
#include "server/replay/replay_cmp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

void rc_register(void)
{
    /* The window's stored segments (server/store/frames.h): how many records first, then the frames. */
    db_register("rc_count", "SELECT coalesce(sum(n), 0) FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                            "AND step BETWEEN $2 AND $3 AND ($4::int[] IS NULL OR rank = ANY($4::int[]))");
    db_register("rc_frames", "SELECT run_key, rank, step, frames FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                             "AND step BETWEEN $2 AND $3 AND ($4::int[] IS NULL OR rank = ANY($4::int[]))");
    /* state entries of one step (kinds 2 saved and 4 restored: the partial index record_frames_state) */
    db_register("rc_state", "SELECT run_key, rank, step, frames FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                            "AND kind IN (2, 4) AND step = $2 AND ($3::int[] IS NULL OR rank = ANY($3::int[])) "
                            "ORDER BY rank, run_key, seq_lo");
}

/* state_block - the entries of run `key` on `rank` with state flag `flag` from `set`, in record order. */
static size_t state_block(const frame_set *set, int64_t key, uint32_t rank, int flag, const rec_record **out)
{
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->run_key[i] == key && set->recs[i].rank == rank && (set->recs[i].flags & REC_STATE_MASK) == flag)
            out[n++] = &set->recs[i];
    return n;
}

int rc_resume_check(int64_t replay, int64_t source, int64_t step, const char *ranks, rc_resume *out, char *err,
                    size_t cap)
{
    char keys[64], st[32];
    memset(out, 0, sizeof(*out));
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", replay, source);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *p[] = {keys, st, ranks};
    PGresult *r = db_exec_bin("rc_state", 3, p, err, cap);
    if (!r)
        return -1;
    frame_set set = {0};
    if (frames_rows(&set, r, 0, 1, 2, 3, NULL, err, cap) < 0) {
        frame_set_release(&set);
        return -1;
    }
    const rec_record **mine = xcalloc(set.n + 1, sizeof(*mine)), **ref = xcalloc(set.n + 1, sizeof(*ref));
    for (size_t i = 0; i < set.n && !out->differs; i++) {
        uint32_t rank = set.recs[i].rank;
        if (i && set.recs[i - 1].rank == rank)
            continue; /* each rank once (rows come by rank) */
        size_t n = state_block(&set, replay, rank, REC_STATE_RESTORED, mine);
        size_t m = state_block(&set, source, rank, REC_STATE_SAVED, ref);
        if (!n || !m) {
            out->not_restored += !n && m;
            out->not_saved += n && !m;
            continue;
        }
        rec_restore_result v;
        if (rec_restore_check(mine, n, ref, m, 1, &v) < 0)
            abort(); /* out of memory: the server's policy (server/core/xalloc.h) */
        out->checked++;
        if (v.status == REC_RESTORE_SAME || v.status == REC_RESTORE_UNVERIFIED)
            continue;
        const rec_record *named = v.restored ? v.restored : v.ref;
        out->differs = 1;
        out->rank = (int)rank;
        out->status = rec_restore_status_name(v.status);
        out->diff = v.status == REC_RESTORE_DIFFERS ? rec_diff_name(v.diff) : NULL;
        if (named) {
            snprintf(out->name, sizeof(out->name), "%.*s", (int)named->name_len, named->name);
            out->occurrence = named->occurrence;
        }
    }
    free(mine);
    free(ref);
    frame_set_release(&set);
    return 0;
}

/* One record of the window: its key, the comparable record and its row. */
typedef struct rrow {
    int run; /* 0: a, 1: b */
    int rank;
    int64_t step;
    rec_record rec; /* points into the frame set read */
    int level;
} rrow;

static int in_steps(const rec_record *r)
{
    return rec_in_steps(r);
}

static int by_key(const void *x, const void *y)
{
    const rrow *a = x, *b = y;
    if (a->run != b->run)
        return a->run - b->run;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    size_t la = a->rec.name_len, lb = b->rec.name_len;
    int c = memcmp(a->rec.name, b->rec.name, la < lb ? la : lb);
    if (c)
        return c;
    if (la != lb)
        return la < lb ? -1 : 1;
    return a->rec.occurrence < b->rec.occurrence ? -1 : a->rec.occurrence > b->rec.occurrence;
}

/* same_key - a and b (of different runs) name the same record. */
static int cmp_key(const rrow *a, const rrow *b)
{
    rrow x = *a, y = *b;
    x.run = y.run = 0;
    return by_key(&x, &y);
}

static cause_inputs inputs_of(const rec_record *x, const rec_record *y)
{
    if (!x->n_inputs || !y->n_inputs)
        return CAUSE_IN_UNKNOWN;
    return x->n_inputs == y->n_inputs && !memcmp(x->inputs, y->inputs, x->n_inputs * sizeof(uint64_t)) ? CAUSE_IN_SAME
                                                                                                       : CAUSE_IN_DIFF;
}

static void fill(rc_rec *o, const rrow *a, const rrow *b, cause_inputs in)
{
    memset(o, 0, sizeof(*o));
    o->rank = a->rank;
    o->step = a->step;
    o->seq = (int64_t)a->rec.seq;
    snprintf(o->name, sizeof(o->name), "%.*s", (int)a->rec.name_len, a->rec.name);
    o->occurrence = a->rec.occurrence;
    o->level = a->level;
    o->dtype = a->rec.dtype;
    o->fp_a = a->rec.fp;
    o->fp_b = b->rec.fp;
    o->has_value = (a->rec.flags & REC_HAS_VALUE) && (b->rec.flags & REC_HAS_VALUE);
    o->value_a = a->rec.value;
    o->value_b = b->rec.value;
    o->inputs = (int)in;
}

static int earlier(const rrow *a, const rc_rec *than, int have)
{
    return !have || a->step < than->step || (a->step == than->step && (int64_t)a->rec.seq < than->seq);
}

/* read_rows - the step records of runs `a` and `b` over steps [from, to] on ranks `ranks` (entries of state blocks
 * are no step records: common/recmatch.h), run a's first, each run's sorted by key, with how many in *n and how
 * many are run a's in *na. `set` holds the records the rows borrow (frame_set_release). The rows (caller frees),
 * or NULL with `err` (a database error, or more than RC_MAX_RECORDS records). */
static rrow *read_rows(int64_t a, int64_t b, int64_t from, int64_t to, const char *ranks, frame_set *set, int *n,
                       int *na, char *err, size_t cap)
{
    char keys[64], f[32], t[32];
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", a, b);
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    const char *p[] = {keys, f, t, ranks};
    PGresult *r = db_exec("rc_count", 4, p, err, cap);
    if (!r)
        return NULL;
    long long stored = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (stored > RC_MAX_RECORDS) {
        snprintf(err, cap,
                 "steps %" PRId64 "-%" PRId64 " of the two runs hold more than %d records; declare checkpoints so that "
                 "a replay starts closer to the divergence",
                 from, to, RC_MAX_RECORDS);
        return NULL;
    }
    r = db_exec_bin("rc_frames", 4, p, err, cap);
    if (!r)
        return NULL;
    if (frames_rows(set, r, 0, 1, 2, 3, in_steps, err, cap) < 0)
        return NULL;
    *n = (int)set->n;
    rrow *rows = xcalloc((size_t)*n + 1, sizeof(*rows));
    for (int i = 0; i < *n; i++) {
        rrow *x = &rows[i];
        x->run = set->run_key[i] == a ? 0 : 1;
        x->rec = set->recs[i];
        x->rank = (int)x->rec.rank;
        x->step = x->rec.step;
        x->level = x->rec.level;
    }
    qsort(rows, (size_t)*n, sizeof(*rows), by_key);
    *na = 0;
    while (*na < *n && rows[*na].run == 0)
        (*na)++;
    return rows;
}

/* merge_rows - merge the two sorted halves of `rows` (run a's [0, na), run b's [na, n)): the records both hold
 * (out->common), the first difference (out->first, out->differs) and the first whose inputs matched
 * (out->clean). Returns each rank's first difference (caller frees), how many in *nfirst, and in *firsts the
 * array judge_cause fills from them (as large; caller frees). */
static rc_rec *merge_rows(const rrow *rows, int n, int na, rc_result *out, int *nfirst, cause_rank **firsts_out)
{
    cause_rank *firsts = xcalloc(64, sizeof(*firsts));
    rc_rec *per = xcalloc(64, sizeof(*per));
    int capfirst = 64;
    int have_first = 0;
    *nfirst = 0;
    for (int i = 0, j = na; i < na && j < n;) {
        int c = cmp_key(&rows[i], &rows[j]);
        if (c < 0) {
            i++;
            continue;
        }
        if (c > 0) {
            j++;
            continue;
        }
        const rrow *x = &rows[i], *y = &rows[j];
        out->common++;
        if (rec_compare(&x->rec, &y->rec) != REC_SAME) {
            cause_inputs in = inputs_of(&x->rec, &y->rec);
            int k;
            for (k = 0; k < *nfirst && firsts[k].rank != x->rank; k++)
                ;
            if (k == *nfirst) {
                if (*nfirst == capfirst) {
                    capfirst *= 2;
                    firsts = xrealloc(firsts, (size_t)capfirst * sizeof(*firsts));
                    per = xrealloc(per, (size_t)capfirst * sizeof(*per));
                }
                (*nfirst)++;
                fill(&per[k], x, y, in);
            } else if (earlier(x, &per[k], 1)) {
                fill(&per[k], x, y, in);
            }
            if (earlier(x, &out->first, have_first)) {
                fill(&out->first, x, y, in);
                have_first = 1;
            }
            if (in == CAUSE_IN_SAME && earlier(x, &out->clean, out->has_clean)) {
                fill(&out->clean, x, y, in);
                out->has_clean = 1;
            }
        }
        i++;
        j++;
    }
    out->differs = have_first;
    *firsts_out = firsts;
    return per;
}

/* judge_cause - the cause rule (common/cause.h) over each rank's first difference `per` (nfirst > 0, copied into
 * `firsts`), the rank count from `rows`: out->cause and its origin ranks. */
static void judge_cause(const rrow *rows, int n, const rc_rec *per, cause_rank *firsts, int nfirst, rc_result *out)
{
    for (int k = 0; k < nfirst; k++)
        firsts[k] = (cause_rank){per[k].rank,         per[k].step,       per[k].seq, per[k].name,
                                 strlen(per[k].name), per[k].occurrence, 0,          (cause_inputs)per[k].inputs};
    int nranks = 0;
    for (int i = 0; i < n; i++)
        if (rows[i].rank + 1 > nranks)
            nranks = rows[i].rank + 1;
    cause_facts cf = {firsts, (size_t)nfirst, nranks, 0};
    cause_result cv;
    cause_judge(&cf, &cv);
    out->cause = cv.kind;
    for (int k = 0; k < cv.norigin && out->norigin < RC_MAX_ORIGIN; k++)
        out->origin[out->norigin++] = cv.origin[k];
}

int rc_compare(int64_t a, int64_t b, int64_t from, int64_t to, const char *ranks, rc_result *out, char *err, size_t cap)
{
    memset(out, 0, sizeof(*out));
    frame_set set = {0};
    int n = 0, na = 0;
    rrow *rows = read_rows(a, b, from, to, ranks, &set, &n, &na, err, cap);
    if (!rows) {
        frame_set_release(&set);
        return -1;
    }
    int nfirst;
    cause_rank *firsts;
    rc_rec *per = merge_rows(rows, n, na, out, &nfirst, &firsts);
    if (nfirst)
        judge_cause(rows, n, per, firsts, nfirst, out);
    free(firsts);
    free(per);
    free(rows);
    frame_set_release(&set);
    return 0;
}

/* replay_diff.c - two runs' records of a window compared (server/rules/replay_diff.h): pure, tested from cases. */
#include "server/rules/replay_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/core/xalloc.h"

static int by_key(const void *x, const void *y)
{
    const rc_row *a = x, *b = y;
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

/* cmp_key - how the records a and b (of different runs) compare by key, whatever their runs. */
static int cmp_key(const rc_row *a, const rc_row *b)
{
    rc_row x = *a, y = *b;
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

static void fill(rc_rec *o, const rc_row *a, const rc_row *b, cause_inputs in)
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

static int earlier(const rc_row *a, const rc_rec *than, int have)
{
    return !have || a->step < than->step || (a->step == than->step && (int64_t)a->rec.seq < than->seq);
}

/* merge_rows - merge the two sorted halves of `rows` (run a's [0, na), run b's [na, n)): the records both hold
 * (out->common), the first difference (out->first, out->differs) and the first whose inputs matched
 * (out->clean). Returns each rank's first difference (caller frees), how many in *nfirst, and in *firsts the
 * array judge_cause fills from them (as large; caller frees). */
static rc_rec *merge_rows(const rc_row *rows, int n, int na, rc_result *out, int *nfirst, cause_rank **firsts_out)
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
        const rc_row *x = &rows[i], *y = &rows[j];
        out->common++;
        if (rec_compare(&x->rec, &y->rec) != REC_SAME) {
            cause_inputs in = inputs_of(&x->rec, &y->rec);
            int k;
            for (k = 0; k < *nfirst && per[k].rank != x->rank; k++)
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
static void judge_cause(const rc_row *rows, int n, const rc_rec *per, cause_rank *firsts, int nfirst, rc_result *out)
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

void replay_diff(rc_row *rows, int n, rc_result *out)
{
    memset(out, 0, sizeof(*out));
    qsort(rows, (size_t)n, sizeof(*rows), by_key);
    int na = 0;
    while (na < n && rows[na].run == 0)
        na++;
    int nfirst;
    cause_rank *firsts;
    rc_rec *per = merge_rows(rows, n, na, out, &nfirst, &firsts);
    out->ranks_differ = nfirst;
    if (nfirst)
        judge_cause(rows, n, per, firsts, nfirst, out);
    free(firsts);
    free(per);
}

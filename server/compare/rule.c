/* rule.c - the first-divergence rule (server/compare/rule.h): pure, tested from a table of cases. */
#include "server/compare/rule.h"

#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"

static int by_key(const void *pa, const void *pb)
{
    const cmp_rec *a = pa, *b = pb;
    size_t n = a->rec.name_len < b->rec.name_len ? a->rec.name_len : b->rec.name_len;
    int c = memcmp(a->rec.name, b->rec.name, n);
    if (c)
        return c;
    if (a->rec.name_len != b->rec.name_len)
        return a->rec.name_len < b->rec.name_len ? -1 : 1;
    if (a->rec.occurrence != b->rec.occurrence)
        return a->rec.occurrence < b->rec.occurrence ? -1 : 1;
    if (a->run != b->run)
        return a->run < b->run ? -1 : 1;
    return a->rec.seq < b->rec.seq ? -1 : a->rec.seq > b->rec.seq;
}

static int same_key(const cmp_rec *a, const cmp_rec *b)
{
    return a->rec.occurrence == b->rec.occurrence && a->rec.name_len == b->rec.name_len &&
           memcmp(a->rec.name, b->rec.name, a->rec.name_len) == 0;
}

int cmp_rule_same(const cmp_rec *a, const cmp_rec *b)
{
    if (!a || !b)
        return !a && !b;
    return rec_compare(&a->rec, &b->rec) == REC_SAME;
}

void cmp_rule_first(cmp_rec *recs, size_t n, int nruns, cmp_first *out)
{
    memset(out, 0, sizeof(*out));
    out->majority = out->odd = -1;
    out->seq = INT64_MAX;
    if (nruns > GROUP_MAX_RUNS)
        nruns = GROUP_MAX_RUNS;
    qsort(recs, n, sizeof(*recs), by_key);

    /* Walk the keys; keep the diverging one with the smallest seq. */
    for (size_t i = 0; i < n;) {
        const cmp_rec *by_run[GROUP_MAX_RUNS] = {0};
        size_t j = i;
        int64_t seq = INT64_MAX;
        for (; j < n && same_key(&recs[j], &recs[i]); j++) {
            int r = recs[j].run;
            if (r >= 0 && r < nruns && !by_run[r])
                by_run[r] = &recs[j]; /* a repeated key within one run: its first */
            if ((int64_t)recs[j].rec.seq < seq)
                seq = (int64_t)recs[j].rec.seq;
        }
        int differs = 0;
        for (int k = 0; k < nruns && !differs; k++)
            differs = !by_run[k] || !cmp_rule_same(by_run[k], by_run[0]);
        if (differs && seq < out->seq) {
            out->found = 1;
            out->seq = seq;
            memcpy(out->by_run, by_run, sizeof(by_run));
        }
        i = j;
    }
    if (!out->found)
        return;

    /* The majority: the content more than half of the runs share (missing counts as a content). */
    for (int k = 0; k < nruns; k++) {
        if (!out->by_run[k])
            out->missing = 1;
        int votes = 0;
        for (int m = 0; m < nruns; m++)
            votes += cmp_rule_same(out->by_run[k], out->by_run[m]);
        if (2 * votes > nruns)
            out->majority = k;
    }
    if (out->majority < 0)
        return;
    int outside = 0;
    for (int k = 0; k < nruns; k++) {
        out->agrees[k] = cmp_rule_same(out->by_run[k], out->by_run[out->majority]);
        if (!out->agrees[k]) {
            outside++;
            out->odd = k;
        }
    }
    if (outside != 1 || nruns < 3)
        out->odd = -1;
}

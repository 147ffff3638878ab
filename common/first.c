/* first.c - the first divergence (common/first.h): pure, tested from a table of cases. */
#include "common/first.h"

#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"

static int by_name(const first_rec *a, const first_rec *b)
{
    size_t n = a->rec.name_len < b->rec.name_len ? a->rec.name_len : b->rec.name_len;
    int c = memcmp(a->rec.name, b->rec.name, n);
    if (c)
        return c;
    if (a->rec.name_len != b->rec.name_len)
        return a->rec.name_len < b->rec.name_len ? -1 : 1;
    return a->rec.occurrence < b->rec.occurrence ? -1 : a->rec.occurrence > b->rec.occurrence;
}

/* in_run_order - by run, step, seq (then key, so that the order is total): where places are counted. */
static int in_run_order(const void *pa, const void *pb)
{
    const first_rec *a = pa, *b = pb;
    if (a->run != b->run)
        return a->run < b->run ? -1 : 1;
    if (a->rec.step != b->rec.step)
        return a->rec.step < b->rec.step ? -1 : 1;
    if (a->rec.seq != b->rec.seq)
        return a->rec.seq < b->rec.seq ? -1 : 1;
    return by_name(a, b);
}

/* by_key - by step, name, occurrence, then run and place. */
static int by_key(const void *pa, const void *pb)
{
    const first_rec *a = pa, *b = pb;
    if (a->rec.step != b->rec.step)
        return a->rec.step < b->rec.step ? -1 : 1;
    int c = by_name(a, b);
    if (c)
        return c;
    if (a->run != b->run)
        return a->run < b->run ? -1 : 1;
    return a->place < b->place ? -1 : a->place > b->place;
}

static int same_key(const first_rec *a, const first_rec *b)
{
    return a->rec.step == b->rec.step && a->rec.occurrence == b->rec.occurrence && a->rec.name_len == b->rec.name_len &&
           memcmp(a->rec.name, b->rec.name, a->rec.name_len) == 0;
}

int first_same(const first_rec *a, const first_rec *b)
{
    if (!a || !b)
        return !a && !b;
    return rec_compare(&a->rec, &b->rec) == REC_SAME;
}

/* number_places - each record's position among its run's records of its step. */
static void number_places(first_rec *recs, size_t n)
{
    qsort(recs, n, sizeof(*recs), in_run_order);
    for (size_t i = 0; i < n; i++)
        recs[i].place = i > 0 && recs[i - 1].run == recs[i].run && recs[i - 1].rec.step == recs[i].rec.step
                            ? recs[i - 1].place + 1
                            : 0;
}

/* A candidate's position in the order the rule walks: step, place, the run holding it there. */
typedef struct first_at {
    int64_t step;
    size_t place;
    int run;
} first_at;

static int at_before(first_at x, first_at y)
{
    if (x.step != y.step)
        return x.step < y.step;
    if (x.place != y.place)
        return x.place < y.place;
    return x.run < y.run;
}

/* set_majority - the majority, the runs that agree with it and the odd run of a found divergence. */
static void set_majority(int nruns, first_div *out)
{
    for (int k = 0; k < nruns; k++) {
        if (!out->by_run[k])
            out->missing = 1;
        int votes = 0;
        for (int m = 0; m < nruns; m++)
            votes += first_same(out->by_run[k], out->by_run[m]);
        if (2 * votes > nruns)
            out->majority = k;
    }
    if (out->majority < 0)
        return;
    int outside = 0;
    for (int k = 0; k < nruns; k++) {
        out->agrees[k] = first_same(out->by_run[k], out->by_run[out->majority]);
        if (!out->agrees[k]) {
            outside++;
            out->odd = k;
        }
    }
    if (outside != 1 || nruns < 3)
        out->odd = -1;
}

void first_find(first_rec *recs, size_t n, int nruns, first_div *out)
{
    memset(out, 0, sizeof(*out));
    out->majority = out->odd = -1;
    if (nruns > FIRST_MAX_RUNS)
        nruns = FIRST_MAX_RUNS;
    number_places(recs, n);
    qsort(recs, n, sizeof(*recs), by_key);

    /* Walk the keys; keep the diverging one that comes first. */
    first_at best = {0, 0, 0};
    for (size_t i = 0; i < n;) {
        const first_rec *by_run[FIRST_MAX_RUNS] = {0};
        size_t j = i;
        int64_t seq = INT64_MAX;
        first_at at = {recs[i].rec.step, SIZE_MAX, 0};
        for (; j < n && same_key(&recs[j], &recs[i]); j++) {
            int r = recs[j].run;
            if (r < 0 || r >= nruns || by_run[r])
                continue; /* not compared, or a repeated key within one run: its first stands */
            by_run[r] = &recs[j];
            if ((int64_t)recs[j].rec.seq < seq)
                seq = (int64_t)recs[j].rec.seq;
            if (recs[j].place < at.place) /* runs come in order: the lowest run at the smallest place */
                at = (first_at){recs[j].rec.step, recs[j].place, r};
        }
        i = j;
        if (at.place == SIZE_MAX)
            continue; /* held by no run compared */
        int differs = 0;
        for (int k = 0; k < nruns && !differs; k++)
            differs = !by_run[k] || !first_same(by_run[k], by_run[0]);
        if (differs && (!out->found || at_before(at, best))) {
            out->found = 1;
            out->step = at.step;
            out->seq = seq;
            best = at;
            memcpy(out->by_run, by_run, sizeof(by_run));
        }
    }
    if (out->found)
        set_majority(nruns, out);
}

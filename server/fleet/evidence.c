/* evidence.c - the pure rules of the suspects part: the spread of one record's divergences, blame shares. */
#include "server/fleet/evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/xalloc.h"

/* in_set - 1 when `name` is one of the ','-separated names in `set`. */
static int in_set(const char *set, const char *name, size_t len)
{
    for (const char *p = set; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, name, len))
            return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

int ev_cover_size(const char *const *sets, int n)
{
    if (n <= 0)
        return 0;
    char *covered = xcalloc((size_t)n, 1);
    int picks = 0;
    for (;;) {
        /* the node in the most uncovered sets */
        const char *best = NULL;
        size_t best_len = 0;
        int best_count = 0;
        for (int i = 0; i < n; i++) {
            if (covered[i])
                continue;
            for (const char *p = sets[i]; *p;) {
                const char *e = strchr(p, ',');
                size_t l = e ? (size_t)(e - p) : strlen(p);
                int count = 0;
                for (int j = 0; j < n && l; j++)
                    if (!covered[j] && in_set(sets[j], p, l))
                        count++;
                if (count > best_count) {
                    best = p;
                    best_len = l;
                    best_count = count;
                }
                p += l + (e ? 1 : 0);
            }
        }
        if (!best)
            break;
        for (int j = 0; j < n; j++)
            if (!covered[j] && in_set(sets[j], best, best_len))
                covered[j] = 1;
        picks++;
    }
    free(covered);
    return picks;
}

void ev_share_blame(const ev_weak *w, int nw, const double *strong, const double *expo, int nnodes, double *k)
{
    double *rate = xmalloc(((size_t)nnodes + 1) * sizeof(double));
    for (int i = 0; i < nnodes; i++)
        rate[i] = 0.5;
    for (int iter = 0; iter < 50; iter++) {
        for (int i = 0; i < nnodes; i++)
            k[i] = strong[i];
        for (int g = 0; g < nw; g++) {
            double total = 0;
            for (int c = 0; c < w[g].ncand; c++)
                total += rate[w[g].cand[c]];
            for (int c = 0; c < w[g].ncand; c++) {
                double share = total > 0 ? w[g].mass * rate[w[g].cand[c]] / total : w[g].mass / w[g].ncand;
                k[w[g].cand[c]] += share > 1.0 ? 1.0 : share;
            }
        }
        for (int i = 0; i < nnodes; i++)
            rate[i] = (k[i] + 0.5) / (expo[i] + 1.0);
    }
    free(rate);
}

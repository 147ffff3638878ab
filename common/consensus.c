/* consensus.c - the consensus key, fold and majority rule (common/consensus.h). */
#include "common/consensus.h"

#include <stdlib.h>
#include <string.h>

#include "common/lsfp1.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

uint64_t cons_key(const uint32_t *ranks, size_t n)
{
    uint32_t small[REC_COMM_LIST_MAX];
    uint32_t *s = n <= REC_COMM_LIST_MAX ? small : malloc(n * sizeof(*s));
    if (!s) /* no memory for a copy: fall back to the ranks as given (callers pass sorted ranks when large) */
        return rec_comm_id(ranks, n);
    if (n)
        memcpy(s, ranks, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || s[u - 1] != s[i])
            s[u++] = s[i];
    uint64_t k = rec_comm_id(s, u);
    if (s != small)
        free(s);
    return k;
}

uint64_t cons_term(const rec_record *r)
{
    uint64_t h = fp_lsfp1(r->name, r->name_len);
    h = fp_fmix64(h + r->fp);
    return fp_fmix64(h ^ (r->nbytes * 0xc2b2ae3d27d4eb4fULL) ^ 0x434f);
}

int cons_same(const rec_record *a, const rec_record *b)
{
    return a->name_len == b->name_len && memcmp(a->name, b->name, a->name_len) == 0 && a->nbytes == b->nbytes &&
           a->fp == b->fp;
}

uint64_t cons_fold(uint64_t acc, const rec_record *r, uint32_t index)
{
    return acc + fp_fmix64(cons_term(r) ^ fp_fmix64(0x434f4e53ULL + index));
}

static int same_copy(const cons_copy *a, const cons_copy *b)
{
    return a->n == b->n && a->fold == b->fold;
}

cons_verdict cons_judge(const cons_copy *copies, size_t n, unsigned char *odd)
{
    cons_verdict v = {1, 0, 0};
    /* the majority candidate in one pass (Boyer and Moore's vote), then its count in a second */
    size_t cand = 0, votes = 0;
    for (size_t i = 0; i < n; i++) {
        if (!votes)
            cand = i, votes = 1;
        else
            votes += same_copy(&copies[i], &copies[cand]) ? 1 : (size_t)-1;
    }
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += same_copy(&copies[i], &copies[cand]);
    if (count == n) {
        memset(odd, 0, n);
        return v;
    }
    v.agree = 0;
    v.clear = 2 * count > n;
    for (size_t i = 0; i < n; i++) {
        odd[i] = v.clear ? !same_copy(&copies[i], &copies[cand]) : 1;
        v.n_odd += odd[i];
    }
    return v;
}

int cons_place_cmp(const cons_place *a, const cons_place *b)
{
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    int64_t ka = (int64_t)a->key, kb = (int64_t)b->key;
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return (a->win > b->win) - (a->win < b->win);
}

/* record_at - member `m`'s record at consensus index `ix` (NULL: none). */
static const rec_record *record_at(const cons_member *m, uint32_t ix)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->index[i] == ix)
            return m->recs[i];
    return NULL;
}

static int records_differ(const rec_record *a, const rec_record *b)
{
    return !a || !b ? a != b : !cons_same(a, b);
}

int cons_first_record(const cons_member *m, size_t n, uint32_t win, cons_first *out)
{
    if (!n)
        return 0;
    size_t ref = 0;
    for (size_t j = 0; j < n; j++)
        if (!m[j].odd) {
            ref = j;
            break;
        }
    uint64_t lo = (uint64_t)win * CONS_WINDOW;
    for (uint64_t ix = lo; ix < lo + CONS_WINDOW && ix <= UINT32_MAX; ix++) {
        const rec_record *r = record_at(&m[ref], (uint32_t)ix);
        size_t found = n;
        for (size_t j = 0; j < n; j++) {
            if (j == ref || !records_differ(r, record_at(&m[j], (uint32_t)ix)))
                continue;
            if (found == n || (m[j].odd && !m[found].odd))
                found = j;
        }
        if (found < n) {
            *out = (cons_first){(uint32_t)ix, found, record_at(&m[found], (uint32_t)ix), r};
            return 1;
        }
    }
    return 0;
}

/* consensus.c - the consensus key, fold and majority rule (common/consensus.h). */
#include "common/consensus.h"

#include <stdlib.h>
#include <string.h>

#include "common/lsfp1.h"
#include "common/recmatch.h"

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

uint64_t cons_fold(uint64_t acc, const rec_record *r, uint32_t index)
{
    return acc + fp_fmix64(rec_digest_term(r) ^ fp_fmix64(0x434f4e53ULL + index));
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

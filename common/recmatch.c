/* recmatch.c - when two records are the same, and the step digest built from that rule (common/recmatch.h). */
#include "common/recmatch.h"

#include "common/lsfp1.h"

rec_diff rec_compare(const rec_record *a, const rec_record *b)
{
    if (a->dtype != b->dtype)
        return REC_DIFF_DTYPE;
    if (!rec_same_shape(a, b) || a->nbytes != b->nbytes)
        return REC_DIFF_SHAPE;
    if (a->fp != b->fp)
        return REC_DIFF_CONTENT;
    int va = (a->flags & REC_HAS_VALUE) != 0, vb = (b->flags & REC_HAS_VALUE) != 0;
    if (va != vb || (va && a->value != b->value))
        return REC_DIFF_CONTENT;
    return REC_SAME;
}

const char *rec_diff_name(rec_diff d)
{
    static const char *const names[] = {"same", "dtype", "shape", "content"};
    return (unsigned)d < sizeof(names) / sizeof(names[0]) ? names[d] : "?";
}

uint64_t rec_digest_term(const rec_record *r)
{
    uint64_t h = fp_lsfp1(r->name, r->name_len);
    h = fp_fmix64(h ^ ((uint64_t)r->occurrence * 0x9e3779b97f4a7c15ULL));
    h = fp_fmix64(h + r->fp);
    if (r->flags & REC_HAS_VALUE)
        h = fp_fmix64(h ^ r->value ^ 0x5641);
    h = fp_fmix64(h + ((uint64_t)r->dtype << 8 | r->ndim));
    for (unsigned i = 0; i < r->ndim; i++)
        h = fp_fmix64(h + (uint64_t)r->shape[i]);
    h = fp_fmix64(h ^ (r->nbytes * 0xc2b2ae3d27d4eb4fULL) ^ 0x5a45); /* version 2: the size */
    return h;
}

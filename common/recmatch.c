/* recmatch.c - when two records are the same, and the step digest built from that rule (common/recmatch.h). */
#include "common/recmatch.h"

#include <stdlib.h>
#include <string.h>

#include "common/lsfp1.h"

/* same_scale_layout - 1 when both carry scales of one dtype, shape and size, or neither carries any. */
static int same_scale_layout(const rec_ext *x, const rec_ext *y)
{
    if (x->has_scales != y->has_scales)
        return 0;
    if (!x->has_scales)
        return 1;
    if (x->scales_dtype != y->scales_dtype || x->scales_ndim != y->scales_ndim || x->scales_nbytes != y->scales_nbytes)
        return 0;
    for (unsigned i = 0; i < x->scales_ndim; i++)
        if (x->scales_shape[i] != y->scales_shape[i])
            return 0;
    return 1;
}

rec_diff rec_compare(const rec_record *a, const rec_record *b)
{
    rec_ext xa, xb;
    rec_ext_of(a, &xa);
    rec_ext_of(b, &xb);
    if (a->dtype != b->dtype)
        return REC_DIFF_DTYPE;
    if (!rec_same_shape(a, b) || a->nbytes != b->nbytes)
        return REC_DIFF_SHAPE;
    if (xa.has_shard != xb.has_shard ||
        (xa.has_shard && (xa.shard_offset != xb.shard_offset || xa.shard_total != xb.shard_total)))
        return REC_DIFF_SHAPE;
    if (xa.has_scales && xb.has_scales && !same_scale_layout(&xa, &xb))
        return REC_DIFF_SHAPE;
    if (a->fp != b->fp)
        return REC_DIFF_CONTENT;
    int va = (a->flags & REC_HAS_VALUE) != 0, vb = (b->flags & REC_HAS_VALUE) != 0;
    if (va != vb || (va && a->value != b->value))
        return REC_DIFF_CONTENT;
    if (xa.has_scales != xb.has_scales || (xa.has_scales && xa.scales_fp != xb.scales_fp))
        return REC_DIFF_SCALES;
    return REC_SAME;
}

int rec_scales_differ(const rec_record *a, const rec_record *b)
{
    rec_ext xa, xb;
    rec_ext_of(a, &xa);
    rec_ext_of(b, &xb);
    return xa.has_scales && xb.has_scales && xa.scales_fp != xb.scales_fp;
}

const char *rec_diff_name(rec_diff d)
{
    static const char *const names[] = {"same", "dtype", "shape", "content", "scales"};
    return (unsigned)d < sizeof(names) / sizeof(names[0]) ? names[d] : "?";
}

int rec_held_answers(int64_t n_have, uint64_t x_have, int64_t n_digest, uint64_t digest)
{
    if (n_have > n_digest)
        return -1;
    if (n_have < n_digest)
        return 0;
    return x_have == digest ? 1 : -1;
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
    if (r->ext_len) { /* terms only records with extension fields have: version 2 digests of others stand */
        rec_ext x;
        rec_ext_of(r, &x);
        if (x.has_shard) {
            h = fp_fmix64(h ^ 0x5348 ^ x.shard_offset);
            h = fp_fmix64(h + x.shard_total);
        }
        if (x.has_scales) {
            h = fp_fmix64(h ^ 0x5343 ^ ((uint64_t)x.scales_dtype << 8 | x.scales_ndim));
            for (unsigned i = 0; i < x.scales_ndim; i++)
                h = fp_fmix64(h + (uint64_t)x.scales_shape[i]);
            h = fp_fmix64(h ^ (x.scales_nbytes * 0xc2b2ae3d27d4eb4fULL));
            h = fp_fmix64(h + x.scales_fp);
        }
    }
    return h;
}

uint64_t rec_inputs_term(const rec_record *r)
{
    if (!r->n_inputs || !r->inputs)
        return 0;
    uint64_t h = fp_lsfp1(r->name, r->name_len);
    h = fp_fmix64(h ^ ((uint64_t)r->occurrence * 0x9e3779b97f4a7c15ULL) ^ 0x494e);
    for (unsigned i = 0; i < r->n_inputs; i++)
        h = fp_fmix64(h + r->inputs[i]);
    return h ? h : 1;
}

const char *rec_restore_status_name(rec_restore_status s)
{
    static const char *const names[] = {"same", "differs", "not-restored", "not-saved", "unverified"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* An entry of one side, with its place in that side's order. */
typedef struct keyed {
    const rec_record *r;
    size_t pos;
} keyed;

static int key_cmp(const rec_record *a, const rec_record *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c)
        return c;
    if (a->name_len != b->name_len)
        return a->name_len < b->name_len ? -1 : 1;
    return a->occurrence < b->occurrence ? -1 : a->occurrence > b->occurrence;
}

static int by_key_pos(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    int c = key_cmp(a->r, b->r);
    return c ? c : (a->pos < b->pos ? -1 : a->pos > b->pos);
}

/* sorted_keys - the entries of `v` (those that `skip_state` does not drop) sorted by key, then position. */
static keyed *sorted_keys(const rec_record *const *v, size_t n, int skip_state, size_t *out_n)
{
    keyed *k = malloc((n ? n : 1) * sizeof(*k));
    if (!k)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!skip_state || !rec_is_state(v[i]))
            k[m++] = (keyed){v[i], i};
    qsort(k, m, sizeof(*k), by_key_pos);
    *out_n = m;
    return k;
}

int rec_restore_check(const rec_record *const *restored, size_t n, const rec_record *const *ref, size_t m,
                      int ref_saved, rec_restore_result *out)
{
    size_t na, nb;
    memset(out, 0, sizeof(*out));
    keyed *a = sorted_keys(restored, n, 0, &na), *b = sorted_keys(ref, m, !ref_saved, &nb);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    /* The first difference: in the reference's order (saved), else in the restored order; entries only the
     * restored block holds come after every other difference against a saved block. */
    size_t best_pos = SIZE_MAX;
    int best_rank = 3; /* 0 a difference in order, 1 not saved; 3 none */
    size_t first_missing = SIZE_MAX, first_extra = SIZE_MAX;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : key_cmp(a[i].r, b[j].r);
        if (c == 0) {
            const rec_record *x = a[i].r, *y = b[j].r;
            rec_diff d = rec_compare(y, x);
            out->compared++;
            size_t pos = ref_saved ? b[j].pos : a[i].pos;
            if (d != REC_SAME && (best_rank > 0 || pos < best_pos)) {
                best_rank = 0;
                best_pos = pos;
                out->status = REC_RESTORE_DIFFERS;
                out->diff = d;
                out->restored = x;
                out->ref = y;
            }
            /* a repeated key on one side pairs in order; the rest of the longer run goes on alone */
            i++;
            j++;
        } else if (c < 0) { /* only in the restored block */
            if (ref_saved && (!out->not_saved++ || a[i].pos < first_extra)) {
                first_extra = a[i].pos;
                out->first_not_saved = a[i].r;
            }
            if (!ref_saved) {
                out->unverified++;
            } else if (best_rank > 1 || (best_rank == 1 && a[i].pos < best_pos)) {
                best_rank = 1;
                best_pos = a[i].pos;
                out->status = REC_RESTORE_NOT_SAVED;
                out->restored = a[i].r;
                out->ref = NULL;
            }
            i++;
        } else { /* only in the reference */
            if (ref_saved && (!out->not_restored++ || b[j].pos < first_missing)) {
                first_missing = b[j].pos;
                out->first_not_restored = b[j].r;
            }
            if (ref_saved && (best_rank > 0 || b[j].pos < best_pos)) {
                best_rank = 0;
                best_pos = b[j].pos;
                out->status = REC_RESTORE_NOT_RESTORED;
                out->restored = NULL;
                out->ref = b[j].r;
            }
            j++;
        }
    }
    if (best_rank == 3)
        out->status = out->compared ? REC_RESTORE_SAME : REC_RESTORE_UNVERIFIED;
    free(a);
    free(b);
    return 0;
}

int64_t rec_resume_start(int64_t declared, int64_t restored_step, int ran_before)
{
    if (restored_step < 0 || restored_step == INT64_MAX || ran_before)
        return declared;
    return restored_step + 1 > declared ? restored_step + 1 : declared;
}

/* record.c - encode and decode framed records and stream headers. */
#include "common/record.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/lsfp1.h"

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}

static const struct {
    int key;
    size_t off;
} str_fields[] = {
    {REC_F_RUN_ID, offsetof(rec_header, run_id)},   {REC_F_JOB_ID, offsetof(rec_header, job_id)},
    {REC_F_STEP_ID, offsetof(rec_header, step_id)}, {REC_F_TWIN_GROUP, offsetof(rec_header, twin_group)},
    {REC_F_HOST, offsetof(rec_header, host)},       {REC_F_ALGO, offsetof(rec_header, algo)},
};
#define N_STR_FIELDS (sizeof(str_fields) / sizeof(str_fields[0]))

static size_t field_len(const rec_header *h, size_t i)
{
    const char *s = (const char *)h + str_fields[i].off;
    return strnlen(s, REC_STR_MAX);
}

size_t rec_header_size(const rec_header *h)
{
    size_t n = REC_HDR_FIXED + 4;
    for (size_t i = 0; i < N_STR_FIELDS; i++) {
        size_t len = field_len(h, i);
        if (len)
            n += 4 + len;
    }
    return n;
}

size_t rec_header_encode(const rec_header *h, unsigned char *out)
{
    size_t n = rec_header_size(h);
    unsigned char *p = out;

    memcpy(p, REC_MAGIC, 8);
    put16(p + 8, REC_VERSION);
    put16(p + 10, h->kind);
    put32(p + 12, (uint32_t)n);
    put32(p + 16, h->rank);
    put32(p + 20, h->flags);
    put64(p + 24, h->batch_seq);
    put64(p + 32, (uint64_t)h->created_ns);
    p += REC_HDR_FIXED;
    for (size_t i = 0; i < N_STR_FIELDS; i++) {
        size_t len = field_len(h, i);
        if (!len)
            continue;
        p[0] = (unsigned char)str_fields[i].key;
        p[1] = 0;
        put16(p + 2, (uint16_t)len);
        memcpy(p + 4, (const char *)h + str_fields[i].off, len);
        p += 4 + len;
    }
    put32(p, crc32c(out, n - 4));
    return n;
}

/* site_check - 0 when the site's strings fit and hold no NUL byte. */
static int site_check(const rec_site *st, char *why, size_t cap)
{
    if (st->module_len > REC_SITE_MODULE_MAX || st->function_len > REC_SITE_NAME_MAX ||
        st->caller_len > REC_SITE_NAME_MAX) {
        snprintf(why, cap, "call site strings of %u, %u and %u bytes exceed %d, %d and %d", st->module_len,
                 st->function_len, st->caller_len, REC_SITE_MODULE_MAX, REC_SITE_NAME_MAX, REC_SITE_NAME_MAX);
        return -1;
    }
    if ((st->module_len && (!st->module || memchr(st->module, 0, st->module_len))) ||
        (st->function_len && (!st->function || memchr(st->function, 0, st->function_len))) ||
        (st->caller_len && (!st->caller || memchr(st->caller, 0, st->caller_len)))) {
        snprintf(why, cap, "a call site string is NULL or contains a NUL byte");
        return -1;
    }
    return 0;
}

/* site_field_size - bytes of the site field (its key and length included), 0 when the record has no site. */
static size_t site_field_size(const rec_record *r)
{
    if (!rec_has_site(r))
        return 0;
    return 4 + REC_SITE_FIXED + (size_t)r->site.module_len + r->site.function_len + r->site.caller_len;
}

/* ext_size - bytes of the extension block (its length word included), 0 when the record has none: the site
 * field, then the other fields (r->ext). */
static size_t ext_size(const rec_record *r)
{
    size_t n = site_field_size(r) + r->ext_len;
    return n ? 2 + n : 0;
}

uint64_t rec_comm_id(const uint32_t *ranks, size_t n)
{
    uint64_t h = fp_fmix64(0x434f4d4dULL ^ (uint64_t)n);
    for (size_t i = 0; i < n; i++)
        h = fp_fmix64(h + ranks[i] + 1);
    return h;
}

size_t rec_ext_encode(const rec_ext *x, unsigned char *out)
{
    unsigned char *p = out;
    if (x->has_shard) {
        p[0] = REC_X_SHARD, p[1] = 0;
        put16(p + 2, 24);
        put64(p + 4, x->shard_offset);
        put64(p + 12, x->shard_total);
        put64(p + 20, x->shard_acc);
        p += 28;
    }
    if (x->chunk_bytes && x->chunk_bytes != FP_CHUNK_BYTES) {
        p[0] = REC_X_CHUNK, p[1] = 0;
        put16(p + 2, 8);
        put64(p + 4, x->chunk_bytes);
        p += 12;
    }
    if (x->has_scales) {
        unsigned nd = x->scales_ndim <= LS_MAX_DIMS ? x->scales_ndim : LS_MAX_DIMS;
        p[0] = REC_X_SCALES, p[1] = 0;
        put16(p + 2, (uint16_t)(24 + 8 * nd));
        memset(p + 4, 0, 8);
        p[4] = x->scales_dtype;
        p[5] = (unsigned char)nd;
        put64(p + 12, x->scales_nbytes);
        put64(p + 20, x->scales_fp);
        for (unsigned i = 0; i < nd; i++)
            put64(p + 28 + 8 * i, (uint64_t)x->scales_shape[i]);
        p += 28 + 8 * nd;
    }
    if (x->has_comm) {
        uint32_t nl = x->comm_nlisted <= REC_COMM_LIST_MAX ? x->comm_nlisted : 0;
        p[0] = REC_X_COMM, p[1] = 0;
        put16(p + 2, (uint16_t)(16 + 4 * nl));
        put32(p + 4, x->comm_size);
        put32(p + 8, nl);
        put64(p + 12, x->comm_id);
        for (uint32_t i = 0; i < nl; i++)
            put32(p + 20 + 4 * i, x->comm_ranks[i]);
        p += 20 + 4 * nl;
    }
    if (x->has_consensus) {
        p[0] = REC_X_CONSENSUS, p[1] = 0;
        put16(p + 2, 16);
        put64(p + 4, x->consensus_key);
        put32(p + 12, x->consensus_index);
        put32(p + 16, 0);
        p += 20;
    }
    return (size_t)(p - out);
}

int rec_ext_parse(const unsigned char *ext, size_t len, rec_ext *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    size_t off = 0;
    while (off < len) {
        if (off + 4 > len) {
            snprintf(why, cap, "extension field at byte %zu is cut short", off);
            return -1;
        }
        unsigned key = ext[off];
        size_t flen = get16(ext + off + 2);
        const unsigned char *v = ext + off + 4;
        if (off + 4 + flen > len) {
            snprintf(why, cap, "extension field %u of %zu bytes runs past the record", key, flen);
            return -1;
        }
        switch (key) {
        case REC_X_SITE:
            snprintf(why, cap, "a call site among the other extension fields (it is the record's site)");
            return -1;
        case REC_X_SHARD:
            if (flen != 24 || out->has_shard) {
                snprintf(why, cap, "shard field of %zu bytes (24 expected, once)", flen);
                return -1;
            }
            out->has_shard = 1;
            out->shard_offset = get64(v);
            out->shard_total = get64(v + 8);
            out->shard_acc = get64(v + 16);
            break;
        case REC_X_CHUNK:
            if (flen != 8 || out->chunk_bytes) {
                snprintf(why, cap, "chunk field of %zu bytes (8 expected, once)", flen);
                return -1;
            }
            out->chunk_bytes = get64(v);
            if (!out->chunk_bytes) {
                snprintf(why, cap, "chunk size 0");
                return -1;
            }
            break;
        case REC_X_SCALES:
            if (flen < 24 || out->has_scales || v[1] > LS_MAX_DIMS || flen != 24 + 8 * (size_t)v[1]) {
                snprintf(why, cap, "scales field of %zu bytes does not hold its shape", flen);
                return -1;
            }
            out->has_scales = 1;
            out->scales_dtype = v[0];
            out->scales_ndim = v[1];
            out->scales_nbytes = get64(v + 8);
            out->scales_fp = get64(v + 16);
            for (unsigned i = 0; i < out->scales_ndim; i++)
                out->scales_shape[i] = (int64_t)get64(v + 24 + 8 * i);
            break;
        case REC_X_COMM:
            if (flen < 16 || out->has_comm || get32(v + 4) > REC_COMM_LIST_MAX || get32(v + 4) > get32(v) ||
                flen != 16 + 4 * (size_t)get32(v + 4) || get32(v) == 0) {
                snprintf(why, cap, "communicator field of %zu bytes does not hold its ranks", flen);
                return -1;
            }
            out->has_comm = 1;
            out->comm_size = get32(v);
            out->comm_nlisted = get32(v + 4);
            out->comm_id = get64(v + 8);
            for (uint32_t i = 0; i < out->comm_nlisted; i++)
                out->comm_ranks[i] = get32(v + 16 + 4 * i);
            break;
        case REC_X_CONSENSUS:
            if (flen != 16 || out->has_consensus) {
                snprintf(why, cap, "consensus field of %zu bytes (16 expected, once)", flen);
                return -1;
            }
            out->has_consensus = 1;
            out->consensus_key = get64(v);
            out->consensus_index = get32(v + 8);
            break;
        default: break; /* a field of a newer writer: skipped */
        }
        off += 4 + flen;
    }
    return 0;
}

void rec_ext_of(const rec_record *r, rec_ext *out)
{
    char why[8];
    if (!r->ext_len || rec_ext_parse(r->ext, r->ext_len, out, why, sizeof(why)) < 0)
        memset(out, 0, sizeof(*out));
}

uint64_t rec_chunk_bytes(const rec_record *r)
{
    rec_ext x;
    rec_ext_of(r, &x);
    return x.chunk_bytes ? x.chunk_bytes : FP_CHUNK_BYTES;
}

/* check_ext - the extension fields' own rules. */
static int check_ext(const rec_record *r, char *why, size_t cap)
{
    rec_ext x;
    if (r->ext_len > REC_EXT_MAX || (r->ext_len && !r->ext)) {
        snprintf(why, cap, "%u extension bytes exceed %d", r->ext_len, REC_EXT_MAX);
        return -1;
    }
    if (rec_ext_parse(r->ext, r->ext_len, &x, why, cap) < 0)
        return -1;
    if (x.chunk_bytes && (x.chunk_bytes % 8 || x.chunk_bytes < REC_CHUNK_MIN || x.chunk_bytes > REC_CHUNK_MAX)) {
        snprintf(why, cap, "chunk size %llu is not a multiple of 8 in %d..%llu", (unsigned long long)x.chunk_bytes,
                 REC_CHUNK_MIN, (unsigned long long)REC_CHUNK_MAX);
        return -1;
    }
    if (x.has_shard) {
        uint64_t end = x.shard_offset + r->nbytes;
        if (x.shard_offset % 8) {
            snprintf(why, cap, "shard offset %llu is not a multiple of 8", (unsigned long long)x.shard_offset);
            return -1;
        }
        if (end < x.shard_offset || end > x.shard_total) {
            snprintf(why, cap, "shard [%llu, +%llu) runs past its tensor's %llu bytes",
                     (unsigned long long)x.shard_offset, (unsigned long long)r->nbytes,
                     (unsigned long long)x.shard_total);
            return -1;
        }
        if (end % 8 && end != x.shard_total) {
            snprintf(why, cap, "shard ends at byte %llu, inside a word, before its tensor's end",
                     (unsigned long long)end);
            return -1;
        }
    }
    if (x.has_scales && x.scales_dtype >= LS_DTYPE_COUNT) {
        snprintf(why, cap, "scales dtype %u is unknown", x.scales_dtype);
        return -1;
    }
    return 0;
}

int rec_check(const rec_record *r, char *why, size_t cap)
{
    if (r->name_len == 0 || r->name_len > LS_NAME_MAX || !r->name) {
        snprintf(why, cap, "name length %u is outside 1..%d", r->name_len, LS_NAME_MAX);
        return -1;
    }
    if (memchr(r->name, 0, r->name_len)) {
        snprintf(why, cap, "name contains a NUL byte");
        return -1;
    }
    if (r->ndim > LS_MAX_DIMS) {
        snprintf(why, cap, "ndim %u exceeds %d", r->ndim, LS_MAX_DIMS);
        return -1;
    }
    if (r->level >= LS_LEVEL_COUNT) {
        snprintf(why, cap, "level %u is unknown", r->level);
        return -1;
    }
    if (r->dtype >= LS_DTYPE_COUNT) {
        snprintf(why, cap, "dtype %u is unknown", r->dtype);
        return -1;
    }
    if (r->n_inputs > REC_MAX_INPUTS) {
        snprintf(why, cap, "%u input fingerprints exceed %d", r->n_inputs, REC_MAX_INPUTS);
        return -1;
    }
    if (r->n_chunks > REC_MAX_CHUNKS) {
        snprintf(why, cap, "%u chunk partials exceed %u", r->n_chunks, REC_MAX_CHUNKS);
        return -1;
    }
    if ((r->flags & REC_STATE_MASK) == REC_STATE_MASK) {
        snprintf(why, cap, "a state entry is saved or restored, not both");
        return -1;
    }
    if (site_check(&r->site, why, cap) < 0)
        return -1;
    return check_ext(r, why, cap);
}

size_t rec_encoded_size(const rec_record *r)
{
    return 8 + REC_FIXED + 8 * (size_t)r->ndim + r->name_len + 8 * ((size_t)r->n_inputs + r->n_chunks) + ext_size(r);
}

size_t rec_encode(const rec_record *r, unsigned char *out)
{
    char why[128];
    if (rec_check(r, why, sizeof(why)) < 0)
        return 0;

    size_t total = rec_encoded_size(r);
    unsigned char *p = out + 8;

    put64(p, r->seq);
    put64(p + 8, (uint64_t)r->step);
    put64(p + 16, (uint64_t)r->t_ns);
    put64(p + 24, r->nbytes);
    put64(p + 32, r->fp);
    put64(p + 40, r->value);
    put32(p + 48, r->occurrence);
    p[52] = r->level;
    p[53] = r->dtype;
    p[54] = r->ndim;
    size_t ext = ext_size(r);
    p[55] = (uint8_t)((r->flags & ~REC_HAS_EXT) | (ext ? REC_HAS_EXT : 0));
    put16(p + 56, r->name_len);
    put16(p + 58, r->n_inputs);
    put32(p + 60, r->n_chunks);
    p += REC_FIXED;
    for (unsigned i = 0; i < r->ndim; i++, p += 8)
        put64(p, (uint64_t)r->shape[i]);
    memcpy(p, r->name, r->name_len);
    p += r->name_len;
    for (unsigned i = 0; i < r->n_inputs; i++, p += 8)
        put64(p, r->inputs[i]);
    for (unsigned i = 0; i < r->n_chunks; i++, p += 8)
        put64(p, r->chunks[i]);
    if (ext) {
        put16(p, (uint16_t)(ext - 2));
        p += 2;
        size_t site = site_field_size(r);
        if (site) {
            const rec_site *st = &r->site;
            p[0] = REC_X_SITE;
            p[1] = 0;
            put16(p + 2, (uint16_t)(site - 4));
            p += 4;
            put64(p, st->offset);
            put64(p + 8, st->function_offset);
            put16(p + 16, st->module_len);
            put16(p + 18, st->function_len);
            put16(p + 20, st->caller_len);
            p += REC_SITE_FIXED;
            if (st->module_len)
                memcpy(p, st->module, st->module_len);
            p += st->module_len;
            if (st->function_len)
                memcpy(p, st->function, st->function_len);
            p += st->function_len;
            if (st->caller_len)
                memcpy(p, st->caller, st->caller_len);
            p += st->caller_len;
        }
        if (r->ext_len)
            memcpy(p, r->ext, r->ext_len);
    }

    put32(out, (uint32_t)(total - 8));
    put32(out + 4, crc32c(out + 8, total - 8));
    return total;
}

/* payload_need - the payload bytes the fixed part's counts need before any extension block. */
static size_t payload_need(const unsigned char *p)
{
    return REC_FIXED + 8 * (size_t)p[54] + get16(p + 56) + 8 * ((size_t)get16(p + 58) + get32(p + 60));
}

long rec_payload_words(const unsigned char *p, size_t len)
{
    if (len < REC_FIXED)
        return -1;
    size_t need = payload_need(p), ext_words = len > need ? (len - need + 7) / 8 : 0;
    return (long)get16(p + 58) + (long)get32(p + 60) + (long)ext_words;
}

/* decode_ext - the extension block's fields (`len` bytes at `p`): the site into out->site (pointing into `p`),
 * the other fields this reader knows copied to `to` (room for `len` bytes) as out->ext; unknown keys are
 * skipped. Returns 0, or -1 with a reason in `why`. */
static int decode_ext(const unsigned char *p, size_t len, rec_record *out, unsigned char *to, char *why, size_t cap)
{
    size_t off = 0, kept = 0;
    int have_site = 0;
    while (off < len) {
        if (off + 4 > len) {
            snprintf(why, cap, "extension field at byte %zu runs past the extension block", off);
            return -1;
        }
        unsigned key = p[off];
        size_t flen = get16(p + off + 2);
        if (off + 4 + flen > len) {
            snprintf(why, cap, "extension field %u of %zu bytes runs past the extension block", key, flen);
            return -1;
        }
        const unsigned char *f = p + off + 4;
        if (key == REC_X_SITE) {
            rec_site *st = &out->site;
            if (have_site) {
                snprintf(why, cap, "a second call site field");
                return -1;
            }
            have_site = 1;
            if (flen < REC_SITE_FIXED) {
                snprintf(why, cap, "call site field of %zu bytes is shorter than its %d fixed bytes", flen,
                         REC_SITE_FIXED);
                return -1;
            }
            st->offset = get64(f);
            st->function_offset = get64(f + 8);
            st->module_len = get16(f + 16);
            st->function_len = get16(f + 18);
            st->caller_len = get16(f + 20);
            if (REC_SITE_FIXED + (size_t)st->module_len + st->function_len + st->caller_len != flen) {
                snprintf(why, cap, "call site field is %zu bytes but its lengths need %zu", flen,
                         REC_SITE_FIXED + (size_t)st->module_len + st->function_len + st->caller_len);
                return -1;
            }
            st->module = (const char *)f + REC_SITE_FIXED;
            st->function = st->module + st->module_len;
            st->caller = st->function + st->function_len;
        } else if (key == REC_X_SHARD || key == REC_X_CHUNK || key == REC_X_SCALES || key == REC_X_COMM ||
                   key == REC_X_CONSENSUS) {
            if (kept + 4 + flen > REC_EXT_MAX) {
                snprintf(why, cap, "extension fields of more than %d bytes besides the call site", REC_EXT_MAX);
                return -1;
            }
            memcpy(to + kept, p + off, 4 + flen);
            kept += 4 + flen;
        } /* else a field of a newer writer: skipped */
        off += 4 + flen;
    }
    out->ext = kept ? to : NULL;
    out->ext_len = (uint16_t)kept;
    return 0;
}

int rec_decode_payload(const unsigned char *p, size_t len, rec_record *out, uint64_t *scratch, char *why, size_t cap)
{
    if (len < REC_FIXED) {
        snprintf(why, cap, "payload of %zu bytes is shorter than the %d fixed bytes", len, REC_FIXED);
        return -1;
    }
    memset(out, 0, sizeof(*out));
    out->seq = get64(p);
    out->step = (int64_t)get64(p + 8);
    out->t_ns = (int64_t)get64(p + 16);
    out->nbytes = get64(p + 24);
    out->fp = get64(p + 32);
    out->value = get64(p + 40);
    out->occurrence = get32(p + 48);
    out->level = p[52];
    out->dtype = p[53];
    out->ndim = p[54];
    out->flags = p[55];
    out->name_len = get16(p + 56);
    out->n_inputs = get16(p + 58);
    out->n_chunks = get32(p + 60);
    if (out->ndim > LS_MAX_DIMS || out->n_inputs > REC_MAX_INPUTS || out->n_chunks > REC_MAX_CHUNKS ||
        out->name_len == 0 || out->name_len > LS_NAME_MAX) {
        snprintf(why, cap, "impossible counts (ndim %u, name %u bytes, %u inputs, %u chunks)", out->ndim, out->name_len,
                 out->n_inputs, out->n_chunks);
        return -1;
    }
    int has_ext = (out->flags & REC_HAS_EXT) != 0;
    out->flags &= (uint8_t)~REC_HAS_EXT;
    size_t need = payload_need(p);
    if (has_ext ? need + 2 > len : need != len) {
        snprintf(why, cap, "payload is %zu bytes but its counts need %zu", len, need + (has_ext ? 2 : 0));
        return -1;
    }
    const unsigned char *ext = p + need;
    size_t ext_len = has_ext ? get16(ext) : 0;
    if (has_ext && need + 2 + ext_len != len) {
        snprintf(why, cap, "payload is %zu bytes but its counts and %zu extension bytes need %zu", len, ext_len,
                 need + 2 + ext_len);
        return -1;
    }
    p += REC_FIXED;
    for (unsigned i = 0; i < out->ndim; i++, p += 8)
        out->shape[i] = (int64_t)get64(p);
    out->name = (const char *)p;
    p += out->name_len;
    for (unsigned i = 0; i < (unsigned)out->n_inputs + out->n_chunks; i++, p += 8)
        scratch[i] = get64(p);
    out->inputs = out->n_inputs ? scratch : NULL;
    out->chunks = out->n_chunks ? scratch + out->n_inputs : NULL;
    if (ext_len &&
        decode_ext(ext + 2, ext_len, out, (unsigned char *)(scratch + out->n_inputs + out->n_chunks), why, cap) < 0)
        return -1;
    char why2[128];
    if (rec_check(out, why2, sizeof(why2)) < 0) {
        snprintf(why, cap, "%s", why2);
        return -1;
    }
    return 0;
}

const char *rec_status_name(rec_status s)
{
    switch (s) {
    case REC_OK: return "ok";
    case REC_TORN: return "torn";
    case REC_BAD_CRC: return "bad-crc";
    case REC_BAD_LENGTH: return "bad-length";
    case REC_BAD_FIELD: return "bad-field";
    case REC_BAD_MAGIC: return "bad-magic";
    case REC_BAD_VERSION: return "bad-version";
    }
    return "?";
}

__attribute__((format(printf, 4, 5))) static int stop(rec_reader *rd, rec_status s, size_t off, const char *fmt, ...)
{
    va_list ap;
    rd->status = s;
    rd->err_off = off;
    va_start(ap, fmt);
    vsnprintf(rd->err, sizeof(rd->err), fmt, ap);
    va_end(ap);
    return -1;
}

int rec_reader_init(rec_reader *rd, const void *buf, size_t len)
{
    const unsigned char *p = buf;

    memset(rd, 0, sizeof(*rd));
    rd->buf = p;
    rd->len = len;
    if (len < 8 || memcmp(p, REC_MAGIC, 8) != 0) {
        if (len < 8 && memcmp(p, REC_MAGIC, len) == 0)
            return stop(rd, REC_TORN, 0, "input ends after %zu bytes, inside the header", len);
        return stop(rd, REC_BAD_MAGIC, 0, "not a Lockstep stream (no LOCKSTEP magic)");
    }
    if (len < REC_HDR_FIXED + 4)
        return stop(rd, REC_TORN, 0, "input ends after %zu bytes, inside the header", len);
    uint16_t version = get16(p + 8);
    if (version != REC_VERSION)
        return stop(rd, REC_BAD_VERSION, 8, "format version %u; this reader knows version %d", version, REC_VERSION);
    uint32_t hdr_len = get32(p + 12);
    if (hdr_len < REC_HDR_FIXED + 4 || hdr_len > REC_HDR_MAX)
        return stop(rd, REC_BAD_LENGTH, 12, "header length %u is outside %d..%d", hdr_len, REC_HDR_FIXED + 4,
                    REC_HDR_MAX);
    if (hdr_len > len)
        return stop(rd, REC_TORN, 0, "input ends after %zu bytes, inside the %u-byte header", len, hdr_len);
    uint32_t want = get32(p + hdr_len - 4);
    uint32_t got = crc32c(p, hdr_len - 4);
    if (want != got)
        return stop(rd, REC_BAD_CRC, 0, "header checksum %08x does not match its bytes (%08x)", want, got);

    rec_header *h = &rd->hdr;
    h->version = version;
    h->kind = get16(p + 10);
    h->rank = get32(p + 16);
    h->flags = get32(p + 20);
    h->batch_seq = get64(p + 24);
    h->created_ns = (int64_t)get64(p + 32);
    size_t off = REC_HDR_FIXED;
    while (off < hdr_len - 4) {
        if (off + 4 > hdr_len - 4)
            return stop(rd, REC_BAD_LENGTH, off, "header field at byte %zu runs past the header", off);
        unsigned key = p[off];
        size_t flen = get16(p + off + 2);
        if (off + 4 + flen > hdr_len - 4)
            return stop(rd, REC_BAD_LENGTH, off, "header field %u of %zu bytes runs past the header", key, flen);
        for (size_t i = 0; i < N_STR_FIELDS; i++) {
            if (str_fields[i].key != (int)key)
                continue;
            if (flen > REC_STR_MAX || memchr(p + off + 4, 0, flen))
                return stop(rd, REC_BAD_FIELD, off, "header field %u is not a string of at most %d bytes", key,
                            REC_STR_MAX);
            char *dst = (char *)h + str_fields[i].off;
            memcpy(dst, p + off + 4, flen);
            dst[flen] = 0;
        }
        off += 4 + flen;
    }
    rd->off = hdr_len;
    return 0;
}

void rec_reader_frames(rec_reader *rd, const void *buf, size_t len, uint32_t rank)
{
    memset(rd, 0, sizeof(*rd));
    rd->buf = buf;
    rd->len = len;
    rd->hdr.version = REC_VERSION;
    rd->hdr.rank = rank;
}

int rec_reader_next(rec_reader *rd, rec_record *out)
{
    if (rd->status != REC_OK || rd->off >= rd->len)
        return 0;

    const unsigned char *p = rd->buf + rd->off;
    size_t left = rd->len - rd->off;
    if (left < 8) {
        stop(rd, REC_TORN, rd->off, "input ends %zu bytes into a record's frame", left);
        return 0;
    }
    uint32_t plen = get32(p);
    if (plen < REC_FIXED || plen > REC_MAX_PAYLOAD) {
        stop(rd, REC_BAD_LENGTH, rd->off, "record length %u is outside %d..%d", plen, REC_FIXED, (int)REC_MAX_PAYLOAD);
        return 0;
    }
    if ((size_t)plen + 8 > left) {
        stop(rd, REC_TORN, rd->off, "input ends inside a record: %u bytes announced, %zu present", plen, left - 8);
        return 0;
    }
    uint32_t want = get32(p + 4);
    uint32_t got = crc32c(p + 8, plen);
    if (want != got) {
        stop(rd, REC_BAD_CRC, rd->off, "record checksum %08x does not match its bytes (%08x)", want, got);
        return 0;
    }
    /* Counts that cannot fit in the payload are refused by the decoder before it
     * touches the scratch; never size an allocation from them. */
    long words = rec_payload_words(p + 8, plen);
    if (words < 0 || (size_t)words > plen / 8)
        words = 0;
    if ((size_t)words > rd->scratch_cap) {
        uint64_t *s = realloc(rd->scratch, (size_t)words * sizeof(uint64_t));
        if (!s)
            return -1;
        rd->scratch = s;
        rd->scratch_cap = (size_t)words;
    }
    char why[200];
    if (rec_decode_payload(p + 8, plen, out, rd->scratch, why, sizeof(why)) < 0) {
        stop(rd, REC_BAD_FIELD, rd->off, "record %llu: %s", (unsigned long long)rd->count, why);
        return 0;
    }
    out->rank = rd->hdr.rank;
    rd->off += 8 + (size_t)plen;
    rd->count++;
    return 1;
}

void rec_reader_release(rec_reader *rd)
{
    free(rd->scratch);
    rd->scratch = NULL;
    rd->scratch_cap = 0;
}

int rec_same_shape(const rec_record *a, const rec_record *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (unsigned i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

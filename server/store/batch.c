/* batch.c - decode an ingest body (binary record framing or JSON) into one validated batch of records. */
#include "server/store/batch.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/text.h"
#include "server/core/limits.h"
#include "server/core/xalloc.h"

#define BATCH_MAX_RECORDS 10000000

__attribute__((format(printf, 4, 5))) static int fail(srv_error *e, const char *error, const char *hint,
                                                      const char *fmt, ...)
{
    va_list ap;
    snprintf(e->error, sizeof(e->error), "%s", error);
    snprintf(e->hint, sizeof(e->hint), "%s", hint);
    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
    va_end(ap);
    return -1;
}

void batch_release(srv_batch *b)
{
    free(b->recs);
    free(b->frame_off);
    free(b->digests);
    free(b->cons);
    free(b->name_off);
    free(b->word_off);
    free(b->names);
    free(b->words);
    memset(b, 0, sizeof(*b));
}

/* add_record - copy `r` into the batch (its name and words into the arenas). */
static void add_record(srv_batch *b, const rec_record *r)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->recs = xrealloc(b->recs, b->cap * sizeof(*b->recs));
        if (b->body)
            b->frame_off = xrealloc(b->frame_off, b->cap * sizeof(size_t));
        b->name_off = xrealloc(b->name_off, b->cap * sizeof(size_t));
        b->word_off = xrealloc(b->word_off, b->cap * sizeof(size_t));
    }
    /* the call site's strings and the other extension bytes follow the name */
    size_t strs = (size_t)r->name_len + r->site.module_len + r->site.function_len + r->site.caller_len + r->ext_len;
    if (b->names_len + strs > b->names_cap) {
        while (b->names_len + strs > b->names_cap)
            b->names_cap = b->names_cap ? b->names_cap * 2 : 16384;
        b->names = xrealloc(b->names, b->names_cap);
    }
    size_t nw = (size_t)r->n_inputs + r->n_chunks;
    if (b->words_len + nw > b->words_cap) {
        while (b->words_len + nw > b->words_cap)
            b->words_cap = b->words_cap ? b->words_cap * 2 : 1024;
        b->words = xrealloc(b->words, b->words_cap * sizeof(uint64_t));
    }
    b->recs[b->n] = *r;
    b->name_off[b->n] = b->names_len;
    b->word_off[b->n] = b->words_len;
    memcpy(b->names + b->names_len, r->name, r->name_len);
    b->names_len += r->name_len;
    /* The call site's strings follow the name; bytes that are not UTF-8 (a module's file name may hold
     * any) become '?': PostgreSQL text is UTF-8, and a site is never a reason to refuse an agent's batch. */
    const char *parts[3] = {r->site.module, r->site.function, r->site.caller};
    uint16_t lens[3] = {r->site.module_len, r->site.function_len, r->site.caller_len};
    for (int k = 0; k < 3; k++) {
        char *dst = b->names + b->names_len;
        if (lens[k])
            memcpy(dst, parts[k], lens[k]);
        if (!batch_utf8_valid(dst, lens[k])) {
            for (unsigned j = 0; j < lens[k]; j++)
                if ((unsigned char)dst[j] >= 0x80 || dst[j] == 0)
                    dst[j] = '?';
            b->reframe = 1;
        }
        b->names_len += lens[k];
    }
    if (r->ext_len)
        memcpy(b->names + b->names_len, r->ext, r->ext_len);
    b->names_len += r->ext_len;
    if (r->n_inputs)
        memcpy(b->words + b->words_len, r->inputs, r->n_inputs * sizeof(uint64_t));
    if (r->n_chunks)
        memcpy(b->words + b->words_len + r->n_inputs, r->chunks, r->n_chunks * sizeof(uint64_t));
    b->words_len += nw;
    b->n++;
}

/* fix_pointers - point names, inputs and chunks into the final arenas. */
static void fix_pointers(srv_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        rec_record *r = &b->recs[i];
        r->name = b->names + b->name_off[i];
        r->site.module = r->name + r->name_len;
        r->site.function = r->site.module + r->site.module_len;
        r->site.caller = r->site.function + r->site.function_len;
        r->ext = r->ext_len ? (const unsigned char *)r->site.caller + r->site.caller_len : NULL;
        r->inputs = r->n_inputs ? b->words + b->word_off[i] : NULL;
        r->chunks = r->n_chunks ? b->words + b->word_off[i] + r->n_inputs : NULL;
    }
}

int batch_utf8_valid(const char *str, size_t n)
{
    return text_utf8_valid(str, n);
}

/* check_record - the checks both forms share, on record `i` of the batch. */
static int check_record(const srv_batch *b, const rec_record *r, size_t i, srv_error *e)
{
    if (!batch_utf8_valid(r->name, r->name_len))
        return fail(e, "record name is not UTF-8", "record names are UTF-8 strings without NUL bytes",
                    "record %zu (seq %llu): the name is not well-formed UTF-8", i, (unsigned long long)r->seq);
    if (!text_line_valid(r->name, r->name_len))
        return fail(e, "bad record name", "record names hold no control characters (docs/api.md)",
                    "record %zu (seq %llu): the name holds a control character", i, (unsigned long long)r->seq);
    if (r->step < -REC_STEP_LIMIT || r->step > REC_STEP_LIMIT)
        return fail(e, "record step out of range", "a record's step is -2^62 .. 2^62 (docs/server.md, \"Limits\")",
                    "record %zu (seq %llu): step %lld", i, (unsigned long long)r->seq, (long long)r->step);
    if (r->seq > INT64_MAX || r->nbytes > INT64_MAX)
        return fail(e, "record field out of range", "seq and nbytes must fit in 63 bits",
                    "record %zu: seq %llu, nbytes %llu", i, (unsigned long long)r->seq, (unsigned long long)r->nbytes);
    if (i > 0 && r->seq <= b->recs[b->n - 1].seq)
        return fail(e, "record sequence numbers are not increasing",
                    "a rank's records carry strictly increasing seq; send them in order",
                    "record %zu has seq %llu after seq %llu", i, (unsigned long long)r->seq,
                    (unsigned long long)b->recs[b->n - 1].seq);
    return 0;
}

/* add_digest - a step digest entry (REC_STEP_DIGEST) of the batch; -1 when it is malformed or not allowed. */
static int add_digest(srv_batch *b, const rec_record *r, size_t i, srv_error *e)
{
    if (b->held)
        return fail(e, "step digest in a batch of held records",
                    "a batch sent on demand carries the held records themselves", "record %zu is a step digest", i);
    if (r->step < -REC_STEP_LIMIT || r->step > REC_STEP_LIMIT)
        return fail(e, "record step out of range", "a step digest's step is -2^62 .. 2^62 (docs/server.md, \"Limits\")",
                    "record %zu: step digest of step %lld", i, (long long)r->step);
    if (r->nbytes == 0 || r->nbytes > INT32_MAX || r->seq > INT64_MAX)
        return fail(e, "bad step digest", "a step digest stands for 1 to 2^31-1 held records",
                    "record %zu: step digest of step %lld for %llu records, seq %llu", i, (long long)r->step,
                    (unsigned long long)r->nbytes, (unsigned long long)r->seq);
    if (b->n_digests == b->cap_digests) {
        b->cap_digests = b->cap_digests ? 2 * b->cap_digests : 16;
        b->digests = xrealloc(b->digests, b->cap_digests * sizeof(*b->digests));
    }
    b->digests[b->n_digests++] =
        (srv_step_digest){.step = r->step, .n = (uint32_t)r->nbytes, .digest = r->fp, .seq = r->seq};
    return 0;
}

int batch_decode_binary(srv_batch *b, const void *buf, size_t len, srv_error *e)
{
    rec_reader rd;
    rec_record r;
    int rc = -1;

    memset(b, 0, sizeof(*b));
    b->body = buf;
    if (rec_reader_init(&rd, buf, len) < 0) {
        fail(e, "bad record framing", "send a stream header of kind batch (3) followed by framed records",
             "%s at byte %zu: %s", rec_status_name(rd.status), rd.err_off, rd.err);
        goto out_release;
    }
    if (rd.hdr.kind != REC_KIND_BATCH) {
        fail(e, "not a batch stream", "ingest bodies carry a stream header of kind batch (3)",
             "the stream header has kind %u", rd.hdr.kind);
        goto out_release;
    }
    b->rank = rd.hdr.rank;
    b->batch_seq = rd.hdr.batch_seq;
    b->held = (rd.hdr.flags & REC_HDR_HELD) != 0;
    snprintf(b->run_id, sizeof(b->run_id), "%s", rd.hdr.run_id);
    for (;;) {
        size_t at = rd.off;
        int got = rec_reader_next(&rd, &r);
        if (got < 0)
            abort(); /* the reader is out of memory: the server's policy (server/core/xalloc.h) */
        if (got == 0)
            break;
        if (b->n >= BATCH_MAX_RECORDS) {
            fail(e, "batch too large", "split it into batches of fewer records", "more than %d records",
                 BATCH_MAX_RECORDS);
            goto out_release;
        }
        if (r.flags & REC_STEP_DIGEST) {
            if (add_digest(b, &r, (size_t)rd.count - 1, e) < 0)
                goto out_release;
            continue;
        }
        if (r.flags & REC_CONSENSUS_DIGEST) {
            if (cons_batch_add(&b->cons, &b->n_cons, &b->cap_cons, &r, b->rank, b->held, (size_t)rd.count - 1, e) < 0)
                goto out_release;
            continue;
        }
        if (check_record(b, &r, b->n, e) < 0)
            goto out_release;
        add_record(b, &r);
        b->frame_off[b->n - 1] = at;
    }
    if (rd.status != REC_OK) {
        fail(e, "bad record framing", "resend the whole batch; nothing of it was stored",
             "%s at byte %zu after %llu records: %s", rec_status_name(rd.status), rd.err_off,
             (unsigned long long)rd.count, rd.err);
        goto out_release;
    }
    fix_pointers(b);
    rc = 0;
out_release:
    rec_reader_release(&rd);
    return rc;
}

int batch_parse_hex64(const char *s, uint64_t *out)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    uint64_t v = 0;
    int i;
    for (i = 0; i < 16; i++) {
        char c = s[i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = (v << 4) | (uint64_t)d;
    }
    if (s[i])
        return -1;
    *out = v;
    return 0;
}

/* float_bits - the bits of the narrow float `dtype` whose value is exactly
 * `v`, found by bisection over the monotone positive encodings. */
static int float_bits(unsigned dtype, double v, uint64_t *out)
{
    int bits = (int)dtype_bits(dtype);
    uint64_t sign = dtype == LS_E8M0 ? 0 : 1ULL << (bits - 1); /* e8m0: unsigned powers of two */
    double mag = fabs(v);
    if (!sign && signbit(v))
        return -1;
    uint64_t lo = 0, hi = (sign ? sign : 1ULL << bits) - 1; /* positive encodings, NaNs at the top */
    while (hi > lo && isnan(dtype_value_to_double(dtype, hi)))
        hi--;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (dtype_value_to_double(dtype, mid) < mag)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (dtype_value_to_double(dtype, lo) != mag)
        return -1;
    *out = lo | (signbit(v) ? sign : 0);
    return 0;
}

/* value_to_bits - a JSON number as the raw bits of a scalar of `dtype`. */
static int value_to_bits(unsigned dtype, const json_t *v, uint64_t *out)
{
    if (dtype_is_float(dtype)) {
        double d = json_number_value(v);
        if (dtype == LS_F64) {
            memcpy(out, &d, 8);
            return 0;
        }
        if (dtype == LS_F32) {
            float f = (float)d;
            uint32_t u;
            if ((double)f != d)
                return -1;
            memcpy(&u, &f, 4);
            *out = u;
            return 0;
        }
        return float_bits(dtype, d, out);
    }
    if (!json_is_integer(v))
        return -1;
    json_int_t i = json_integer_value(v);
    size_t sz = dtype_size(dtype);
    int is_signed = dtype == LS_I64 || dtype == LS_I32 || dtype == LS_I16 || dtype == LS_I8;
    if (sz < 8) {
        long long lim = 1LL << (sz * 8 - (is_signed ? 1 : 0));
        if (is_signed ? (i < -lim || i >= lim) : (i < 0 || i >= lim))
            return -1;
        *out = (uint64_t)i & ((1ULL << (sz * 8)) - 1);
    } else {
        if (!is_signed && i < 0)
            return -1;
        *out = (uint64_t)i;
    }
    return 0;
}

static int hex_list(const json_t *a, uint64_t **dst, size_t *n, size_t max, size_t i, const char *what, srv_error *e)
{
    if (!json_is_array(a) || json_array_size(a) > max)
        return fail(e, "wrong type in record", "see the JSON ingest form in docs/server.md",
                    "record %zu: \"%s\" must be an array of at most %zu 16-hex-digit strings", i, what, max);
    *n = json_array_size(a);
    *dst = xrealloc(*dst, (*n ? *n : 1) * sizeof(uint64_t));
    for (size_t k = 0; k < *n; k++) {
        const json_t *s = json_array_get(a, k);
        if (!json_is_string(s) || batch_parse_hex64(json_string_value(s), &(*dst)[k]) < 0)
            return fail(e, "wrong type in record", "fingerprints are 16 hex digits",
                        "record %zu: %s[%zu] is not a 16-hex-digit string", i, what, k);
    }
    return 0;
}

static int int_field(const json_t *o, const char *key, int required, long long lo, long long hi, long long *out,
                     size_t i, srv_error *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return fail(e, "missing field in record", "see the JSON ingest form in docs/server.md",
                        "record %zu has no \"%s\"", i, key);
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail(e, "wrong type in record", "see the JSON ingest form in docs/server.md",
                    "record %zu: \"%s\" must be an integer in %lld..%lld", i, key, lo, hi);
    *out = json_integer_value(v);
    return 0;
}

static int str_field(const json_t *o, const char *key, const char **out, size_t i, srv_error *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return fail(e, "wrong type in record", "see the JSON ingest form in docs/server.md",
                    "record %zu: \"%s\" must be a string", i, key);
    *out = json_string_value(v);
    return 0;
}

/* site_str - one string of a call site: UTF-8 (jansson's strings are), at most `max` bytes. */
static int site_str(const json_t *o, const char *key, size_t max, const char **out, uint16_t *len, size_t i,
                    srv_error *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) > max || memchr(json_string_value(v), 0, json_string_length(v)))
        return fail(e, "bad call site", "site strings are text: module up to 255 bytes, function and caller up to 1023",
                    "record %zu: site \"%s\" is not a string of at most %zu bytes", i, key, max);
    *out = json_string_value(v);
    *len = (uint16_t)json_string_length(v);
    return 0;
}

/* json_site - a client's own call site: a string (the function, as the client names it, e.g.
 * "train.py:84 step"), or {"module", "offset", "function", "function_offset", "caller"}. */
static int json_site(const json_t *v, size_t i, rec_site *out, srv_error *e)
{
    if (json_is_string(v)) {
        if (json_string_length(v) > REC_SITE_NAME_MAX || memchr(json_string_value(v), 0, json_string_length(v)))
            return fail(e, "bad call site", "a site given as a string names the function, up to 1023 bytes",
                        "record %zu: a site string of %zu bytes", i, json_string_length(v));
        out->function = json_string_value(v);
        out->function_len = (uint16_t)json_string_length(v);
        return 0;
    }
    if (!json_is_object(v))
        return fail(e, "wrong type in record", "site is a string or an object (see docs/server.md)",
                    "record %zu: \"site\" is neither", i);
    long long off = 0, foff = 0;
    if (site_str(v, "module", REC_SITE_MODULE_MAX, &out->module, &out->module_len, i, e) < 0 ||
        site_str(v, "function", REC_SITE_NAME_MAX, &out->function, &out->function_len, i, e) < 0 ||
        site_str(v, "caller", REC_SITE_NAME_MAX, &out->caller, &out->caller_len, i, e) < 0 ||
        int_field(v, "offset", 0, 0, INT64_MAX, &off, i, e) < 0 ||
        int_field(v, "function_offset", 0, 0, INT64_MAX, &foff, i, e) < 0)
        return -1;
    out->offset = (uint64_t)off;
    out->function_offset = (uint64_t)foff;
    return 0;
}

/* u64_field - an optional non-negative integer member of `o`; 0 when absent. */
static int u64_field(const json_t *o, const char *key, uint64_t *out, size_t i, const char *what, srv_error *e)
{
    long long v = 0;
    if (int_field(o, key, 1, 0, INT64_MAX, &v, i, e) < 0)
        return fail(e, "wrong type in record", "see the JSON ingest form in docs/server.md",
                    "record %zu: \"%s\" needs \"%s\", a non-negative integer", i, what, key);
    *out = (uint64_t)v;
    return 0;
}

/* json_ext - "state", "chunk_bytes", "shard", "scales" and "comm" of a record object, as the record's flags and its
 * encoded extension fields in `ext` (REC_EXT_ENCODED_MAX bytes, the caller's). */
static int json_ext(const json_t *o, size_t i, rec_record *r, unsigned char *ext, srv_error *e)
{
    rec_ext x;
    memset(&x, 0, sizeof(x));
    const char *state = NULL;
    if (str_field(o, "state", &state, i, e) < 0)
        return -1;
    if (state && strcmp(state, "saved") == 0)
        r->flags |= REC_STATE_SAVED;
    else if (state && strcmp(state, "restored") == 0)
        r->flags |= REC_STATE_RESTORED;
    else if (state)
        return fail(e, "unknown state", "state is \"saved\" or \"restored\" (an entry of a state block)",
                    "record %zu: state \"%.40s\"", i, state);
    long long cb = 0;
    if (int_field(o, "chunk_bytes", 0, 0, INT64_MAX, &cb, i, e) < 0)
        return -1;
    x.chunk_bytes = (uint64_t)cb;
    const json_t *sh = json_object_get(o, "shard"), *sc = json_object_get(o, "scales");
    if (sh) {
        const char *acc = NULL;
        if (!json_is_object(sh) || u64_field(sh, "offset", &x.shard_offset, i, "shard", e) < 0 ||
            u64_field(sh, "total", &x.shard_total, i, "shard", e) < 0 || str_field(sh, "acc", &acc, i, e) < 0 || !acc ||
            batch_parse_hex64(acc, &x.shard_acc) < 0)
            return fail(e, "bad shard", "shard is {\"offset\", \"total\", \"acc\": 16 hex digits}",
                        "record %zu: a malformed \"shard\"", i);
        x.has_shard = 1;
    }
    if (sc) {
        const char *dt = NULL, *fp = NULL;
        const json_t *shape = json_is_object(sc) ? json_object_get(sc, "shape") : NULL;
        if (!json_is_object(sc) || str_field(sc, "dtype", &dt, i, e) < 0 || str_field(sc, "fp", &fp, i, e) < 0 || !dt ||
            dtype_parse(dt) < 0 || !fp || batch_parse_hex64(fp, &x.scales_fp) < 0 ||
            u64_field(sc, "nbytes", &x.scales_nbytes, i, "scales", e) < 0 ||
            (shape && (!json_is_array(shape) || json_array_size(shape) > LS_MAX_DIMS)))
            return fail(e, "bad scales", "scales is {\"dtype\", \"shape\", \"nbytes\", \"fp\": 16 hex digits}",
                        "record %zu: malformed \"scales\"", i);
        x.has_scales = 1;
        x.scales_dtype = (uint8_t)dtype_parse(dt);
        x.scales_ndim = (uint8_t)json_array_size(shape);
        for (unsigned k = 0; k < x.scales_ndim; k++) {
            const json_t *d = json_array_get(shape, k);
            if (!json_is_integer(d))
                return fail(e, "bad scales", "scales.shape is an array of integers", "record %zu", i);
            x.scales_shape[k] = json_integer_value(d);
        }
    }
    const json_t *cm = json_object_get(o, "comm");
    if (cm) {
        const json_t *sz = json_object_get(cm, "size"), *w = json_object_get(cm, "ranks");
        size_t nw = json_array_size(w);
        if (!json_is_object(cm) || !json_is_integer(sz) || json_integer_value(sz) < 1 ||
            json_integer_value(sz) > INT32_MAX ||
            (w && (!json_is_array(w) || nw > REC_COMM_LIST_MAX || (json_int_t)nw != json_integer_value(sz))))
            return fail(e, "bad comm", "comm is {\"size\": N, \"ranks\": [N world ranks]} (ranks optional)",
                        "record %zu: a malformed \"comm\"", i);
        x.has_comm = 1;
        x.comm_size = (uint32_t)json_integer_value(sz);
        for (size_t k = 0; k < nw; k++) {
            const json_t *v = json_array_get(w, k);
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
                return fail(e, "bad comm", "comm.ranks holds world ranks", "record %zu", i);
            x.comm_ranks[k] = (uint32_t)json_integer_value(v);
        }
        x.comm_nlisted = (uint32_t)nw;
        x.comm_id = rec_comm_id(x.comm_ranks, nw);
    }
    r->ext_len = (uint16_t)rec_ext_encode(&x, ext);
    r->ext = r->ext_len ? ext : NULL;
    return 0;
}

/* json_record - one record object to `r` (inputs and chunks in the scratch lists, extension fields in `ext`). */
static int json_record(const json_t *o, size_t i, rec_record *r, uint64_t **in, uint64_t **ch, unsigned char *ext,
                       srv_error *e)
{
    long long seq = -1, step = 0, occ = 0, nbytes = 0, t_ns = 0;
    const char *name = NULL, *level = "metric", *dtype = "bytes", *fp = NULL, *bits = NULL;

    memset(r, 0, sizeof(*r));
    if (!json_is_object(o))
        return fail(e, "wrong type in record", "records is an array of objects", "record %zu is not an object", i);
    if (int_field(o, "seq", 1, 0, INT64_MAX, &seq, i, e) < 0 ||
        int_field(o, "step", 1, INT64_MIN, INT64_MAX, &step, i, e) < 0 ||
        int_field(o, json_object_get(o, "occurrence") ? "occurrence" : "occ", 0, 0, UINT32_MAX, &occ, i, e) < 0 ||
        int_field(o, "nbytes", 0, 0, INT64_MAX, &nbytes, i, e) < 0 ||
        int_field(o, "t_ns", 0, INT64_MIN, INT64_MAX, &t_ns, i, e) < 0)
        return -1;
    if (str_field(o, "name", &name, i, e) < 0 || str_field(o, "level", &level, i, e) < 0 ||
        str_field(o, "dtype", &dtype, i, e) < 0 || str_field(o, "fp", &fp, i, e) < 0 ||
        str_field(o, "value_bits", &bits, i, e) < 0)
        return -1;
    if (!name || !fp)
        return fail(e, "missing field in record", "every record needs seq, step, name and fp",
                    "record %zu has no \"%s\"", i, !name ? "name" : "fp");
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > LS_NAME_MAX)
        return fail(e, "bad record name", "names are 1 to 255 bytes", "record %zu: name of %zu bytes", i, name_len);
    int lv = level_parse(level), dt = dtype_parse(dtype);
    if (lv < 0)
        return fail(e, "unknown level", "level is metric, collective, module or op", "record %zu: level \"%s\"", i,
                    level);
    if (dt < 0)
        return fail(e, "unknown dtype", "dtype is one of f64, f32, f16, bf16, i64, ..., bytes",
                    "record %zu: dtype \"%s\"", i, dtype);
    if (batch_parse_hex64(fp, &r->fp) < 0)
        return fail(e, "bad fingerprint", "fp is 16 hex digits (LSFP-1)", "record %zu: fp \"%.40s\"", i, fp);
    r->seq = (uint64_t)seq;
    r->step = step;
    r->occurrence = (uint32_t)occ;
    r->nbytes = (uint64_t)nbytes;
    r->t_ns = t_ns;
    r->level = (uint8_t)lv;
    r->dtype = (uint8_t)dt;
    r->name = name;
    r->name_len = (uint16_t)name_len;

    const json_t *shape = json_object_get(o, "shape");
    if (shape) {
        if (!json_is_array(shape) || json_array_size(shape) > LS_MAX_DIMS)
            return fail(e, "wrong type in record", "shape is an array of at most 8 integers", "record %zu: bad shape",
                        i);
        r->ndim = (uint8_t)json_array_size(shape);
        for (unsigned k = 0; k < r->ndim; k++) {
            const json_t *d = json_array_get(shape, k);
            if (!json_is_integer(d))
                return fail(e, "wrong type in record", "shape is an array of integers",
                            "record %zu: shape[%u] is not an integer", i, k);
            r->shape[k] = json_integer_value(d);
        }
    }
    const json_t *value = json_object_get(o, "value");
    if (bits) {
        if (batch_parse_hex64(bits, &r->value) < 0)
            return fail(e, "bad value_bits", "value_bits is the scalar's raw bits as 16 hex digits",
                        "record %zu: value_bits \"%.40s\"", i, bits);
        r->flags |= REC_HAS_VALUE;
    } else if (value && !json_is_null(value)) {
        if (!json_is_number(value))
            return fail(e, "wrong type in record", "value is a number (or send value_bits)",
                        "record %zu: \"value\" is not a number", i);
        if (value_to_bits(r->dtype, value, &r->value) < 0)
            return fail(e, "value does not fit its dtype", "send the exact bits as value_bits",
                        "record %zu: %g is not exactly representable as %s", i, json_number_value(value),
                        dtype_name(r->dtype));
        r->flags |= REC_HAS_VALUE;
    }
    size_t n;
    const json_t *inputs = json_object_get(o, "inputs"), *chunks = json_object_get(o, "chunks");
    if (inputs) {
        if (hex_list(inputs, in, &n, REC_MAX_INPUTS, i, "inputs", e) < 0)
            return -1;
        r->n_inputs = (uint16_t)n;
        r->inputs = *in;
    }
    if (chunks) {
        if (hex_list(chunks, ch, &n, REC_MAX_CHUNKS, i, "chunks", e) < 0)
            return -1;
        r->n_chunks = (uint32_t)n;
        r->chunks = *ch;
    }
    const json_t *site = json_object_get(o, "site");
    if (site && !json_is_null(site) && json_site(site, i, &r->site, e) < 0)
        return -1;
    if (json_ext(o, i, r, ext, e) < 0)
        return -1;
    char why[160];
    if (rec_check(r, why, sizeof(why)) < 0)
        return fail(e, "invalid record", "see the JSON ingest form in docs/server.md", "record %zu: %s", i, why);
    return 0;
}

int batch_decode_json(srv_batch *b, const void *buf, size_t len, srv_error *e)
{
    json_error_t jerr;
    uint64_t *in = NULL, *ch = NULL;
    int rc = -1;

    memset(b, 0, sizeof(*b));
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return fail(e, "malformed JSON", "send one JSON object (see docs/server.md)", "line %d, column %d: %s",
                    jerr.line, jerr.column, jerr.text);
    if (!json_is_object(root)) {
        fail(e, "wrong type", "the body is one JSON object", "the body is not a JSON object");
        goto out_decref;
    }
    const json_t *rank = json_object_get(root, "rank"), *bseq = json_object_get(root, "batch_seq");
    const json_t *recs = json_object_get(root, "records");
    if (!json_is_integer(rank) || json_integer_value(rank) < 0 || json_integer_value(rank) > UINT32_MAX) {
        fail(e, rank ? "wrong type" : "missing field", "rank is a non-negative integer",
             "\"rank\" is missing or not a non-negative integer");
        goto out_decref;
    }
    if (!json_is_integer(bseq) || json_integer_value(bseq) < 0) {
        fail(e, bseq ? "wrong type" : "missing field", "batch_seq is a non-negative integer",
             "\"batch_seq\" is missing or not a non-negative integer");
        goto out_decref;
    }
    if (!json_is_array(recs)) {
        fail(e, recs ? "wrong type" : "missing field", "records is an array of record objects",
             "\"records\" is missing or not an array");
        goto out_decref;
    }
    b->rank = (uint32_t)json_integer_value(rank);
    b->batch_seq = (uint64_t)json_integer_value(bseq);
    for (size_t i = 0; i < json_array_size(recs); i++) {
        rec_record r;
        unsigned char ext[REC_EXT_ENCODED_MAX];
        if (json_record(json_array_get(recs, i), i, &r, &in, &ch, ext, e) < 0 || check_record(b, &r, i, e) < 0)
            goto out_free;
        r.rank = b->rank;
        add_record(b, &r);
    }
    fix_pointers(b);
    rc = 0;
out_free:
    free(in);
    free(ch);
out_decref:
    json_decref(root);
    return rc;
}

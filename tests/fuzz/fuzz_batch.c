/* fuzz_batch.c - libFuzzer target for lockstepd's ingest decoders: byte 0 picks binary framing (even) or JSON (odd). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/store/batch.h"
#include "common/recmatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* same_site - 1 when two call sites hold the same fields. */
static int same_site(const rec_site *a, const rec_site *b)
{
    return a->offset == b->offset && a->function_offset == b->function_offset && a->module_len == b->module_len &&
           a->function_len == b->function_len && a->caller_len == b->caller_len &&
           !memcmp(a->module, b->module, a->module_len) && !memcmp(a->function, b->function, a->function_len) &&
           !memcmp(a->caller, b->caller, a->caller_len);
}

/* round_trip - a decoded record framed again decodes to the same record: its call site (a site without strings is
 * none), its other extension fields and its flags survive the one extension block (common/record.h). */
static void round_trip(const rec_record *r)
{
    size_t n = rec_encoded_size(r);
    unsigned char *buf = malloc(n);
    if (!buf)
        return;
    if (rec_encode(r, buf) != n)
        __builtin_trap();
    long words = rec_payload_words(buf + 8, n - 8);
    uint64_t *scratch = malloc(((size_t)(words > 0 ? words : 0) + 1) * sizeof(uint64_t));
    rec_record got;
    char why[200];
    if (!scratch || rec_decode_payload(buf + 8, n - 8, &got, scratch, why, sizeof(why)) < 0)
        __builtin_trap();
    int site_kept = rec_has_site(r) ? same_site(&got.site, &r->site) : !rec_has_site(&got);
    if (got.flags != r->flags || got.ext_len != r->ext_len || (r->ext_len && memcmp(got.ext, r->ext, r->ext_len)) ||
        !site_kept || got.fp != r->fp || got.seq != r->seq || rec_compare(&got, r) != REC_SAME ||
        rec_digest_term(&got) != rec_digest_term(r))
        __builtin_trap();
    free(scratch);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    srv_batch b;
    srv_error e;
    int rc =
        (data[0] & 1) ? batch_decode_json(&b, data + 1, size - 1, &e) : batch_decode_binary(&b, data + 1, size - 1, &e);
    if (rc == 0) {
        /* a decoded batch is whole: every record passes the framing's own checks */
        for (size_t i = 0; i < b.n; i++) {
            char why[160];
            if (rec_check(&b.recs[i], why, sizeof(why)) < 0 || !batch_utf8_valid(b.recs[i].name, b.recs[i].name_len))
                __builtin_trap();
            if (i && b.recs[i].seq <= b.recs[i - 1].seq)
                __builtin_trap();
            (void)rec_digest_term(&b.recs[i]);
            round_trip(&b.recs[i]);
        }
    } else if (!e.error[0] || !e.hint[0]) {
        __builtin_trap(); /* every rejection says what and what to do */
    }
    batch_release(&b);
    return 0;
}

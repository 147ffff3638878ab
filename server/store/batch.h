/* batch.h - decode an ingest body (binary record framing or JSON) into one validated batch of records. */
#ifndef SERVER_STORE_BATCH_H
#define SERVER_STORE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "server/store/cons_batch.h"
#include "server/core/error.h"

/* A step digest an agent sent for the records it held back (REC_STEP_DIGEST). */
typedef struct srv_step_digest {
    int64_t step;
    uint32_t n;      /* records it stands for */
    uint64_t digest; /* XOR of their rec_digest_term */
    uint64_t seq;    /* the last one's seq */
} srv_step_digest;

/* One decoded batch. Record names, inputs and chunks point into the batch's
 * own storage, valid until batch_release. */
typedef struct srv_batch {
    uint32_t rank;
    uint64_t batch_seq;
    int held;                     /* REC_HDR_HELD: records sent on demand; their digests came before */
    char run_id[REC_STR_MAX + 1]; /* from a binary header; "" if absent */
    size_t n, cap;
    rec_record *recs;
    const unsigned char *body;   /* binary batches: the body decoded (borrowed), whose frames frame_off locate */
    size_t *frame_off;           /* binary batches: where record i's frame starts in body (rec_encoded_size long) */
    int reframe;                 /* a call site's bytes were not UTF-8 and were replaced: its frames are encoded
                                    again from the records (server/store/frames.c), not stored as they arrived */
    size_t *name_off, *word_off; /* where each record's bytes sit while decoding */
    srv_step_digest *digests;
    size_t n_digests, cap_digests;
    srv_cons_digest *cons; /* consensus digests, a (step, key, window) once (cons_batch_add) */
    size_t n_cons, cap_cons;
    char *names;
    size_t names_len, names_cap;
    uint64_t *words;
    size_t words_len, words_cap;
} srv_batch;

/* batch_decode_binary - decode `len` bytes of record framing (a stream
 * header of kind REC_KIND_BATCH, then framed records and step digests) into
 * `b`. `buf` is borrowed: b->body points into it, so it must outlive `b`.
 * Returns 0, or -1 with `e` filled (torn or corrupt frames give their byte
 * offset and reason). `b` must be batch_release'd either way. */
int batch_decode_binary(srv_batch *b, const void *buf, size_t len, srv_error *e);

/* batch_decode_json - decode the JSON form {"rank", "batch_seq", "records":
 * [...]} (docs/server.md) into `b`. Returns 0, or -1 with `e` filled. `b`
 * must be batch_release'd either way. */
int batch_decode_json(srv_batch *b, const void *buf, size_t len, srv_error *e);

/* batch_release - free what the batch holds; it may be decoded into again. */
void batch_release(srv_batch *b);

/* batch_parse_hex64 - parse exactly 16 hex digits (either case, an optional
 * "0x" prefix allowed) into `out`. Returns 0 or -1. */
int batch_parse_hex64(const char *s, uint64_t *out);

/* batch_utf8_valid - 1 when `n` bytes at `s` are well-formed UTF-8 without
 * NUL bytes. */
int batch_utf8_valid(const char *s, size_t n);

/* What a batch adds to one step's digest (step_digests): the same sums a stored batch writes (store_result,
 * server/store/write.h). */
typedef struct store_step {
    int64_t step;
    int64_t n;          /* records counted */
    uint64_t digest;    /* XOR of their rec_digest_term */
    uint64_t inputs;    /* XOR of the records' rec_inputs_term */
    int inputs_unknown; /* a digest of held-back records is part of the step: their inputs are not known */
} store_step;

#endif /* SERVER_STORE_BATCH_H */

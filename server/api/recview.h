/* recview.h - a stored record (decoded from its frame) as the read API spells it: fingerprints and value bits as 16 hex
 * digits, shapes as integer arrays. */
#ifndef SERVER_API_RECVIEW_H
#define SERVER_API_RECVIEW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "server/http/server.h"

/* rv_hex64 - the 16 lowercase hex digits of `v`, as a JSON string. */
json_t *rv_hex64(uint64_t v);

/* rv_hex_words - `n` words as an array of rv_hex64 strings. */
json_t *rv_hex_words(const uint64_t *w, size_t n);

/* rv_shape - the record's extents as an array of integers. */
json_t *rv_shape(const rec_record *r);

/* rv_record - every stored field of `r` (GET /api/v1/runs/{id}/records):
 * rank, seq, step, name, occurrence, level, dtype, flags, t_ns, nbytes, fp,
 * shape, and value/value_bits, inputs, chunks, site (its call site), state,
 * chunk_bytes, shard and scales (pg_rec_extras) when the record has them. */
json_t *rv_record(const rec_record *r);

/* rv_reply_read_error - the reply to a failed read of stored frames
 * (server/store/frames.h): 500 when they are damaged (`rc` FRAMES_DAMAGED),
 * else 503 (the database). */
enum MHD_Result rv_reply_read_error(http_req *req, int rc, const char *err);

#endif /* SERVER_API_RECVIEW_H */

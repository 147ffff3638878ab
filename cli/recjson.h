/* recjson.h - records as JSON objects, in the field names of the JSON ingest format. */
#ifndef CLI_RECJSON_H
#define CLI_RECJSON_H

#include <jansson.h>

#include "common/record.h"

/* rec_to_json - a new object {"rank", "seq", "step", "name", "occurrence", "level",
 * "dtype", "shape", "nbytes", "fp", "t_ns"} plus "value" and "value_bits"
 * for scalars, "inputs" and "chunks" when present, "site" when it has a call
 * site (rec_site_json), "state" ("saved" or "restored") for a state entry,
 * and the other extension fields ("chunk_bytes" when not 1 MiB, "shard":
 * {offset, total, acc}, "scales": {dtype, shape, nbytes, fp}). Returns a new
 * reference, or NULL when out of memory. */
json_t *rec_to_json(const rec_record *r);

/* rec_site_json - a call site as the API spells it: {"module", "offset", "function", "function_offset",
 * "caller", "text"} (text: common/site.h's site_format), as a new object. */
json_t *rec_site_json(const rec_site *s);

/* rec_ext_to_json - add r's extension fields other than the site to `o` as rec_to_json names them. */
void rec_ext_to_json(const rec_record *r, json_t *o);

/* rec_ext_from_json - the reverse of rec_to_json for what is not a plain
 * field nor the site: "state" into *flags, the extension fields into `x`.
 * Returns 0, or -1 when one is malformed. */
int rec_ext_from_json(const json_t *o, uint8_t *flags, rec_ext *x);

/* rec_fp_hex - a fingerprint as 16 lowercase hex digits in `out` (17 bytes). */
void rec_fp_hex(uint64_t fp, char out[17]);

#endif /* CLI_RECJSON_H */

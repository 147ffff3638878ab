/* pgjson.h - PostgreSQL result cells as JSON values, the way every read endpoint spells them. */
#ifndef SERVER_API_PGJSON_H
#define SERVER_API_PGJSON_H

#include <jansson.h>
#include <libpq-fe.h>

#include "common/record.h"
#include "server/store/db.h"

/* TS - a timestamptz column as ISO 8601 UTC text with milliseconds, in SQL (DB_TS). */
#define TS(col) DB_TS(col)

/* pg_str - the cell as a string, or null for SQL NULL. */
json_t *pg_str(PGresult *r, int row, int col);

/* pg_int - the cell as an integer, or null for SQL NULL. */
json_t *pg_int(PGresult *r, int row, int col);

/* pg_real - the cell as a number, or null for SQL NULL. */
json_t *pg_real(PGresult *r, int row, int col);

/* pg_hex64 - a bigint cell as the 16 hex digits of its two's-complement
 * bits (fingerprints, value bits), or null. */
json_t *pg_hex64(PGresult *r, int row, int col);

/* pg_int_array - "{1,-2}" (a bigint[] as text) as a JSON array: of
 * integers, or with `hex` of 16-digit hex strings ("fffffffffffffffe"). */
json_t *pg_int_array(const char *text, int hex);

/* pg_hex_array - an int8[] cell as pg_int_array's hex strings, or null. */
json_t *pg_hex_array(PGresult *r, int row, int col);

/* SITE_COLS - a record's call site columns, in the order pg_site reads them. */
#define SITE_COLS "site_module, site_offset, site_function, site_function_offset, site_caller"

/* pg_site - the call site in the five columns from `col` (SITE_COLS) as {"module", "offset", "function",
 * "function_offset", "caller", "text"} (text as people read it: common/site.h), or null when the record has
 * none. */
json_t *pg_site(PGresult *r, int row, int col);

/* pg_site_json - a decoded record's call site (rec_record.site, e.g. from its stored frame) as pg_site spells it,
 * or null when it has none. */
json_t *pg_site_json(const rec_site *st);

/* pg_record_extras - add to record object `o` what `lockstep dump` spells
 * beyond the plain fields: "state" ("saved" or "restored") from `flags`, and
 * the extension fields of cell (row, col), a bytea read as encode(ext, 'hex')
 * or NULL: "chunk_bytes" (when not 1 MiB), "shard" {offset, total, acc},
 * "scales" {dtype, shape, nbytes, fp}. */
void pg_record_extras(json_t *o, int flags, PGresult *r, int row, int col);

/* pg_rec_extras - as pg_record_extras, from a decoded record (its flags and ext). */
void pg_rec_extras(json_t *o, const rec_record *rec);

/* pg_ext_decode - cell (row, col), a bytea as encode(ext, 'hex') or NULL,
 * into `buf` (REC_EXT_MAX bytes) as record `rec`'s ext/ext_len. */
void pg_ext_decode(PGresult *r, int row, int col, unsigned char *buf, rec_record *rec);

#endif /* SERVER_API_PGJSON_H */

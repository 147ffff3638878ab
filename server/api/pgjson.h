/* pgjson.h - PostgreSQL result cells as JSON values, the way every read endpoint spells them. */
#ifndef SERVER_API_PGJSON_H
#define SERVER_API_PGJSON_H

#include <jansson.h>
#include <libpq-fe.h>

#include "common/record.h"

/* pg_str - the cell as a string, or null for SQL NULL. */
json_t *pg_str(PGresult *r, int row, int col);

/* pg_int - the cell as an integer, or null for SQL NULL. */
json_t *pg_int(PGresult *r, int row, int col);

/* pg_real - the cell as a number, or null for SQL NULL. */
json_t *pg_real(PGresult *r, int row, int col);

/* pg_int_array - "{1,-2}" (a bigint[] as text) as a JSON array: of
 * integers, or with `hex` of 16-digit hex strings ("fffffffffffffffe"). */
json_t *pg_int_array(const char *text, int hex);

/* pg_rec_extras - add to record object `o` what `lockstep dump` spells beyond the plain fields of decoded record
 * `rec`: "state" ("saved" or "restored") from its flags, and its extension fields: "chunk_bytes" (when not
 * 1 MiB), "shard" {offset, total, acc}, "scales" {dtype, shape, nbytes, fp}. */
void pg_rec_extras(json_t *o, const rec_record *rec);

#endif /* SERVER_API_PGJSON_H */

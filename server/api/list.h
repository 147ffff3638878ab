/* list.h - the one envelope of every list endpoint, and its paging arguments.
 *
 *   {"items": [...], "total": N or null, "limit": L, "next_cursor": "C" or null, ...endpoint extras}
 *
 * A client asks for the next page with ?cursor=C (and the same filters); next_cursor is null on the
 * last page. Cursors are opaque: an offset for lists that are ordered by creation, an id for append-only
 * histories. docs/server.md, "Lists".
 */
#ifndef SERVER_API_LIST_H
#define SERVER_API_LIST_H

#include <jansson.h>

#include "server/http/request.h"

/* api_int_arg - query argument `key` as an integer in lo..hi, `dflt` when
 * absent. Returns 0, or -1 after replying 400 when it is malformed. */
int api_int_arg(http_req *req, const char *key, long long lo, long long hi, long long dflt, long long *out);

/* api_page - ?limit= (1..max, default `dflt`) and ?cursor= (an integer >= 0;
 * `legacy`, e.g. "offset" or "before", is accepted as its older name; absent:
 * `first`). Returns 0, or -1 after replying 400. */
int api_page(http_req *req, long long dflt, long long max, const char *legacy, long long first, long long *limit,
             long long *cursor);

/* api_time_arg - query argument `key` as a UTC time for SQL: "YYYY-MM-DD" (that day's start), or
 * "YYYY-MM-DDTHH:MM[:SS[.frac]]" with an optional "Z" or "+HH:MM" (UTC when none), normalized into `out`
 * ("" when absent). Returns 0, or -1 after replying 400. */
int api_time_arg(http_req *req, const char *key, char *out, size_t cap);

/* api_list - the envelope around `items` (stolen): total (< 0: unknown, null),
 * the limit, and the next cursor (< 0: none, null). */
json_t *api_list(json_t *items, long long total, long long limit, long long next_cursor);

#endif /* SERVER_API_LIST_H */

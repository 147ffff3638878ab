/* target.h - the raw request target's check: every part, once percent-decoded, is UTF-8 text without control bytes. */
#ifndef SERVER_HTTP_TARGET_H
#define SERVER_HTTP_TARGET_H

#include <stddef.h>

/* http_target_check - why the raw request target `raw` (path and query, as
 * sent) is refused, into `why` (cap bytes): a percent escape that does not
 * decode, a raw control byte, or a part (the path, each query key and value)
 * that once decoded holds a NUL or another control character or bytes that
 * are not UTF-8; a target longer than `max` bytes. Returns 0 when it is fine,
 * -1 when refused. Pure; tests/unit/test_target.c. */
int http_target_check(const char *raw, size_t max, char *why, size_t cap);

#endif /* SERVER_HTTP_TARGET_H */

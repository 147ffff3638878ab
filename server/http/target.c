/* target.c - the raw request target's check: every part, once percent-decoded, is UTF-8 text without control bytes
 * (server/http/target.h). */
#include "server/http/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "server/core/xalloc.h"

int http_target_check(const char *raw, size_t max, char *why, size_t cap)
{
    size_t n = strlen(raw);
    if (n > max) {
        snprintf(why, cap, "the request target is %zu bytes; at most %zu are taken", n, max);
        return -1;
    }
    /* Decode the way libmicrohttpd will (%XX; '+' in the query is a space, which is harmless) and check
     * the bytes that come out: each part (path, each query key and value) must be UTF-8 without control
     * bytes, so nothing a client sends reaches PostgreSQL, a log line or an error message unchecked. */
    char *dec = xmalloc(n + 1);
    size_t o = 0;
    int rc = 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = (unsigned char)raw[i];
        int end = c == 0 || c == '?' || c == '&' || c == '=';
        if (end) {
            if (!text_line_valid(dec, o)) {
                snprintf(why, cap,
                         "a part of the request target is not UTF-8 text without control bytes once "
                         "decoded (byte %zu)",
                         i);
                rc = -1;
                break;
            }
            o = 0;
            if (c == 0)
                break;
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            snprintf(why, cap, "the request target holds the control byte 0x%02x at byte %zu", c, i);
            rc = -1;
            break;
        }
        if (c == '%') {
            int hi = text_hex_digit(raw[i + 1]), lo = hi >= 0 ? text_hex_digit(raw[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                snprintf(why, cap, "a bad percent escape at byte %zu of the request target", i);
                rc = -1;
                break;
            }
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        dec[o++] = (char)c;
    }
    free(dec);
    return rc;
}

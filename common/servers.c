/* servers.c - a list of lockstepd addresses, parsed once for every client that takes one. */
#include "common/servers.h"

#include <stdio.h>
#include <string.h>

/* check_url - whether `u` (n bytes) is a URL a client may use; the reason in `why` when not. */
static int check_url(const char *u, size_t n, char *why, size_t cap)
{
    size_t scheme = n >= 7 && !strncmp(u, "http://", 7) ? 7 : n >= 8 && !strncmp(u, "https://", 8) ? 8 : 0;
    if (!scheme) {
        snprintf(why, cap, "'%.*s' is not an http:// or https:// URL", (int)(n < 200 ? n : 200), u);
        return -1;
    }
    if (n == scheme || u[scheme] == '/') {
        snprintf(why, cap, "'%.*s' names no host", (int)(n < 200 ? n : 200), u);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)u[i] <= ' ' || u[i] == 0x7f) {
            snprintf(why, cap, "a server URL holds a blank or a control character");
            return -1;
        }
    if (n >= SERVER_URL_MAX) {
        snprintf(why, cap, "a server URL is longer than %d bytes", SERVER_URL_MAX - 1);
        return -1;
    }
    return 0;
}

int servers_parse(const char *text, server_list *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    const char *p = text ? text : "";
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        while (n && p[n - 1] == '/')
            n--;
        if (!n) {
            snprintf(why, cap, "an empty server URL in the list '%.200s'", text ? text : "");
            return -1;
        }
        if (check_url(p, n, why, cap) < 0)
            return -1;
        if (out->n == SERVERS_MAX) {
            snprintf(why, cap, "more than %d server URLs", SERVERS_MAX);
            return -1;
        }
        memcpy(out->url[out->n], p, n);
        out->url[out->n][n] = 0;
        out->n++;
        if (!end)
            return 0;
        p = end + 1;
    }
}

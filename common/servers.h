/* servers.h - a list of lockstepd addresses ("http://a:8080,http://b:8080"): the agent, the lockstep command and
 * the SPANK plugin take one wherever they take a server URL, and move on to the next lockstepd when one does not
 * answer (instances on one PostgreSQL share every run: docs/server.md, "Several lockstepd on one database"). */
#ifndef COMMON_SERVERS_H
#define COMMON_SERVERS_H

#include <stddef.h>

#define SERVERS_MAX 8      /* lockstepd addresses a list holds at most */
#define SERVER_URL_MAX 512 /* bytes of one, with its NUL */

typedef struct server_list {
    int n;
    char url[SERVERS_MAX][SERVER_URL_MAX]; /* each http:// or https://, without a trailing slash */
} server_list;

/* servers_parse - `text`, URLs separated by commas (blanks around each are dropped), into `out`. Each must start
 * with http:// or https://, name a host, and hold no blank or control character; trailing slashes are dropped.
 * Returns 0, or -1 with the reason in `why` (an empty entry, a bad URL, more than SERVERS_MAX). */
int servers_parse(const char *text, server_list *out, char *why, size_t cap);

#endif /* COMMON_SERVERS_H */

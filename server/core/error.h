/* error.h - a user-facing error as lockstepd reports it: a short fact, then detail, then a hint. */
#ifndef SERVER_CORE_ERROR_H
#define SERVER_CORE_ERROR_H

typedef struct srv_error {
    int status; /* the HTTP status it calls for when not the caller's default (a refusal: 403, 409); 0 */
    char error[128];
    char detail[512];
    char hint[256];
} srv_error;

/* srv_error_set - fill `e` (each part cut to its field; a trailing newline of
 * `detail`, as libpq's messages have, is dropped). Returns -1, so that a
 * failing function can `return srv_error_set(e, ...)`. */
int srv_error_set(srv_error *e, const char *error, const char *detail, const char *hint);

#endif /* SERVER_CORE_ERROR_H */

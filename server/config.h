/* config.h - lockstepd settings: defaults, lockstepd.conf (key = value) and command-line flags. */
#ifndef SERVER_CONFIG_H
#define SERVER_CONFIG_H

#include <stddef.h>

typedef struct srv_config {
    char listen_host[256];   /* "127.0.0.1", "::1", "0.0.0.0", "*" */
    int listen_port;         /* 0: any free port (printed at start) */
    char db_url[1024];       /* empty: embedded PostgreSQL under state_dir */
    char state_dir[1024];
    char secret_file[1024];  /* empty: ingest is open */
    char admin_token_file[1024];
    char web_dir[1024];
    char tls_cert[1024];
    char tls_key[1024];
    char log_file[1024];
    char pg_bin[1024];       /* PostgreSQL server binaries for the embedded cluster */
    char pg_user[64];        /* OS user the embedded cluster runs as when lockstepd is root */
    char port_file[1024];    /* where to write the bound port (tests, scripts) */
    int log_level;
    int threads;             /* HTTP worker threads (one libpq connection each) */
    int db_workers;          /* threads that store record batches (one libpq connection each) */
    int max_connections;
    int connection_timeout_s;
    size_t max_body;         /* bytes */
    size_t max_buffered;     /* bytes of bodies held at once, all requests together */
    int retain_days;         /* 0: keep records forever */
    int read_open;           /* 1: reads need no token; 0: reads need the admin token */
} srv_config;

/* cfg_defaults - fill `c` with the built-in defaults. */
void cfg_defaults(srv_config *c);

/* cfg_set - apply one setting `key` = `value`. Returns 0, or -1 with a
 * reason in `err` (unknown key, bad value). */
int cfg_set(srv_config *c, const char *key, const char *value, char *err, size_t cap);

/* cfg_load_file - apply every `key = value` line of `path` ('#' starts a
 * comment). Returns 0, or -1 with "path:line: reason" in `err`. */
int cfg_load_file(srv_config *c, const char *path, char *err, size_t cap);

/* cfg_parse_args - apply --config first, then every other flag, over the
 * defaults already in `c`. Returns 0, 1 when --help was asked (usage already
 * printed), or -1 with a reason in `err`. */
int cfg_parse_args(srv_config *c, int argc, char **argv, char *err, size_t cap);

#endif /* SERVER_CONFIG_H */

/* config.c - lockstepd settings: defaults, lockstepd.conf (key = value) and command-line flags. */
#include "server/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/hwcfg.h"
#include "server/log.h"

void cfg_defaults(srv_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
    c->listen_port = 8080;
    snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/lockstep");
    snprintf(c->pg_bin, sizeof(c->pg_bin), "/usr/lib/postgresql/15/bin");
    snprintf(c->pg_user, sizeof(c->pg_user), "postgres");
    c->log_level = LOG_INFO;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = n > 0 ? (int)n : 2;
    c->db_workers = 2 * c->threads;
    c->max_connections = 1024;
    c->connection_timeout_s = 60;
    c->max_body = 64u << 20;
    c->max_buffered = (size_t)1 << 30;
    c->read_open = 1;
}

static int set_str(char *dst, size_t cap, const char *v, const char *key, char *err, size_t ecap)
{
    if (strlen(v) >= cap) {
        snprintf(err, ecap, "%s is longer than %zu bytes", key, cap - 1);
        return -1;
    }
    snprintf(dst, cap, "%s", v);
    return 0;
}

static int set_int(int *dst, const char *v, long lo, long hi, const char *key, char *err, size_t ecap)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi) {
        snprintf(err, ecap, "%s must be an integer in %ld..%ld, not \"%s\"", key, lo, hi, v);
        return -1;
    }
    *dst = (int)n;
    return 0;
}

/* set_listen - "HOST:PORT", "[V6]:PORT" or ":PORT". */
static int set_listen(srv_config *c, const char *v, char *err, size_t cap)
{
    const char *colon = strrchr(v, ':');
    if (!colon) {
        snprintf(err, cap, "listen must be ADDR:PORT, not \"%s\"", v);
        return -1;
    }
    const char *h = v;
    size_t hlen = (size_t)(colon - v);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= sizeof(c->listen_host)) {
        snprintf(err, cap, "listen address is too long");
        return -1;
    }
    if (set_int(&c->listen_port, colon + 1, 0, 65535, "listen port", err, cap) < 0)
        return -1;
    if (hlen == 0)
        snprintf(c->listen_host, sizeof(c->listen_host), "0.0.0.0");
    else
        snprintf(c->listen_host, sizeof(c->listen_host), "%.*s", (int)hlen, h);
    return 0;
}

int cfg_set(srv_config *c, const char *key, const char *v, char *err, size_t cap)
{
#define STR(k, f) if (strcmp(key, k) == 0) return set_str(c->f, sizeof(c->f), v, key, err, cap)
    STR("db", db_url);
    STR("state_dir", state_dir);
    STR("secret", secret_file);
    STR("admin_token", admin_token_file);
    STR("web_dir", web_dir);
    STR("tls_cert", tls_cert);
    STR("tls_key", tls_key);
    STR("log_file", log_file);
    STR("pg_bin", pg_bin);
    STR("pg_user", pg_user);
    STR("port_file", port_file);
#undef STR
    if (strcmp(key, "listen") == 0)
        return set_listen(c, v, err, cap);
    if (strcmp(key, "threads") == 0)
        return set_int(&c->threads, v, 1, 256, key, err, cap);
    if (strcmp(key, "db_workers") == 0)
        return set_int(&c->db_workers, v, 1, 256, key, err, cap);
    if (strcmp(key, "max_connections") == 0)
        return set_int(&c->max_connections, v, 1, 65536, key, err, cap);
    if (strcmp(key, "connection_timeout") == 0)
        return set_int(&c->connection_timeout_s, v, 1, 3600, key, err, cap);
    if (strcmp(key, "retain_days") == 0)
        return set_int(&c->retain_days, v, 0, 100000, key, err, cap);
    if (strcmp(key, "max_body_mb") == 0) {
        int mb;
        if (set_int(&mb, v, 1, 4096, key, err, cap) < 0)
            return -1;
        c->max_body = (size_t)mb << 20;
        return 0;
    }
    if (strcmp(key, "max_buffered_mb") == 0) {
        int mb;
        if (set_int(&mb, v, 1, 1 << 20, key, err, cap) < 0)
            return -1;
        c->max_buffered = (size_t)mb << 20;
        return 0;
    }
    if (strcmp(key, "log_level") == 0) {
        int l = log_parse_level(v);
        if (l < 0) {
            snprintf(err, cap, "log_level must be debug, info, warn or error, not \"%s\"", v);
            return -1;
        }
        c->log_level = l;
        return 0;
    }
    if (strcmp(key, "read_access") == 0) {
        if (strcmp(v, "open") == 0)
            c->read_open = 1;
        else if (strcmp(v, "admin") == 0)
            c->read_open = 0;
        else {
            snprintf(err, cap, "read_access must be open or admin, not \"%s\"", v);
            return -1;
        }
        return 0;
    }
    int hw = hwcfg_set(key, v, err, cap); /* the suspects and alerts keys (server/hwcfg.c) */
    if (hw <= 0)
        return hw;
    snprintf(err, cap, "unknown setting \"%s\"", key);
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

int cfg_load_file(srv_config *c, const char *path, char *err, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096], why[512];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, cap, "%s:%d: expected key = value", path, lineno);
            rc = -1;
            break;
        }
        *eq = 0;
        if (cfg_set(c, trim(s), trim(eq + 1), why, sizeof(why)) < 0) {
            snprintf(err, cap, "%s:%d: %s", path, lineno, why);
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}

static const struct {
    const char *flag, *key;
} flags[] = {
    {"--listen", "listen"},           {"--db", "db"},
    {"--state-dir", "state_dir"},     {"--secret", "secret"},
    {"--admin-token", "admin_token"}, {"--web-dir", "web_dir"},
    {"--tls-cert", "tls_cert"},       {"--tls-key", "tls_key"},
    {"--threads", "threads"},         {"--log-level", "log_level"},
    {"--db-workers", "db_workers"},
    {"--log-file", "log_file"},       {"--port-file", "port_file"},
    {"--retain-days", "retain_days"}, {"--max-body-mb", "max_body_mb"},
    {"--pg-bin", "pg_bin"},           {"--read-access", "read_access"},
};
#define N_FLAGS (sizeof(flags) / sizeof(flags[0]))

static void usage(void)
{
    printf("usage: lockstepd [--config FILE] [--listen ADDR:PORT] [--db URL] [--state-dir DIR]\n"
           "                 [--secret FILE] [--admin-token FILE] [--web-dir DIR] [--tls-cert FILE --tls-key FILE]\n"
           "                 [--threads N] [--db-workers N] [--log-level LEVEL] [--log-file FILE] [--port-file FILE]\n"
           "                 [--retain-days N] [--max-body-mb N] [--pg-bin DIR] [--read-access open|admin]\n"
           "Without --db, lockstepd runs its own PostgreSQL under --state-dir. See docs/server.md.\n");
}

int cfg_parse_args(srv_config *c, int argc, char **argv, char *err, size_t cap)
{
    char why[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage();
            return 1;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc && cfg_load_file(c, argv[i + 1], err, cap) < 0)
            return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                snprintf(err, cap, "--config needs a value");
                return -1;
            }
            i++;
            continue;
        }
        const char *key = NULL, *val = NULL;
        for (size_t k = 0; k < N_FLAGS; k++) {
            size_t fl = strlen(flags[k].flag);
            if (strncmp(a, flags[k].flag, fl) != 0)
                continue;
            if (a[fl] == '=') {
                key = flags[k].key;
                val = a + fl + 1;
            } else if (a[fl] == 0) {
                if (i + 1 >= argc) {
                    snprintf(err, cap, "%s needs a value", a);
                    return -1;
                }
                key = flags[k].key;
                val = argv[++i];
            }
            if (key)
                break;
        }
        if (!key) {
            snprintf(err, cap, "unknown argument \"%s\" (see lockstepd --help)", a);
            return -1;
        }
        if (cfg_set(c, key, val, why, sizeof(why)) < 0) {
            snprintf(err, cap, "%s", why);
            return -1;
        }
    }
    return 0;
}

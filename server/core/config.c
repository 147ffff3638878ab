/* config.c - lockstepd's settings: one key table for lockstepd.conf (key = value) and command-line flags. */
#include "server/core/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/version.h"
#include "server/core/log.h"

enum cfg_type {
    CFG_STR,    /* a string that fits the field */
    CFG_URL,    /* "" or an http:// or https:// URL */
    CFG_INT,    /* an integer in lo..hi */
    CFG_DBL,    /* a number in lo..hi */
    CFG_MB,     /* an integer number of MiB in lo..hi, stored as bytes (size_t) */
    CFG_CHOICE, /* one of `choices`, stored as its index (int) */
    CFG_LISTEN, /* "HOST:PORT", "[V6]:PORT" or ":PORT" into listen_host and listen_port */
};

/* One setting: its lockstepd.conf key, its command-line flag (or NULL), where it lives and what it takes. */
typedef struct cfg_key {
    const char *key, *flag;
    enum cfg_type type;
    size_t off, size;
    double lo, hi;
    const char *const *choices;
} cfg_key;

static const char *const LEVELS[] = {"debug", "info", "warn", "error", NULL}; /* enum log_level's order */
static const char *const READ_ACCESS[] = {"admin", "open", NULL};             /* index = read_open */
static const char *const SLURM_ACTION[] = {"off", "drain", NULL};             /* index = slurm_drain */
static const char *const YES_NO[] = {"no", "yes", NULL};                      /* index = the flag */

#define F(field) offsetof(srv_config, field), sizeof(((srv_config *)0)->field)
static const cfg_key KEYS[] = {
    {"listen", "--listen", CFG_LISTEN, 0, 0, 0, 0, NULL},
    {"db", "--db", CFG_STR, F(db_url), 0, 0, NULL},
    {"read_db", "--read-db", CFG_STR, F(read_db_url), 0, 0, NULL},
    {"state_dir", "--state-dir", CFG_STR, F(state_dir), 0, 0, NULL},
    {"secret", "--secret", CFG_STR, F(secret_file), 0, 0, NULL},
    {"admin_token", "--admin-token", CFG_STR, F(admin_token_file), 0, 0, NULL},
    {"web_dir", "--web-dir", CFG_STR, F(web_dir), 0, 0, NULL},
    {"tls_cert", "--tls-cert", CFG_STR, F(tls_cert), 0, 0, NULL},
    {"tls_key", "--tls-key", CFG_STR, F(tls_key), 0, 0, NULL},
    {"log_file", "--log-file", CFG_STR, F(log_file), 0, 0, NULL},
    {"pg_bin", "--pg-bin", CFG_STR, F(pg_bin), 0, 0, NULL},
    {"pg_user", NULL, CFG_STR, F(pg_user), 0, 0, NULL},
    {"port_file", "--port-file", CFG_STR, F(port_file), 0, 0, NULL},
    {"log_level", "--log-level", CFG_CHOICE, F(log_level), 0, 0, LEVELS},
    {"threads", "--threads", CFG_INT, F(threads), 1, 256, NULL},
    {"db_workers", "--db-workers", CFG_INT, F(db_workers), 1, 256, NULL},
    {"db_group_wait_ms", "--db-group-wait-ms", CFG_DBL, F(db_group_wait_ms), 0.0, 1000.0, NULL},
    {"lease_s", "--lease-s", CFG_DBL, F(lease_s), 1.0, 300.0, NULL},
    {"memory_idle_s", "--memory-idle-s", CFG_DBL, F(memory_idle_s), 1.0, 3600.0, NULL},
    {"max_connections", NULL, CFG_INT, F(max_connections), 1, 65536, NULL},
    {"max_connections_per_ip", NULL, CFG_INT, F(max_connections_per_ip), 0, 65536, NULL},
    {"connection_timeout", NULL, CFG_INT, F(connection_timeout_s), 1, 3600, NULL},
    {"header_timeout", NULL, CFG_INT, F(header_timeout_s), 1, 3600, NULL},
    {"body_timeout", NULL, CFG_INT, F(body_timeout_s), 1, 86400, NULL},
    {"max_body_mb", "--max-body-mb", CFG_MB, F(max_body), 1, 4096, NULL},
    {"max_buffered_mb", NULL, CFG_MB, F(max_buffered), 1, 1 << 20, NULL},
    {"retain_days", "--retain-days", CFG_INT, F(retain_days), 0, 100000, NULL},
    {"read_access", "--read-access", CFG_CHOICE, F(read_open), 0, 0, READ_ACCESS},
    {"trust_reported_hosts", NULL, CFG_CHOICE, F(trust_reported_hosts), 0, 0, YES_NO},
    {"pg_restart_max", NULL, CFG_INT, F(pg_restart_max), 0, 1000000, NULL},
    {"suspect_threshold", NULL, CFG_DBL, F(suspect_threshold), 0.5, 1.0, NULL},
    {"suspect_min_evidence", NULL, CFG_DBL, F(suspect_min_evidence), 0.0, 1e6, NULL},
    {"suspect_ratio", NULL, CFG_DBL, F(suspect_ratio), 1.0, 1000.0, NULL},
    {"suspect_prior", NULL, CFG_DBL, F(suspect_prior), 0.001, 1e6, NULL},
    {"weak_weight", NULL, CFG_DBL, F(weak_weight), 0.0, 1.0, NULL},
    {"replay_transient_weight", NULL, CFG_DBL, F(replay_transient_weight), 0.0, 0.99, NULL},
    {"software_spread", NULL, CFG_INT, F(software_spread), 2, 100000, NULL},
    {"software_window_days", NULL, CFG_INT, F(software_window_days), 1, 100000, NULL},
    {"suspects_interval_ms", NULL, CFG_INT, F(suspects_interval_ms), 50, 3600000, NULL},
    {"slurm_action", NULL, CFG_CHOICE, F(slurm_drain), 0, 0, SLURM_ACTION},
    {"scontrol", NULL, CFG_STR, F(scontrol), 0, 0, NULL},
    {"slurm_conf", NULL, CFG_STR, F(slurm_conf), 0, 0, NULL},
    {"public_url", NULL, CFG_URL, F(public_url), 0, 0, NULL},
    {"alert_webhook_url", NULL, CFG_URL, F(webhook_url), 0, 0, NULL},
    {"alert_slack_url", NULL, CFG_URL, F(slack_url), 0, 0, NULL},
    {"alert_alertmanager_url", NULL, CFG_URL, F(alertmanager_url), 0, 0, NULL},
    {"mail_program", NULL, CFG_STR, F(mail_program), 0, 0, NULL},
    {"mail_domain", NULL, CFG_STR, F(mail_domain), 0, 0, NULL},
    {"mail_map", NULL, CFG_STR, F(mail_map), 0, 0, NULL},
    {"mail_from", NULL, CFG_STR, F(mail_from), 0, 0, NULL},
    {"mail_admin", NULL, CFG_STR, F(mail_admin), 0, 0, NULL},
    {"alert_retry_ms", NULL, CFG_INT, F(alert_retry_ms), 10, 3600000, NULL},
    {"alert_retry_max_s", NULL, CFG_INT, F(alert_retry_max_s), 1, 86400, NULL},
    {"alert_give_up_s", NULL, CFG_INT, F(alert_give_up_s), 1, 31536000, NULL},
    {"alert_timeout_s", NULL, CFG_INT, F(alert_timeout_s), 1, 600, NULL},
    {"alert_resend_s", NULL, CFG_INT, F(alert_resend_s), 1, 86400, NULL},
    {"cluster", NULL, CFG_STR, F(cluster), 0, 0, NULL},
};
#undef F
#define N_KEYS (sizeof(KEYS) / sizeof(KEYS[0]))

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
    c->db_group_wait_ms = 20;
    c->lease_s = 5;
    c->memory_idle_s = 120;
    c->max_connections = 1024;
    c->max_connections_per_ip = SRV_PER_IP_DEFAULT;
    c->connection_timeout_s = 60;
    c->header_timeout_s = 20;
    c->body_timeout_s = 300;
    c->pg_restart_max = 10;
    c->max_body = 64u << 20;
    c->max_buffered = (size_t)1 << 30;
    c->read_open = 1;

    c->suspect_threshold = 0.95;
    c->suspect_min_evidence = 2.0;
    c->suspect_ratio = 2.0;
    c->suspect_prior = 2.0;
    c->weak_weight = 0.5;
    c->replay_transient_weight = 0.5;
    c->software_spread = 4;
    c->software_window_days = 7;
    c->suspects_interval_ms = 2000;
    snprintf(c->scontrol, sizeof(c->scontrol), "scontrol");
    c->alert_retry_ms = 1000;
    c->alert_retry_max_s = 300;
    c->alert_give_up_s = 259200;
    c->alert_timeout_s = 10;
    c->alert_resend_s = 60;
}

/* parse_number - `v` as a number in lo..hi (an integer when `integer`). Returns 0, or -1 with a reason. */
static int parse_number(const cfg_key *k, const char *v, int integer, double *out, char *err, size_t cap)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    int ok = !errno && end != v && !*end && d >= k->lo && d <= k->hi && (!integer || d == floor(d));
    if (!ok) {
        if (integer)
            snprintf(err, cap, "%s must be an integer in %.0f..%.0f, not \"%s\"", k->key, k->lo, k->hi, v);
        else
            snprintf(err, cap, "%s must be a number in %g..%g, not \"%s\"", k->key, k->lo, k->hi, v);
        return -1;
    }
    *out = d;
    return 0;
}

/* set_listen - "HOST:PORT", "[V6]:PORT" or ":PORT". */
static int set_listen(srv_config *c, const char *v, char *err, size_t cap)
{
    static const cfg_key port = {"listen port", NULL, CFG_INT, 0, 0, 0, 65535, NULL};
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
    double p;
    if (parse_number(&port, colon + 1, 1, &p, err, cap) < 0)
        return -1;
    c->listen_port = (int)p;
    if (hlen == 0)
        snprintf(c->listen_host, sizeof(c->listen_host), "0.0.0.0");
    else
        snprintf(c->listen_host, sizeof(c->listen_host), "%.*s", (int)hlen, h);
    return 0;
}

/* apply - store `v` into the field of `k`. */
static int apply(srv_config *c, const cfg_key *k, const char *v, char *err, size_t cap)
{
    char *field = (char *)c + k->off;
    double d;
    switch (k->type) {
    case CFG_URL:
        if (*v && strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
            snprintf(err, cap, "%s must be an http:// or https:// URL, not \"%s\"", k->key, v);
            return -1;
        }
        /* fall through */
    case CFG_STR:
        if (strlen(v) >= k->size) {
            snprintf(err, cap, "%s is longer than %zu bytes", k->key, k->size - 1);
            return -1;
        }
        snprintf(field, k->size, "%s", v);
        return 0;
    case CFG_INT:
        if (parse_number(k, v, 1, &d, err, cap) < 0)
            return -1;
        *(int *)(void *)field = (int)d;
        return 0;
    case CFG_DBL:
        if (parse_number(k, v, 0, &d, err, cap) < 0)
            return -1;
        *(double *)(void *)field = d;
        return 0;
    case CFG_MB:
        if (parse_number(k, v, 1, &d, err, cap) < 0)
            return -1;
        *(size_t *)(void *)field = (size_t)d << 20;
        return 0;
    case CFG_CHOICE:
        for (int i = 0; k->choices[i]; i++)
            if (strcmp(v, k->choices[i]) == 0) {
                *(int *)(void *)field = i;
                return 0;
            }
        {
            size_t n = (size_t)snprintf(err, cap, "%s must be", k->key);
            for (int i = 0; k->choices[i] && n < cap; i++)
                n += (size_t)snprintf(err + n, cap - n, "%s %s",
                                      i == 0              ? ""
                                      : k->choices[i + 1] ? ","
                                                          : " or",
                                      k->choices[i]);
            if (n < cap)
                snprintf(err + n, cap - n, ", not \"%s\"", v);
        }
        return -1;
    case CFG_LISTEN: return set_listen(c, v, err, cap);
    }
    return -1;
}

int cfg_set(srv_config *c, const char *key, const char *v, char *err, size_t cap)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(key, KEYS[i].key) == 0)
            return apply(c, &KEYS[i], v, err, cap);
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

static void usage(void)
{
    printf("usage: lockstepd [--version] [--config FILE] [--listen ADDR:PORT] [--db URL] [--read-db URL]\n"
           "                 [--state-dir DIR]\n"
           "                 [--secret FILE] [--admin-token FILE] [--web-dir DIR] [--tls-cert FILE --tls-key FILE]\n"
           "                 [--threads N] [--db-workers N] [--log-level LEVEL] [--log-file FILE] [--port-file FILE]\n"
           "                 [--retain-days N] [--max-body-mb N] [--pg-bin DIR] [--read-access open|admin]\n"
           "Without --db, lockstepd runs its own PostgreSQL under --state-dir. Every other setting is a\n"
           "`key = value` line of the --config file. See docs/server.md.\n");
}

/* flag_of - the table entry whose flag `a` is (as "--flag" or "--flag=value"), or NULL. */
static const cfg_key *flag_of(const char *a, const char **inline_value)
{
    for (size_t k = 0; k < N_KEYS; k++) {
        if (!KEYS[k].flag)
            continue;
        size_t fl = strlen(KEYS[k].flag);
        if (strncmp(a, KEYS[k].flag, fl) != 0)
            continue;
        if (a[fl] == '=') {
            *inline_value = a + fl + 1;
            return &KEYS[k];
        }
        if (a[fl] == 0) {
            *inline_value = NULL;
            return &KEYS[k];
        }
    }
    return NULL;
}

int cfg_parse_args(srv_config *c, int argc, char **argv, char *err, size_t cap)
{
    char why[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage();
            return 1;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("lockstepd %s (commit %s)\n", version_release(), version_commit());
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
        const char *val = NULL;
        const cfg_key *k = flag_of(a, &val);
        if (!k) {
            snprintf(err, cap, "unknown argument \"%s\" (see lockstepd --help)", a);
            return -1;
        }
        if (!val) {
            if (i + 1 >= argc) {
                snprintf(err, cap, "%s needs a value", a);
                return -1;
            }
            val = argv[++i];
        }
        if (apply(c, k, val, why, sizeof(why)) < 0) {
            snprintf(err, cap, "%s", why);
            return -1;
        }
    }
    return 0;
}

/* config.h - lockstepd's settings: one key table for lockstepd.conf (key = value) and command-line flags. */
#ifndef SERVER_CORE_CONFIG_H
#define SERVER_CORE_CONFIG_H

#include <stddef.h>

/* Every setting of lockstepd. Each field is named by one key of the table in
 * config.c (lockstepd.conf `key = value`, and `--flag` for the service keys);
 * docs/server.md and docs/suspects.md list them. */
typedef struct srv_config {
    /* The service. */
    char listen_host[256];  /* "127.0.0.1", "::1", "0.0.0.0", "*" */
    int listen_port;        /* 0: any free port (printed at start) */
    char db_url[1024];      /* empty: embedded PostgreSQL under state_dir */
    char read_db_url[1024]; /* a streaming replica for the read API; empty: the primary answers reads */
    char state_dir[1024];
    char secret_file[1024]; /* empty: ingest is open */
    char admin_token_file[1024];
    char web_dir[1024];
    char tls_cert[1024];
    char tls_key[1024];
    char log_file[1024];
    char pg_bin[1024];       /* PostgreSQL server binaries for the embedded cluster */
    char pg_user[64];        /* OS user the embedded cluster runs as when lockstepd is root */
    char port_file[1024];    /* where to write the bound port (tests, scripts) */
    int log_level;           /* enum log_level */
    int threads;             /* HTTP worker threads (one libpq connection each) */
    int db_workers;          /* threads that store record batches (one libpq connection each) */
    double db_group_wait_ms; /* when batches come in at once, how long one may wait for others to share its commit */
    double lease_s;          /* how long a twin group's comparison lease lasts unrenewed (server/peers/lease.h) */
    double memory_idle_s;    /* the comparison's memory, short of room, forgets groups idle this long (cmp_mem.h) */
    int max_connections;
    int max_connections_per_ip; /* 0: no per-address limit (default SRV_PER_IP_DEFAULT) */
    int connection_timeout_s;   /* idleness */
    int header_timeout_s;       /* a request's line and headers must be in within this */
    int body_timeout_s;         /* its body within this once the headers are in */
    size_t max_body;            /* bytes */
    size_t max_buffered;        /* bytes of bodies held at once, all requests together */
    int retain_days;            /* 0: keep records forever */
    int read_open;              /* 1: reads need no token; 0: reads need the admin token */
    int trust_reported_hosts;   /* 1: manifests' own hosts count as hardware evidence without attestation */
    int pg_restart_max;         /* embedded PostgreSQL: restarts tried in a row before giving up (0: never) */

    /* Hardware suspects (docs/suspects.md). */
    double suspect_threshold;       /* score at or above which a node turns suspect (0.95) */
    double suspect_min_evidence;    /* weighted involvements needed as well (2.0) */
    double suspect_ratio;           /* "elevated" means above ratio x baseline (2.0) */
    double suspect_prior;           /* prior strength in pseudo-runs (2.0) */
    double weak_weight;             /* evidence of each run of a diverging pair (0.5) */
    double replay_transient_weight; /* evidence on a node whose divergence a replay judged transient (0.5) */
    int software_spread;            /* nodes needed to explain one record's divergences before it is software (4) */
    int software_window_days;       /* how far back the spread rule looks (7) */
    int suspects_interval_ms;       /* sweep period of the suspects thread (2000) */

    /* The Slurm action. */
    int slurm_drain;       /* slurm_action = drain: drain suspects, resume repaired nodes */
    char scontrol[1024];   /* scontrol program (default: scontrol on PATH) */
    char slurm_conf[1024]; /* SLURM_CONF for scontrol ("" = inherit) */

    /* Alerts. */
    char public_url[512];        /* dashboard base URL for links ("" = http://LISTEN) */
    char webhook_url[1024];      /* generic JSON webhook */
    char slack_url[1024];        /* Slack incoming webhook */
    char alertmanager_url[1024]; /* Alertmanager base URL (POST BASE/api/v2/alerts) */
    char mail_program[1024];     /* sendmail-compatible program */
    char mail_domain[256];       /* an attested user the map does not name -> user@mail_domain ("" = none) */
    char mail_map[1024];         /* file of "user address" lines: where an attested user's mail goes */
    char mail_from[256];         /* From: (default lockstep@mail_domain) */
    char mail_admin[256];        /* recipient of node alerts ("" = none by mail) */
    int alert_retry_ms;          /* first retry delay (1000), doubled per attempt */
    int alert_retry_max_s;       /* backoff cap (300) */
    int alert_give_up_s;         /* an alert undelivered this long after it was raised: stop (259200, 3 days) */
    int alert_timeout_s;         /* per delivery attempt (10) */
    int alert_resend_s;          /* an open alert is re-sent to Alertmanager this often (60) */
    char cluster[128];           /* the `cluster` label of every alert ("" = none) */
} srv_config;

/* The default allowance of concurrent connections from one client address: one node's agents with room to
 * spare. A node of 8 GPUs runs 8 ranks, each with one sender connection (kept alive), and per job step the
 * plugin's registration and attestation (short-lived), plus a few `lockstep` commands: about 16 at once;
 * 64 is four times that, while one address can no longer hold every connection slot (docs/server.md,
 * "The door", says how to size it). */
#define SRV_PER_IP_DEFAULT 64

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

#endif /* SERVER_CORE_CONFIG_H */

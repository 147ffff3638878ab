/* pgembed.h - the embedded PostgreSQL cluster: initdb + pg_ctl under the state directory, unix socket only. */
#ifndef SERVER_STORE_PGEMBED_H
#define SERVER_STORE_PGEMBED_H

#include <stddef.h>
#include <sys/types.h>

#include "server/core/config.h"

typedef struct pg_embed {
    char data_dir[1100];
    char sock_dir[1100];
    char log_path[1100];
    char pg_ctl[1100];
    uid_t uid; /* who runs the cluster; (uid_t)-1: ourselves */
    gid_t gid;
    int started; /* 1 when we started it (and so stop it) */
} pg_embed;

/* pg_embed_start - make sure a cluster runs under c->state_dir (initdb on
 * first use, pg_ctl start unless it already runs), create the `lockstep`
 * database, and write its libpq conninfo to `conninfo`. As root, the cluster
 * runs as c->pg_user, which then owns its directories. Returns 0, or -1 after
 * logging what failed. */
int pg_embed_start(pg_embed *pe, const srv_config *c, char *conninfo, size_t cap);

/* pg_embed_stop - stop the cluster (fast shutdown) if pg_embed_start
 * started or adopted it. Safe to call twice. Stop the watch first. */
void pg_embed_stop(pg_embed *pe);

/* pg_embed_watch_start - watch the cluster pg_embed_start started: every
 * second, whether its postmaster lives; when it died, start it again (after
 * 1, 2, 4 ... 30 s), and give up after `max_tries` failed starts in a row (0:
 * never give up), one log line per event. `pe` must outlive the watch.
 * Returns 0 or -1. */
int pg_embed_watch_start(pg_embed *pe, int max_tries);

/* pg_embed_watch_stop - stop watching (before pg_embed_stop). */
void pg_embed_watch_stop(void);

/* What the watch knows, for /api/v1/health and /metrics. */
typedef struct pg_embed_status {
    int watched;         /* 1 when lockstepd runs an embedded cluster and watches it */
    const char *state;   /* "up", "restarting", "failed" (gave up) */
    long restarts;       /* restarts that brought it back */
    long failures;       /* failed start attempts, in all */
    double last_restart; /* wall seconds of the last restart, 0: none */
} pg_embed_status;

/* pg_embed_status_get - a snapshot of the watch. */
void pg_embed_status_get(pg_embed_status *out);

#endif /* SERVER_STORE_PGEMBED_H */

/* db.c - PostgreSQL access for lockstepd: one libpq connection per thread, prepared statements, reconnects, migrations.
 */
#include "server/store/db.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/text.h"
#include "server/core/clock.h"
#include "server/core/error.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"

#define MAX_STATEMENTS 256
#define NAME_SLOTS 512 /* the statements' names by hash: a power of two, twice MAX_STATEMENTS */

static char *conninfo;
static struct {
    const char *name, *sql;
} statements[MAX_STATEMENTS];
static int n_statements;
static short by_name[NAME_SLOTS]; /* 1 + the statement's index, 0 for an empty slot */

/* A thread's connection and which statements it has prepared: each is prepared the first time the thread runs it
 * (a connection costs one round trip, not one per registered statement; db_prepare_all checks them all at start). */
typedef struct dbconn {
    PGconn *c;
    unsigned char ready[MAX_STATEMENTS / 8];
    double replan_at, replan_every; /* replan_due: when it next drops its plans (clock_mono_s), and the wait after */
} dbconn;
static pthread_key_t conn_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static atomic_long last_complaint;
static atomic_int unreachable; /* a connection failed or broke since the last one made */
static atomic_ulong comebacks; /* db_comebacks */
static char *read_conninfo;    /* db_init_reads: NULL when reads go to the primary */
static pthread_key_t read_key; /* this thread's connection to the read replica */
static __thread int t_reading; /* between db_reads_begin and db_reads_end */

static void conn_free(void *p)
{
    dbconn *d = p;
    PQfinish(d->c);
    free(d);
}

static void key_create(void)
{
    pthread_key_create(&conn_key, conn_free);
    pthread_key_create(&read_key, conn_free);
}

void db_init(const char *ci)
{
    free(conninfo);
    conninfo = xstrdup(ci);
    pthread_once(&key_once, key_create);
}

static unsigned name_hash(const char *s)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* stmt_index - the registered statement called `name`, or -1. */
static int stmt_index(const char *name)
{
    for (unsigned h = name_hash(name);; h++) {
        int k = by_name[h & (NAME_SLOTS - 1)] - 1;
        if (k < 0 || !strcmp(statements[k].name, name))
            return k;
    }
}

void db_register(const char *name, const char *sql)
{
    if (n_statements >= MAX_STATEMENTS) {
        log_error("too many prepared statements (%d); raise MAX_STATEMENTS", MAX_STATEMENTS);
        abort();
    }
    if (stmt_index(name) >= 0) {
        log_error("statement %s registered twice", name);
        abort();
    }
    statements[n_statements].name = name;
    statements[n_statements].sql = sql;
    unsigned h = name_hash(name);
    while (by_name[h & (NAME_SLOTS - 1)])
        h++;
    by_name[h & (NAME_SLOTS - 1)] = (short)(n_statements + 1);
    n_statements++;
}

static atomic_long suppressed;

void db_complain(const char *fmt, ...)
{
    long now = (long)time(NULL);
    long last = atomic_load(&last_complaint);
    if (now - last < DB_LOG_PERIOD_S || !atomic_compare_exchange_strong(&last_complaint, &last, now)) {
        atomic_fetch_add(&suppressed, 1);
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    long n = atomic_exchange(&suppressed, 0);
    if (n)
        log_error("%s (and %ld more database errors in the last %ld s)", msg, n, now - last);
    else
        log_error("%s", msg);
}

/* complain - a connection failure, logged as db_complain does. */
static void complain(const char *what, const char *msg)
{
    db_complain("%s: %s", what, msg);
}

/* on_replica - whether this thread's statements go to the read replica now (db_reads_begin, a replica configured
 * and not given up for this request). */
static int on_replica(void)
{
    return t_reading && read_conninfo;
}

/* current - this thread's connection as it is (NULL when none), without connecting. */
static dbconn *current(void)
{
    return pthread_getspecific(on_replica() ? read_key : conn_key);
}

/* connect_primary - a new connection to the primary, counting a comeback after a failure. NULL when unreachable. */
static PGconn *connect_primary(void)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        atomic_store(&unreachable, 1);
        metrics_db_error();
        complain("cannot connect to PostgreSQL", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    if (atomic_exchange(&unreachable, 0))
        atomic_fetch_add(&comebacks, 1);
    return c;
}

/* connect_replica - a new connection to the read replica; NULL when it cannot be reached, and then none is tried for
 * REPLICA_RETRY_S (reads go to the primary meanwhile: a replica that is down costs no connect per request). */
#define REPLICA_RETRY_S 5
static PGconn *connect_replica(void)
{
    static atomic_long given_up_at;
    long now = (long)time(NULL), at = atomic_load(&given_up_at);
    if (at && now - at < REPLICA_RETRY_S)
        return NULL;
    PGconn *c = PQconnectdb(read_conninfo);
    if (PQstatus(c) == CONNECTION_OK) {
        atomic_store(&given_up_at, 0);
        return c;
    }
    atomic_store(&given_up_at, now);
    complain("cannot connect to the read replica (reads go to the primary meanwhile)", PQerrorMessage(c));
    PQfinish(c);
    return NULL;
}

/* SESSION_SETTINGS - what every connection of lockstepd's pool sets once made. JIT off: lockstepd's statements are
 * short, but PostgreSQL's estimates for the larger reads pass jit_above_cost, and compiling them cost far more than
 * running them (the twin status read of a group of 10,000 ranks: 1.56 s of JIT in 1.68 s; 92 ms without). */
#define SESSION_SETTINGS "SET jit = off"

/* session_set - SESSION_SETTINGS on new connection `c`; a failure is only logged (the statements work without). */
static void session_set(PGconn *c)
{
    PGresult *r = PQexec(c, SESSION_SETTINGS);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        complain("cannot apply lockstepd's session settings (" SESSION_SETTINGS ")", PQerrorMessage(c));
    PQclear(r);
}

/* Plans made on small tables are made again as the tables grow. lockstepd's functions keep their plans
 * (plan_cache_mode, sql/functions/compare.sql), and PostgreSQL makes a kept plan from what it knows of the tables at
 * a session's first call: on a fresh database, tables analyzed empty, for which a hash over a sequential scan is
 * the cheapest plan, kept until PostgreSQL analyzes them again (docs/scale.md, "Series segments compressed": a
 * read of group_checks at 40 ms a group of batches against 3 ms, the marks of memory's comparison at 21 ms a call
 * against 7 ms). So each connection drops its plans (DISCARD PLANS: prepared statements stay prepared) replan_first_s
 * after it was made, then after twice as long each time, REPLAN_MAX_S at most; PostgreSQL plans them again from the
 * tables' current sizes, analyzed or not. */
static double replan_first_s = 30;
#define REPLAN_MAX_S 3600.0

void db_replan_first(double seconds)
{
    replan_first_s = seconds;
}

/* replan_due - connection `d`'s plans dropped when their time has come and it is not inside a transaction (a failure
 * only waits for the next time). */
static void replan_due(dbconn *d)
{
    double now = clock_mono_s();
    if (now < d->replan_at || PQtransactionStatus(d->c) != PQTRANS_IDLE)
        return;
    PQclear(PQexec(d->c, "DISCARD PLANS"));
    d->replan_every = d->replan_every * 2 < REPLAN_MAX_S ? d->replan_every * 2 : REPLAN_MAX_S;
    d->replan_at = now + d->replan_every;
}

static dbconn *this_conn(void)
{
    pthread_once(&key_once, key_create);
    dbconn *d = current();
    if (d && PQstatus(d->c) == CONNECTION_OK) {
        replan_due(d);
        return d;
    }
    int replica = on_replica();
    pthread_key_t key = replica ? read_key : conn_key;
    if (d) {
        if (!replica)
            atomic_store(&unreachable, 1);
        conn_free(d);
        pthread_setspecific(key, NULL);
    }
    PGconn *c = replica ? connect_replica() : connect_primary();
    if (!c && replica) {
        t_reading = 0; /* this request reads from the primary */
        return this_conn();
    }
    if (!c)
        return NULL;
    session_set(c);
    d = xcalloc(1, sizeof(*d));
    d->c = c;
    d->replan_every = replan_first_s;
    d->replan_at = clock_mono_s() + replan_first_s;
    pthread_setspecific(key, d);
    return d;
}

/* READ_CONNECT_TIMEOUT_S - how long an HTTP thread waits to connect to a read replica that names no
 * connect_timeout of its own: a replica host that drops packets must not hold the threads that answer reads for
 * the minutes a TCP connect may take. */
#define READ_CONNECT_TIMEOUT_S "3"

void db_init_reads(const char *ci)
{
    free(read_conninfo);
    read_conninfo = NULL;
    pthread_once(&key_once, key_create);
    if (!ci || !ci[0])
        return;
    PQconninfoOption *opts = PQconninfoParse(ci, NULL);
    int has_timeout = !opts; /* a conninfo libpq cannot parse is left for its connect to say why */
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (!strcmp(o->keyword, "connect_timeout") && o->val && o->val[0])
            has_timeout = 1;
    PQconninfoFree(opts);
    if (has_timeout) {
        read_conninfo = xstrdup(ci);
        return;
    }
    /* a URL takes it as a query parameter, a key = value string as one more pair */
    int url = !strncmp(ci, "postgresql://", 13) || !strncmp(ci, "postgres://", 11);
    size_t n = strlen(ci) + 40;
    read_conninfo = xcalloc(1, n);
    snprintf(read_conninfo, n,
             "%s%s"
             "connect_timeout=" READ_CONNECT_TIMEOUT_S,
             ci,
             !url              ? " "
             : strchr(ci, '?') ? "&"
                               : "?");
}

int db_reads_begin(void)
{
    t_reading = read_conninfo != NULL;
    return t_reading && this_conn() && on_replica();
}

int db_reads_configured(void)
{
    return read_conninfo != NULL;
}

void db_reads_end(void)
{
    t_reading = 0;
}

int db_reads_on_replica(void)
{
    return on_replica();
}

/* The replica's lag, as the standby itself sees it: none when it has replayed all it received and still receives,
 * else the age of the last transaction it replayed (what a reader misses is at most that old). */
#define LAG_SQL                                                                                                        \
    "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0 "                                                                 \
    "WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver "        \
    "WHERE status = 'streaming') THEN 0 "                                                                              \
    "ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) END"

double db_read_lag(void)
{
    static __thread double lag = -1, at;
    if (!on_replica())
        return -1;
    double now = (double)time(NULL);
    if (at && now - at < 1)
        return lag;
    dbconn *d = this_conn();
    if (!d || !on_replica())
        return -1;
    PGresult *r = PQexec(d->c, LAG_SQL);
    lag = PQresultStatus(r) == PGRES_TUPLES_OK && !PQgetisnull(r, 0, 0) ? atof(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    /* only a known lag is kept for the second: a standby that has replayed nothing yet (no transaction time) may
     * replay the next moment, and a read that then shows what it replayed says how far behind it is */
    at = lag >= 0 ? now : 0;
    return lag;
}

unsigned long db_comebacks(void)
{
    return atomic_load(&comebacks);
}

PGconn *db_conn(void)
{
    dbconn *d = this_conn();
    return d ? d->c : NULL;
}

/* prepare - statement k on `d`, unless it is already. 0, or -1 with the server's message in `err`. */
static int prepare(dbconn *d, int k, char *err, size_t cap)
{
    if (d->ready[k / 8] & (1u << (k % 8)))
        return 0;
    PGresult *r = PQprepare(d->c, statements[k].name, statements[k].sql, 0, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    db_note_outcome(r);
    if (ok)
        d->ready[k / 8] |= (unsigned char)(1u << (k % 8));
    else if (err)
        snprintf(err, cap, "cannot prepare statement %s: %s", statements[k].name,
                 r ? PQresultErrorMessage(r) : PQerrorMessage(d->c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* registered - the index of statement `stmt`; a name never registered is a bug of the caller's and aborts. */
static int registered(const char *stmt)
{
    int k = stmt_index(stmt);
    if (k < 0) {
        log_error("statement %s was never registered", stmt);
        abort();
    }
    return k;
}

PGconn *db_prepared(const char *stmt, char *err, size_t cap)
{
    int k = registered(stmt);
    dbconn *d = this_conn();
    if (!d) {
        if (err)
            snprintf(err, cap, "the database is unreachable");
        return NULL;
    }
    return prepare(d, k, err, cap) == 0 ? d->c : NULL;
}

int db_prepare_all(char *err, size_t cap)
{
    dbconn *d = this_conn();
    if (!d) {
        snprintf(err, cap, "the database is unreachable");
        return -1;
    }
    for (int k = 0; k < n_statements; k++)
        if (prepare(d, k, err, cap) < 0)
            return -1;
    return 0;
}

void db_conn_broken(void)
{
    dbconn *d = current();
    if (!d)
        return;
    PGconn *c = d->c;
    /* A failed transaction leaves the session usable once rolled back. */
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_UNKNOWN) {
        if (PQtransactionStatus(c) != PQTRANS_IDLE) {
            PGresult *r = PQexec(c, "ROLLBACK");
            PQclear(r);
        }
        if (PQstatus(c) == CONNECTION_OK)
            return;
    }
    int replica = on_replica();
    if (!replica)
        atomic_store(&unreachable, 1);
    conn_free(d);
    pthread_setspecific(replica ? read_key : conn_key, NULL);
}

int db_ok(const PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
}

/* run - statement `stmt` (prepared on this connection first, when it is not yet) or plain `sql` on this thread's
 * connection. The result, or NULL with the reason in `why` (the connection is left as it is). */
/* The SQLSTATE of this thread's last failed statement, "" after a success (db_conflicted). */
static __thread char t_sqlstate[6];

void db_note_outcome(const PGresult *r)
{
    const char *state = db_ok(r) || !r ? NULL : PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(t_sqlstate, sizeof(t_sqlstate), "%s", state ? state : "");
}

int db_conflicted(void)
{
    return !strcmp(t_sqlstate, "40001") || !strcmp(t_sqlstate, "40P01");
}

/* trim_message - drop the newline and blanks libpq ends an error message with. */
static void trim_message(char *m)
{
    size_t l = strlen(m);
    while (l && (m[l - 1] == '\n' || m[l - 1] == ' '))
        m[--l] = 0;
}

static PGresult *run(dbconn *d, const char *stmt, const char *sql, int n, const char *const *params, int binary,
                     char *why, size_t cap)
{
    PGresult *r = NULL;
    if (!stmt)
        r = PQexec(d->c, sql);
    else if (prepare(d, registered(stmt), why, cap) == 0)
        r = PQexecPrepared(d->c, stmt, n, params, NULL, NULL, binary);
    else
        return NULL;
    db_note_outcome(r);
    if (db_ok(r))
        return r;
    snprintf(why, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(d->c));
    trim_message(why);
    PQclear(r);
    return NULL;
}

static PGresult *exec_retry(const char *stmt, const char *sql, int n, const char *const *params, int binary, char *err,
                            size_t cap)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        dbconn *d = this_conn();
        if (!d) {
            if (err)
                snprintf(err, cap, "the database is unreachable");
            return NULL;
        }
        PGconn *c = d->c;
        /* Inside a transaction a second attempt would run on a new session, outside it (and outside its
         * locks): the first failure is the answer then. */
        if (attempt == 0 && PQtransactionStatus(c) != PQTRANS_IDLE)
            attempt = 1;
        char why[512];
        PGresult *r = run(d, stmt, sql, n, params, binary, why, sizeof(why));
        if (r)
            return r;
        if (on_replica() && !strcmp(t_sqlstate, "25006") && PQtransactionStatus(c) == PQTRANS_IDLE) {
            /* a read route that writes: a replica cannot take it, the primary can (and the route should not be
             * marked as a read, server/http/route.h) */
            log_warn("statement %s writes and cannot run on the read replica; this request goes on on the primary",
                     stmt ? stmt : "(sql)");
            t_reading = 0;
            attempt--;
            continue;
        }
        metrics_db_error();
        if (err)
            snprintf(err, cap, "%s", why);
        int broken = PQstatus(c) != CONNECTION_OK;
        if (!broken || attempt == 1)
            db_complain("query %s failed: %s", stmt ? stmt : "(sql)", why);
        db_conn_broken();
        if (!broken)
            return NULL;
    }
    return NULL;
}

PGresult *db_exec(const char *stmt, int n, const char *const *params, char *err, size_t cap)
{
    return exec_retry(stmt, NULL, n, params, 0, err, cap);
}

PGresult *db_exec_bin(const char *stmt, int n, const char *const *params, char *err, size_t cap)
{
    return exec_retry(stmt, NULL, n, params, 1, err, cap);
}

PGresult *db_exec_once(const char *stmt, int n, const char *const *params, char *err, size_t cap)
{
    dbconn *d = this_conn();
    if (!d) {
        if (err)
            snprintf(err, cap, "the database is unreachable");
        return NULL;
    }
    PGconn *c = d->c;
    char why[512];
    PGresult *r = run(d, stmt, NULL, n, params, 0, why, sizeof(why));
    if (r)
        return r;
    metrics_db_error();
    if (err)
        snprintf(err, cap, "%s", why);
    db_complain("query %s failed: %s", stmt, why);
    if (PQstatus(c) != CONNECTION_OK)
        db_conn_broken();
    return NULL;
}

int db_do(const char *stmt, int n, const char *const *params, char *err, size_t cap)
{
    PGresult *r = db_exec_once(stmt, n, params, err, cap);
    PQclear(r);
    return r ? 0 : -1;
}

static int simple(const char *sql, char *err, size_t cap)
{
    PGconn *c = db_conn();
    if (!c) {
        if (err)
            snprintf(err, cap, "the database is unreachable");
        return -1;
    }
    PGresult *r = PQexec(c, sql);
    int ok = db_ok(r);
    db_note_outcome(r);
    if (!ok) {
        metrics_db_error();
        if (err)
            snprintf(err, cap, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    }
    PQclear(r);
    if (!ok && PQstatus(c) != CONNECTION_OK)
        db_conn_broken();
    return ok ? 0 : -1;
}

int db_begin(char *err, size_t cap)
{
    return simple("BEGIN", err, cap);
}

int db_commit(char *err, size_t cap)
{
    return simple("COMMIT", err, cap);
}

int db_snapshot_begin(char *err, size_t cap)
{
    PGconn *c = db_conn();
    if (c && PQtransactionStatus(c) != PQTRANS_IDLE)
        return 0;
    return simple("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err, cap) < 0 ? -1 : 1;
}

void db_rollback(void)
{
    dbconn *d = current();
    if (d && PQstatus(d->c) == CONNECTION_OK && PQtransactionStatus(d->c) != PQTRANS_IDLE)
        PQclear(PQexec(d->c, "ROLLBACK"));
}

int db_ping(char *err, size_t cap)
{
    PGresult *r = exec_retry(NULL, "SELECT 1", 0, NULL, 0, err, cap);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int db_listen(const char *channel, char *err, size_t cap)
{
    if (!*channel || strspn(channel, "abcdefghijklmnopqrstuvwxyz_") != strlen(channel) || strlen(channel) > 63) {
        snprintf(err, cap, "not a channel name: %.80s", channel);
        return -1;
    }
    char sql[96];
    snprintf(sql, sizeof(sql), "LISTEN %s", channel);
    PGresult *r = exec_retry(NULL, sql, 0, NULL, 0, err, cap);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

char *db_int_array_text(const int *v, int n, char *out, size_t cap)
{
    size_t l = (size_t)snprintf(out, cap, "{");
    for (int i = 0; i < n && l + 14 < cap; i++)
        l += (size_t)snprintf(out + l, cap - l, "%s%d", i ? "," : "", v[i]);
    snprintf(out + l, cap - l, "}");
    return out;
}

int db_int_array_parse(const char *s, int64_t *out, int cap)
{
    int n = 0;
    while (*s && *s != '}') {
        if (*s == '{' || *s == ',') {
            s++;
            continue;
        }
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s)
            break;
        if (n < cap)
            out[n] = v;
        n++;
        s = end;
    }
    return n < cap ? n : cap;
}

int db_hex_parse(const char *s, unsigned char *out, size_t cap)
{
    if (s[0] == '\\' && s[1] == 'x')
        s += 2;
    size_t n = 0;
    for (; s[0]; s += 2, n++) {
        int hi = text_hex_digit(s[0]), lo = s[1] ? text_hex_digit(s[1]) : -1;
        if (hi < 0 || lo < 0 || n >= cap)
            return -1;
        out[n] = (unsigned char)(hi << 4 | lo);
    }
    return (int)n;
}

int db_fail(srv_error *e, const char *what, const char *msg)
{
    char detail[600];
    snprintf(detail, sizeof(detail), "%s: %s", what, msg);
    return srv_error_set(e, "database error", detail,
                         "retry later; if it persists, check PostgreSQL and the lockstepd log");
}

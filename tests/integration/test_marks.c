/* test_marks.c - lockstepd integration: the comparison's memory (server/twins/cmp_mem.c) and its leases
 * (server/peers/lease.c). Twins posting side by side are marked from memory while they run, a divergence is found at
 * its step and rank, a late batch is compared again, and batches that another lockstepd stored reach the memory of
 * the instance holding the group's lease (forwarded, server/peers/forward.c), or else the database's look: no false
 * match, no missed divergence. A rerun of a run that ended is compared with it in memory, its steps read from the
 * database. A rank's first mark comes from memory, as the look would write it; a run alone on a rank waits for its
 * twin that streams elsewhere. A mark whose rank is busy waits for the next flush. The holder killed, another instance
 * takes the lease over and finds what follows. The sweep's period follows what it takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/lsfp1.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv, other; /* `other`: a second lockstepd on the same database */

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    if (h_srv_start(&srv, args) < 0)
        return -1;
    return h_srv_start(&other, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = h_srv_kill(&srv, SIGTERM) | h_srv_kill(&other, SIGTERM);
    h_srv_cleanup(&srv);
    h_srv_cleanup(&other);
    h_pg_stop(&pg);
    return st == 0 ? 0 : -1;
}

/* query_group - the first value `sql` returns for group `group` and the number `num` ($1, $2), into `out`; "none"
 * when it returns no row (or fails). */
static void query_group(const char *sql, const char *group, long long num, char *out, size_t cap)
{
    char nb[24];
    snprintf(nb, sizeof(nb), "%lld", num);
    PGconn *c = PQconnectdb(pg.conninfo);
    const char *p[] = {group, nb};
    PGresult *r = PQexecParams(c, sql, 2, NULL, p, NULL, NULL, 0);
    snprintf(out, cap, "%s", PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? PQgetvalue(r, 0, 0) : "none");
    PQclear(r);
    PQfinish(c);
}

/* checked_to - how many ranks of `group` are checked through `step` (their check reached its target). */
static int checked_to(const char *group, long long step)
{
    char v[32];
    query_group("SELECT count(*) FROM group_checks WHERE twin_group = $1 AND rank >= 0 "
                "AND checked_upto >= $2::bigint AND checked_upto = target",
                group, step, v, sizeof(v));
    return strcmp(v, "none") ? atoi(v) : -1;
}

/* wait_checked - wait (10 s at most) until `ranks` ranks of `group` are checked through `step`; how many are. */
static int wait_checked(const char *group, int ranks, long long step)
{
    int v = -1;
    for (int i = 0; i < 200 && (v = checked_to(group, step)) < ranks; i++)
        usleep(50000);
    return v;
}

/* metric_sum - the sum of sample `name` over the `n` instances `s`. */
static double metric_sum(const h_srv *const *s, int n, const char *name)
{
    double v = 0;
    for (int i = 0; i < n; i++)
        v += it_metric(s[i], name, NULL);
    return v;
}

/* metric_of - lockstepd `s`'s sample `name`; with `s` NULL, the sum of srv's and other's: the memory that compares a
 * group is its lease holder's, and either may take the lease (the other's sweep can ask for it between a batch's
 * commit and the lease_mine that follows). */
static double metric_of(const h_srv *s, const char *name)
{
    const h_srv *pair[] = {&srv, &other};
    return s ? it_metric(s, name, NULL) : metric_sum(pair, 2, name);
}

/* metric_reaches - metric_of(s, name) once it reaches `min` (5 s at most): a flush counts what it did once it has
 * written it all, so what the database shows can lead the count. */
static double metric_reaches(const h_srv *s, const char *name, double min)
{
    double v = metric_of(s, name);
    for (int i = 0; i < 100 && v < min; i++) {
        usleep(50000);
        v = metric_of(s, name);
    }
    return v;
}

/* side_by_side - steps [first, first+n) of runs a and b, a batch a step on every rank, a then b, as twins running at
 * once post them; run b's rank `flip_rank` has record 2 of step `flip_step` flipped. Batch k of a rank is step k.
 * Every `via_other`-th step of run b goes through the other lockstepd (0: none). */
static void side_by_side(const char *a, const char *b, int ranks, int64_t first, int n, int flip_rank,
                         int64_t flip_step, int via_other)
{
    for (int64_t s = first; s < first + n; s++)
        for (int r = 0; r < ranks; r++) {
            uint64_t sa = (uint64_t)s * 10, sb = (uint64_t)s * 10;
            assert_int_equal(it_post_steps(&srv, a, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sa, NULL), 200);
            const h_srv *to = via_other && s % via_other == 0 ? &other : &srv;
            assert_int_equal(
                it_post_steps(to, b, r, (uint64_t)s, s, 1, 5, r == flip_rank ? flip_step : -1, 2, -1, -1, &sb, NULL),
                200);
        }
}

static void end_all(const char *a, const char *b, int ranks)
{
    for (int r = 0; r < ranks; r++) {
        assert_int_equal(it_end(&srv, a, r, NULL), 200);
        assert_int_equal(it_end(&srv, b, r, NULL), 200);
    }
}

/* expect_first - wait until `group` diverged (at `s`), and check its first divergence: the flipped record
 * ("layer2.out") of `step` on `rank`, the one rank that differs. */
static void expect_first(const h_srv *s, const char *group, int64_t step, int rank)
{
    json_t *o = it_wait_group(s, group, "diverged");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), step);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), rank);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "layer2.out");
    assert_int_equal(json_array_size(json_object_get(o, "per_rank")), 1);
    json_decref(o);
}

/* Twins running side by side are marked from memory while they run (the marks trail the runs by a step), and
 * match once they end. */
static void test_marked_from_memory(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "300", "m-run", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "301", "m-run", 4, 0, NULL, b), 0);
    double before = metric_of(NULL, "lockstepd_compare_memory_marked_total");
    side_by_side(a, b, 4, 0, 10, -1, -1, 0);
    assert_int_equal(wait_checked("m-run", 4, 8), 4);
    side_by_side(a, b, 4, 10, 30, -1, -1, 0);
    assert_int_equal(wait_checked("m-run", 4, 38), 4); /* step 39 is complete once a later one or the end comes */
    assert_true(metric_reaches(NULL, "lockstepd_compare_memory_marked_total", before + 1) > before);
    assert_true(metric_of(NULL, "lockstepd_compare_memory_run_ranks") >= 8);
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/m-run", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "pending"); /* still running */
    json_decref(o);
    end_all(a, b, 4);
    o = it_wait_group(&srv, "m-run", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
}

/* group_checks_row - rank `rank` of `group`'s mark as text ("checked_upto target members waiting"), or "none". */
static void group_checks_row(const char *group, int rank, char *out, size_t cap)
{
    query_group("SELECT concat_ws(' ', checked_upto, target, members::text, waiting) FROM group_checks "
                "WHERE twin_group = $1 AND rank = $2::int",
                group, rank, out, cap);
}

/* sql_ok - run `sql` on the test's database; 0 when it succeeded. */
static int sql_ok(const char *sql)
{
    PGconn *c = PQconnectdb(pg.conninfo);
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

/* A rank's first mark comes from memory when the members rule keeps every run of the group there (no look at all),
 * and it is the mark the look writes on the same data: the same steps, members and waiting. While run b has not
 * reached a rank yet, run a alone there waits for it (b streams to the other ranks): no look marks it waiting, and
 * the sweep for lost notices leaves it to memory (which counted all its records). */
static void test_first_mark_from_memory(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "305", "m-first", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "306", "m-first", 4, 0, NULL, b), 0);
    const char *refused = "lockstepd_compare_memory_handed_total{reason=\"refused\"}";
    const char *one_run = "lockstepd_compare_memory_handed_total{reason=\"one_run\"}";
    double refused0 = metric_of(NULL, refused), one0 = metric_of(NULL, one_run);
    assert_true(refused0 >= 0 && one0 >= 0);
    for (int64_t s = 0; s < 6; s++) { /* b on ranks 0-1 only, a on all four, at a stream's pace */
        for (int r = 0; r < 4; r++) {
            uint64_t sa = (uint64_t)s * 10, sb = (uint64_t)s * 10;
            if (r < 2)
                assert_int_equal(it_post_steps(&srv, b, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sb, NULL), 200);
            assert_int_equal(it_post_steps(&srv, a, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sa, NULL), 200);
        }
        usleep(100000);
    }
    assert_int_equal(wait_checked("m-first", 2, 4), 2);
    sleep(7); /* past a sweep for lost notices (SWEEP_S, 5 s: server/twins/compare.c) */
    char row[256];
    for (int r = 2; r < 4; r++) {
        group_checks_row("m-first", r, row, sizeof(row));
        assert_string_equal(row, "none"); /* waits for b: not looked at */
    }
    for (int64_t s = 0; s < 6; s++) /* b reaches ranks 2-3 */
        for (int r = 2; r < 4; r++) {
            uint64_t sb = (uint64_t)s * 10;
            assert_int_equal(it_post_steps(&srv, b, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sb, NULL), 200);
        }
    assert_int_equal(wait_checked("m-first", 4, 4), 4);
    assert_true(metric_of(NULL, refused) == refused0); /* every first mark was memory's */
    assert_true(metric_of(NULL, one_run) == one0);
    char mem[4][256], look[256];
    for (int r = 0; r < 4; r++)
        group_checks_row("m-first", r, mem[r], sizeof(mem[r]));
    /* the look's marks on the same data (no batch comes now), in place of memory's */
    assert_int_equal(sql_ok("DELETE FROM group_checks WHERE twin_group = 'm-first'"), 0);
    assert_int_equal(sql_ok("SELECT * FROM lockstep_cmp_ranks('m-first', '{0,1,2,3}', 64)"), 0);
    for (int r = 0; r < 4; r++) {
        group_checks_row("m-first", r, look, sizeof(look));
        assert_string_equal(mem[r], look);
    }
    end_all(a, b, 4);
    json_t *o = it_wait_group(&srv, "m-first", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
}

/* A step that differs in memory goes to the look (counted as handed, reason "differ"), which finds the record: its
 * step, rank and name, while the runs still run; the steps before it on the other ranks go on being marked. */
static void test_divergence_from_memory(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "310", "m-div", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "311", "m-div", 4, 0, NULL, b), 0);
    const char *differ = "lockstepd_compare_memory_handed_total{reason=\"differ\"}"; /* the step that differs */
    double handed = metric_of(NULL, differ);
    assert_true(handed >= 0);
    for (int64_t s = 0; s < 30; s++) { /* at a stream's pace: memory compares at its flushes */
        side_by_side(a, b, 4, s, 1, 1, 21, 0);
        usleep(20000);
    }
    expect_first(&srv, "m-div", 21, 1);
    /* counted by the flush after the look that found it (the same thread: a look may keep the flush waiting) */
    assert_true(metric_reaches(NULL, differ, handed + 1) > handed);
    end_all(a, b, 4);
    json_t *o = it_wait_group(&srv, "m-div", "diverged");
    assert_int_equal(json_array_size(json_object_get(o, "per_rank")), 1); /* the other ranks match */
    json_decref(o);
}

/* A mark whose rank's lock is busy (here a session holds it, shared, as a committing batch does) is put off to
 * memory's next flush, not handed to the look at once; after MEM_RETRIES flushes in a row it goes to the look (which
 * cannot take the lock either, and leaves the rank). Once the lock is free, the rank is marked and the twins match. */
static void test_busy_mark_put_off(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "315", "m-busy", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "316", "m-busy", 2, 0, NULL, b), 0);
    const char *busy = "lockstepd_compare_memory_put_off_total{reason=\"busy\"}",
               *refused = "lockstepd_compare_memory_handed_total{reason=\"refused\"}";
    for (int64_t s = 0; s < 5; s++) { /* both ranks marked from memory: the group's first marks are behind it */
        side_by_side(a, b, 2, s, 1, -1, -1, 0);
        usleep(50000);
    }
    assert_int_equal(wait_checked("m-busy", 2, 3), 2);
    PGconn *c = PQconnectdb(pg.conninfo);
    PGresult *r = PQexec(c, "SELECT pg_advisory_lock_shared(lockstep_check_key('m-busy', 1))");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    double busy0 = metric_of(NULL, busy), refused0 = metric_of(NULL, refused);
    assert_true(busy0 >= 0 && refused0 >= 0);
    for (int64_t s = 5; s < 25; s++) { /* 2 s at a stream's pace: 8 flushes */
        side_by_side(a, b, 2, s, 1, -1, -1, 0);
        usleep(100000);
    }
    assert_int_equal(wait_checked("m-busy", 1, 23), 1); /* rank 0 goes on */
    assert_int_equal(checked_to("m-busy", 5), 1);       /* rank 1 is not marked while its lock is held */
    assert_true(metric_reaches(NULL, busy, busy0 + 4) >= busy0 + 4);
    assert_true(metric_reaches(NULL, refused, refused0 + 1) >= refused0 + 1); /* put off 4 times in a row: the look */
    r = PQexec(c, "SELECT pg_advisory_unlock_shared(lockstep_check_key('m-busy', 1))");
    PQclear(r);
    PQfinish(c);
    for (int64_t s = 25; s < 30; s++) {
        side_by_side(a, b, 2, s, 1, -1, -1, 0);
        usleep(50000);
    }
    assert_int_equal(wait_checked("m-busy", 2, 28), 2);
    end_all(a, b, 2);
    json_t *o = it_wait_group(&srv, "m-busy", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
}

/* post_late - one more record of `step`, "late.out", for `rank` of run `run`, as batch `bseq`. */
static long post_late(const char *run, int rank, uint64_t bseq, int64_t step)
{
    h_batch bt = {0};
    h_batch_begin(&bt, run, (uint32_t)rank, bseq);
    double v = 1.5;
    rec_record r = {.seq = 5000,
                    .step = step,
                    .level = LS_LEVEL_METRIC,
                    .dtype = LS_F64,
                    .nbytes = 8,
                    .flags = REC_HAS_VALUE,
                    .name = "late.out",
                    .name_len = 8};
    memcpy(&r.value, &v, 8);
    r.fp = fp_lsfp1(&v, 8);
    h_batch_add(&bt, &r);
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, run);
    long code = h_http("POST", url, "application/x-lockstep", bt.buf, bt.len, NULL, NULL);
    h_batch_free(&bt);
    return code;
}

/* A batch that brings records of a step memory already marked moves the mark back: the step is compared again and
 * its difference found. */
static void test_late_batch(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "320", "m-late", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "321", "m-late", 2, 0, NULL, b), 0);
    side_by_side(a, b, 2, 0, 20, -1, -1, 0);
    assert_int_equal(wait_checked("m-late", 2, 18), 2);
    assert_int_equal(post_late(b, 1, 100, 5), 200);
    json_t *o = it_wait_group(&srv, "m-late", "diverged");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 5);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 1);
    json_decref(o);
}

/* Run b's batches split between two lockstepd (the one that does not hold the group's lease forwards them to the
 * one that does; a memory that misses some leaves the rank to the look): the one divergence is found, and the
 * matching ranks match at the end. */
static void test_batches_through_two(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "330", "m-two", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "331", "m-two", 4, 0, NULL, b), 0);
    side_by_side(a, b, 4, 0, 30, 3, 17, 3);
    json_t *o = it_wait_group(&srv, "m-two", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 17);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 3);
    json_decref(o);
    end_all(a, b, 4);
    assert_int_equal(wait_checked("m-two", 4, 29), 4); /* every rank compared to its end */
    o = it_wait_group(&srv, "m-two", "diverged");
    assert_int_equal(json_array_size(json_object_get(o, "per_rank")), 1);
    json_decref(o);
    /* a matching pair through both: match, never diverged */
    char c[40], d[40];
    assert_int_equal(it_register(&srv, "332", "m-two-ok", 2, 0, NULL, c), 0);
    assert_int_equal(it_register(&srv, "333", "m-two-ok", 2, 0, NULL, d), 0);
    side_by_side(c, d, 2, 0, 25, -1, -1, 2);
    end_all(c, d, 2);
    o = it_wait_group(&srv, "m-two-ok", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
}

/* sql_text - the first value of a one-row query on the test's database ("" when none); in `out`. */
static const char *sql_text(const char *sql, const char *param, char *out, size_t cap)
{
    PGconn *c = PQconnectdb(pg.conninfo);
    const char *p[] = {param};
    PGresult *r = PQexecParams(c, sql, param ? 1 : 0, NULL, param ? p : NULL, NULL, NULL, 0);
    snprintf(out, cap, "%s",
             PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0)
                                                                                                : "");
    PQclear(r);
    PQfinish(c);
    return out;
}

/* holder_of - which of `n` instances holds `group`'s lease (their names end in their port: each is started on a
 * port of its own); -1 when none does. */
static int holder_of(const char *group, h_srv *const *s, int n)
{
    char owner[200];
    sql_text("SELECT owner FROM group_leases WHERE twin_group = $1 AND expires_at > now()", group, owner,
             sizeof(owner));
    for (int i = 0; i < n; i++) {
        char tail[32];
        snprintf(tail, sizeof(tail), ":%d", s[i]->port);
        size_t lo = strlen(owner), lt = strlen(tail);
        if (lo > lt && !strcmp(owner + lo - lt, tail))
            return i;
    }
    return -1;
}

/* run_alone - steps [first, first+n) of run `run` on every rank, a batch a step; rank `flip_rank` has record 2 of
 * step `flip_step` flipped. */
static void run_alone(const char *run, int ranks, int64_t first, int n, int flip_rank, int64_t flip_step)
{
    for (int64_t s = first; s < first + n; s++)
        for (int r = 0; r < ranks; r++) {
            uint64_t sq = (uint64_t)s * 10;
            assert_int_equal(it_post_steps(&srv, run, r, (uint64_t)s, s, 1, 5, r == flip_rank ? flip_step : -1, 2, -1,
                                           -1, &sq, NULL),
                             200);
        }
}

/* restart - stop lockstepd and start it again on the same database: its memory holds nothing (as two minutes after
 * a group's last batch). */
static void restart(void)
{
    assert_int_equal(h_srv_kill(&srv, SIGTERM), 0);
    h_srv_cleanup(&srv);
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&srv, args), 0);
}

/* A rerun of a run that ended before this lockstepd's memory held it (its reference): memory reads the reference's
 * steps from PostgreSQL as the rerun's batches come, so the rerun is marked from memory while it runs (no look a
 * batch), and a divergence is found at its step and rank before the rerun ends. */
static void test_rerun_from_memory(void **state)
{
    (void)state;
    char a[40], b[40], c[40];
    assert_int_equal(it_register(&srv, "360", "m-rerun", 4, 0, NULL, a), 0);
    run_alone(a, 4, 0, 30, -1, -1);
    for (int r = 0; r < 4; r++)
        assert_int_equal(it_end(&srv, a, r, NULL), 200);
    restart(); /* then the counters start from 0 */
    const char *one_run = "lockstepd_compare_memory_handed_total{reason=\"one_run\"}";
    double read = metric_of(NULL, "lockstepd_compare_memory_read_total");
    double marked = metric_of(NULL, "lockstepd_compare_memory_marked_total");
    double alone = metric_of(NULL, one_run);
    assert_int_equal(it_register(&srv, "361", "m-rerun", 4, 0, NULL, b), 0);
    for (int64_t s = 0; s < 20; s++) { /* a step at a time, as a run streams, so that memory sees each */
        run_alone(b, 4, s, 1, -1, -1);
        usleep(100000);
    }
    assert_int_equal(wait_checked("m-rerun", 4, 18), 4);
    assert_true(metric_reaches(NULL, "lockstepd_compare_memory_read_total", read + 4 * 15) >= read + 4 * 15);
    assert_true(metric_reaches(NULL, "lockstepd_compare_memory_marked_total", marked + 4 * 2) >= marked + 4 * 2);
    assert_true(metric_of(NULL, one_run) == alone); /* the reference was found for every rank */
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/m-rerun", NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "pending");
    json_decref(o);
    run_alone(b, 4, 20, 10, -1, -1);
    for (int r = 0; r < 4; r++)
        assert_int_equal(it_end(&srv, b, r, NULL), 200);
    o = it_wait_group(&srv, "m-rerun", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);

    /* a rerun that differs at step 12 on rank 3 */
    assert_int_equal(it_register(&srv, "362", "m-rerun-div", 4, 0, NULL, a), 0);
    run_alone(a, 4, 0, 30, -1, -1);
    for (int r = 0; r < 4; r++)
        assert_int_equal(it_end(&srv, a, r, NULL), 200);
    restart();
    assert_int_equal(it_register(&srv, "363", "m-rerun-div", 4, 0, NULL, c), 0);
    for (int64_t s = 0; s < 20; s++) {
        run_alone(c, 4, s, 1, 3, 12);
        usleep(20000);
    }
    expect_first(&srv, "m-rerun-div", 12, 3);
    assert_true(wait_checked("m-rerun-div", 3, 18) >= 3); /* the other ranks go on being marked */
}

/* Run b's batches split between two lockstepd: one holds the group's lease, the other forwards it each batch's step
 * sums, so the holder's memory holds the whole runs and marks them while they run; the divergence is found at its
 * step and rank. */
static void test_lease_one_holder(void **state)
{
    (void)state;
    h_srv *both[] = {&srv, &other};
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "340", "m-lease", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "341", "m-lease", 4, 0, NULL, b), 0);
    side_by_side(a, b, 4, 0, 2, -1, -1, 2);
    int h = holder_of("m-lease", both, 2);
    assert_true(h >= 0);
    const h_srv *holder = both[h], *fwd = both[1 - h];
    double marked = metric_of(holder, "lockstepd_compare_memory_marked_total");
    double sent = it_metric(fwd, "lockstepd_compare_forwarded_total", NULL);
    double got = it_metric(holder, "lockstepd_compare_forward_received_total", NULL);
    for (int64_t s = 2; s < 30; s++) { /* every other step of run b through the other lockstepd, at a stream's pace
                                          (memory marks at its flushes, every 250 ms) */
        side_by_side(a, b, 4, s, 1, 2, 21, 2);
        usleep(40000);
    }
    assert_int_equal(wait_checked("m-lease", 4, 19), 4); /* marked while the runs are still running */
    json_t *o = it_wait_group(&srv, "m-lease", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 21);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 2);
    json_decref(o);
    assert_true(it_metric(fwd, "lockstepd_compare_forwarded_total", NULL) >= sent + 4 * 14);
    assert_true(it_metric(holder, "lockstepd_compare_forward_received_total", NULL) >= got + 4 * 14);
    assert_true(metric_reaches(holder, "lockstepd_compare_memory_marked_total", marked + 1) > marked);
    assert_int_equal(it_metric(holder, "lockstepd_compare_leases", NULL) >= 1, 1);
    assert_int_equal(holder_of("m-lease", both, 2), h); /* renewed, never moved */
    end_all(a, b, 4);
    assert_int_equal(wait_checked("m-lease", 4, 29), 4);
}

/* The holder killed (kill -9) while its twins run: the lease expires (2 s here), another instance (any of the
 * three left on the database) takes it over and finds the divergence that comes after; a lockstepd that stops gives
 * its leases back. */
static void test_lease_takeover(void **state)
{
    (void)state;
    h_srv x, y;
    const char *args[] = {"--db", pg.conninfo, "--lease-s", "2", NULL};
    assert_int_equal(h_srv_start(&x, args), 0);
    assert_int_equal(h_srv_start(&y, args), 0);
    h_srv *all[] = {&x, &y, &srv, &other};
    char a[40], b[40];
    assert_int_equal(it_register(&x, "350", "m-take", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&x, "351", "m-take", 2, 0, NULL, b), 0);
    for (int64_t s = 0; s < 10; s++)
        for (int r = 0; r < 2; r++) {
            uint64_t sa = (uint64_t)s * 10, sb = (uint64_t)s * 10;
            assert_int_equal(it_post_steps(&x, a, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sa, NULL), 200);
            assert_int_equal(it_post_steps(&y, b, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sb, NULL), 200);
        }
    int h = holder_of("m-take", all, 2); /* x's first batch took it, or y's */
    assert_true(h >= 0);
    h_srv *dead = all[h], *live = all[1 - h];
    const h_srv *alive[] = {live, &srv, &other};
    double took = metric_sum(alive, 3, "lockstepd_compare_lease_takeovers_total");
    assert_int_equal(h_srv_kill(dead, SIGKILL), 128 + SIGKILL);
    double t0 = h_now();
    for (int64_t s = 10; s < 30; s++)
        for (int r = 0; r < 2; r++) {
            uint64_t sa = (uint64_t)s * 10, sb = (uint64_t)s * 10;
            assert_int_equal(it_post_steps(live, a, r, (uint64_t)s, s, 1, 5, -1, -1, -1, -1, &sa, NULL), 200);
            assert_int_equal(it_post_steps(live, b, r, (uint64_t)s, s, 1, 5, r == 1 ? 24 : -1, 2, -1, -1, &sb, NULL),
                             200);
        }
    json_t *o = it_wait_group(live, "m-take", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 24);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 1);
    json_decref(o);
    printf("divergence found %.1f s after the lease's holder was killed\n", h_now() - t0);
    int now_h = -1;
    for (int i = 0; i < 100 && ((now_h = holder_of("m-take", all, 4)) < 0 || now_h == h); i++)
        usleep(100000);
    assert_true(now_h >= 0 && now_h != h);
    double took_after = metric_sum(alive, 3, "lockstepd_compare_lease_takeovers_total");
    assert_true(took_after >= took + 1);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(it_end(live, a, r, NULL), 200);
        assert_int_equal(it_end(live, b, r, NULL), 200);
    }
    assert_int_equal(wait_checked("m-take", 2, 29), 2);
    /* a lockstepd that stops gives its leases back */
    char me[24], n[24];
    snprintf(me, sizeof(me), "%%:%d", live->port);
    assert_int_equal(h_srv_kill(live, SIGTERM), 0);
    assert_string_equal(sql_text("SELECT count(*) FROM group_leases WHERE owner LIKE $1", me, n, sizeof(n)), "0");
    h_srv_cleanup(&x);
    h_srv_cleanup(&y);
}

/* A rank whose check is older than the end of a run of its group is unchecked to the twin status (a "match" would
 * claim the run's last step, which its end completes, was compared) until a look checks it again: the run's end asks
 * for every rank, and when that look finds the rank's lock taken (memory's flush holds it, and may write nothing),
 * the sweep for lost notices looks at it within its period. Here, once the looks the ends asked for are over (the
 * rank's check stays put), its check is set back behind run a's end (after the rank's own ends), as such a lost look
 * leaves it: the group is matched again, by a look at that rank. */
static void test_sweep_after_run_end(void **state)
{
    (void)state;
    char a[40], b[40], v[64], was[64] = "";
    assert_int_equal(it_register(&srv, "330", "m-end", 2, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "331", "m-end", 2, 0, NULL, b), 0);
    side_by_side(a, b, 2, 0, 6, -1, -1, 0);
    end_all(a, b, 2); /* rank 0 ends in both runs before rank 1 ends either run */
    json_t *o = it_wait_group(&srv, "m-end", "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
    static const char *checked_at =
        "SELECT checked_at::text FROM group_checks WHERE twin_group = $1 AND rank = $2::int";
    for (int i = 0; i < 20; i++) { /* until the check stays put for a second */
        query_group(checked_at, "m-end", 0, v, sizeof(v));
        if (!strcmp(v, was))
            break;
        snprintf(was, sizeof(was), "%s", v);
        sleep(1);
    }
    query_group("UPDATE group_checks SET checked_at = (SELECT max(e.ended_at) + interval '1 microsecond' "
                "FROM rank_ends e JOIN runs r USING (run_key) WHERE r.twin_group = $1 AND e.rank = $2::int) "
                "WHERE twin_group = $1 AND rank = $2::int AND checked_at > (SELECT max(ended_at) FROM runs "
                "WHERE twin_group = $1) RETURNING 1",
                "m-end", 0, v, sizeof(v));
    assert_string_equal(v, "1");               /* it was checked after the runs' ends, and is behind run a's end now */
    o = it_wait_group(&srv, "m-end", "match"); /* a sweep every 5 s: 10 s at most */
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
    query_group("SELECT count(*) FROM group_checks WHERE twin_group = $1 AND rank = $2::int AND checked_at > "
                "(SELECT max(ended_at) FROM runs WHERE twin_group = $1)",
                "m-end", 0, v, sizeof(v));
    assert_string_equal(v, "1"); /* looked at again */
}

/* The sweep for ranks no notice brought (server/twins/compare.c) runs every 5 s here: it takes far less than a
 * twentieth of that (a fleet's takes longer, and its period with it: at most a twentieth of a thread). */
static void test_sweep_paced(void **state)
{
    (void)state;
    double took = -1;
    for (int i = 0; i < 130 && (took = it_metric(&srv, "lockstepd_compare_sweep_seconds", NULL)) <= 0; i++)
        usleep(100000); /* a sweep every 5 s from the start, the first of them reads the backlog: not timed */
    assert_true(took > 0 && took < 0.25);
    assert_true(it_metric(&srv, "lockstepd_compare_sweep_period_seconds", NULL) == 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marked_from_memory),     cmocka_unit_test(test_first_mark_from_memory),
        cmocka_unit_test(test_divergence_from_memory), cmocka_unit_test(test_late_batch),
        cmocka_unit_test(test_batches_through_two),    cmocka_unit_test(test_lease_one_holder),
        cmocka_unit_test(test_lease_takeover),         cmocka_unit_test(test_rerun_from_memory),
        cmocka_unit_test(test_busy_mark_put_off),      cmocka_unit_test(test_sweep_paced),
        cmocka_unit_test(test_sweep_after_run_end),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_bundle.c - lockstepd integration: a bundle (application/x-lockstep-bundle), several ranks' batches of one run
 * in one request, as a node's relay posts them. Each batch is stored as if posted alone (once: a bundle sent again is
 * all duplicates), its reply is in the bundle's in its order, a batch that does not decode or belongs to no rank of
 * the run is refused alone while the others are stored, a bundle whose framing does not hold is refused whole with
 * nothing stored, twins posted as bundles are compared (a divergence is found at its step and rank), and hostile
 * bytes are answered without harm. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = h_srv_kill(&srv, SIGTERM);
    h_srv_cleanup(&srv);
    h_pg_stop(&pg);
    return st == 0 ? 0 : -1;
}

/* bundle_add - append `len` bytes of one batch to bundle `u`, after its 4-byte little-endian length. */
static void bundle_add(h_batch *u, const void *batch, size_t len)
{
    if (u->len + 4 + len > u->cap) {
        u->cap = 2 * (u->len + 4 + len);
        u->buf = realloc(u->buf, u->cap);
        assert_non_null(u->buf);
    }
    uint32_t n = (uint32_t)len;
    wire_bundle_len_put(u->buf + u->len, n);
    memcpy(u->buf + u->len + 4, batch, len);
    u->len += 4 + len;
}

/* bundle_steps - step `step` of ranks 0..ranks-1 of `run` (batch_seq = step, 5 records, it_batch_steps) in bundle
 * `u`; rank `flip_rank`'s record 2 of step `flip_step` flipped. */
static void bundle_steps(h_batch *u, const char *run, int ranks, int64_t step, int flip_rank, int64_t flip_step)
{
    u->len = 0;
    for (int r = 0; r < ranks; r++) {
        h_batch b = {0};
        uint64_t seq = (uint64_t)step * 10;
        it_batch_steps(&b, run, r, (uint64_t)step, step, 1, 5, r == flip_rank ? flip_step : -1, 2, -1, -1, &seq);
        bundle_add(u, b.buf, b.len);
        h_batch_free(&b);
    }
}

/* post_bundle - POST bundle `u` to run's records; the parsed reply in *out (NULL when none). */
static long post_bundle(const char *run, const h_batch *u, json_t **out)
{
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, run);
    char *resp = NULL;
    long code = h_http("POST", url, "application/x-lockstep-bundle", u->buf, u->len, NULL, &resp);
    *out = resp ? json_loads(resp, 0, NULL) : NULL;
    free(resp);
    return code;
}

/* count - a count(*) of the test's database, for run `run`. */
static long count(const char *sql, const char *run)
{
    PGconn *c = PQconnectdb(pg.conninfo);
    const char *p[] = {run};
    PGresult *r = PQexecParams(c, sql, 1, NULL, p, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return n;
}

static long batches_of(const char *run)
{
    return count("SELECT count(*) FROM batches b JOIN runs u USING (run_key) WHERE u.run_id = $1::uuid", run);
}

static long records_of(const char *run)
{
    return count("SELECT coalesce(sum(p.n_records), 0) FROM rank_progress p JOIN runs u USING (run_key) "
                 "WHERE u.run_id = $1::uuid",
                 run);
}

/* entry - the bundle reply's entry `i`, checked: its status and rank. */
static json_t *entry(json_t *o, size_t i, int status, int rank)
{
    json_t *e = json_array_get(json_object_get(o, "batches"), i);
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "status")), status);
    assert_int_equal(json_integer_value(json_object_get(e, "rank")), rank);
    return e;
}

/* Four ranks' batches in one request: each stored, its reply in order; the same bundle again stores nothing. */
static void test_bundle_stored_once(void **state)
{
    (void)state;
    char run[40];
    assert_int_equal(it_register(&srv, "700", NULL, 4, 0, NULL, run), 0);
    h_batch u = {0};
    bundle_steps(&u, run, 4, 0, -1, -1);
    json_t *o = NULL;
    assert_int_equal(post_bundle(run, &u, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "run_id")), run);
    assert_int_equal(json_array_size(json_object_get(o, "batches")), 4);
    for (int r = 0; r < 4; r++) {
        json_t *e = entry(o, (size_t)r, 200, r);
        assert_int_equal(json_integer_value(json_object_get(e, "stored")), 5);
        assert_false(json_is_true(json_object_get(e, "duplicate")));
    }
    json_decref(o);
    assert_int_equal(batches_of(run), 4);
    assert_int_equal(records_of(run), 20);
    assert_int_equal(post_bundle(run, &u, &o), 200); /* sent again, as a relay does when no reply came */
    for (int r = 0; r < 4; r++)
        assert_true(json_is_true(json_object_get(entry(o, (size_t)r, 200, r), "duplicate")));
    json_decref(o);
    assert_int_equal(batches_of(run), 4);
    assert_int_equal(records_of(run), 20);
    h_batch_free(&u);
}

/* A batch of the bundle that does not decode, or names a rank the run does not have, is refused alone (400, with
 * an error that says why); the others are stored. */
static void test_bundle_refuses_one(void **state)
{
    (void)state;
    char run[40];
    assert_int_equal(it_register(&srv, "701", NULL, 2, 0, NULL, run), 0);
    h_batch u = {0}, b = {0};
    uint64_t seq = 0;
    it_batch_steps(&b, run, 0, 0, 0, 1, 5, -1, 0, -1, 0, &seq);
    bundle_add(&u, b.buf, b.len);
    bundle_add(&u, "not a batch", 11);
    seq = 0;
    it_batch_steps(&b, run, 7, 0, 0, 1, 5, -1, 0, -1, 0, &seq); /* rank 7 of a 2-rank run */
    bundle_add(&u, b.buf, b.len);
    seq = 0;
    it_batch_steps(&b, run, 1, 0, 0, 1, 5, -1, 0, -1, 0, &seq);
    bundle_add(&u, b.buf, b.len);
    json_t *o = NULL;
    assert_int_equal(post_bundle(run, &u, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "batches")), 4);
    entry(o, 0, 200, 0);
    json_t *bad = json_array_get(json_object_get(o, "batches"), 1);
    assert_int_equal(json_integer_value(json_object_get(bad, "status")), 400);
    assert_non_null(json_string_value(json_object_get(bad, "error")));
    assert_non_null(json_string_value(json_object_get(bad, "hint")));
    json_t *e = entry(o, 2, 400, 7);
    assert_string_equal(json_string_value(json_object_get(e, "error")), "rank out of range");
    entry(o, 3, 200, 1);
    json_decref(o);
    assert_int_equal(batches_of(run), 2);
    assert_int_equal(records_of(run), 10);
    h_batch_free(&u);
    h_batch_free(&b);
}

/* A bundle whose framing does not hold (a length past the body, a zero length, an empty body, more batches than a
 * bundle takes) is refused whole: 400 with an error, nothing stored. */
static void test_bundle_bad_framing(void **state)
{
    (void)state;
    char run[40];
    assert_int_equal(it_register(&srv, "702", NULL, 2, 0, NULL, run), 0);
    h_batch u = {0}, b = {0};
    uint64_t seq = 0;
    it_batch_steps(&b, run, 0, 0, 0, 1, 5, -1, 0, -1, 0, &seq);
    bundle_add(&u, b.buf, b.len);
    size_t whole = u.len;
    json_t *o = NULL;
    u.len = whole - 3; /* the batch cut short: its length claims more than is left */
    assert_int_equal(post_bundle(run, &u, &o), 400);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "bad bundle");
    assert_non_null(strstr(json_string_value(json_object_get(o, "detail")), "claims"));
    json_decref(o);
    u.len = whole;
    bundle_add(&u, "", 0); /* a zero length */
    assert_int_equal(post_bundle(run, &u, &o), 400);
    json_decref(o);
    u.len = whole + 2; /* a length of two bytes */
    assert_int_equal(post_bundle(run, &u, &o), 400);
    json_decref(o);
    u.len = 0;
    assert_int_equal(post_bundle(run, &u, &o), 400);
    json_decref(o);
    u.len = 0;
    for (int k = 0; k < 257; k++)
        bundle_add(&u, b.buf, b.len);
    assert_int_equal(post_bundle(run, &u, &o), 400);
    assert_non_null(strstr(json_string_value(json_object_get(o, "detail")), "more than 256"));
    json_decref(o);
    assert_int_equal(batches_of(run), 0);
    h_batch_free(&u);
    h_batch_free(&b);
}

/* Twins whose ranks post as bundles (a bundle a step for the run's four ranks): run b's rank 2 differs from step
 * 13; the group diverges there, on that rank only, and the other ranks match. */
static void test_bundle_twins_diverge(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "710", "bundle-g", 4, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "711", "bundle-g", 4, 0, NULL, b), 0);
    h_batch u = {0};
    for (int64_t s = 0; s < 20; s++) {
        json_t *o = NULL;
        bundle_steps(&u, a, 4, s, -1, -1);
        assert_int_equal(post_bundle(a, &u, &o), 200);
        json_decref(o);
        bundle_steps(&u, b, 4, s, 2, 13);
        assert_int_equal(post_bundle(b, &u, &o), 200);
        json_decref(o);
    }
    for (int r = 0; r < 4; r++) {
        assert_int_equal(it_end(&srv, a, r, NULL), 200);
        assert_int_equal(it_end(&srv, b, r, NULL), 200);
    }
    json_t *o = it_wait_group(&srv, "bundle-g", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 13);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 2);
    assert_int_equal(json_array_size(json_object_get(o, "per_rank")), 1);
    json_decref(o);
    h_batch_free(&u);
}

/* Bundles of hostile bytes (lengths that claim too much, too little or exactly their random bytes, batches cut at
 * random) are answered 200 or 400, never crash lockstepd, and store nothing that is not a whole batch; lockstepd
 * serves the next honest bundle. */
static void test_bundle_random_bytes(void **state)
{
    (void)state;
    char run[40];
    assert_int_equal(it_register(&srv, "720", NULL, 2, 0, NULL, run), 0);
    h_batch u = {0}, b = {0};
    uint64_t seq = 0;
    it_batch_steps(&b, run, 1, 0, 0, 1, 5, -1, 0, -1, 0, &seq);
    assert_true(b.len <= 4096);
    srand(20261206);
    for (int k = 0; k < 300; k++) {
        u.len = 0;
        int parts = 1 + rand() % 4;
        for (int p = 0; p < parts; p++) {
            size_t n = rand() % 3 == 0 ? b.len : (size_t)(rand() % 200);
            unsigned char junk[4096];
            for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (unsigned char)rand();
            if (rand() % 2) { /* the honest batch, cut or bitten at random */
                memcpy(junk, b.buf, n < b.len ? n : b.len);
                if (n > 8 && rand() % 2)
                    junk[rand() % n] ^= (unsigned char)(1 + rand() % 255);
            }
            bundle_add(&u, junk, n);
            if (rand() % 5 == 0) /* a length that lies */
                u.buf[u.len - n - 4 + (size_t)(rand() % 4)] = (unsigned char)rand();
        }
        if (rand() % 4 == 0 && u.len > 0)
            u.len = (size_t)rand() % u.len;
        json_t *o = NULL;
        long code = post_bundle(run, &u, &o);
        if (code != 200 && code != 400)
            fail_msg("bundle %d: HTTP %ld", k, code);
        json_decref(o);
    }
    assert_true(batches_of(run) <= 1); /* rank 1's batch 0, when one came whole */
    bundle_steps(&u, run, 2, 1, -1, -1);
    json_t *o = NULL;
    assert_int_equal(post_bundle(run, &u, &o), 200);
    entry(o, 0, 200, 0);
    entry(o, 1, 200, 1);
    json_decref(o);
    h_batch_free(&u);
    h_batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundle_stored_once),  cmocka_unit_test(test_bundle_refuses_one),
        cmocka_unit_test(test_bundle_bad_framing),  cmocka_unit_test(test_bundle_twins_diverge),
        cmocka_unit_test(test_bundle_random_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

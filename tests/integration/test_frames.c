/* test_frames.c - lockstepd integration: records stored as frames; a database of the row layout converted at start;
 * pages across segments; damaged frames refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lsfp1.h"
#include "common/record.h"
#include "tests/integration/common.h"

static h_pg pg;

static int setup(void **state)
{
    (void)state;
    return h_pg_start(&pg);
}

static int teardown(void **state)
{
    (void)state;
    h_pg_stop(&pg);
    return 0;
}

static PGconn *db(void)
{
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

static void exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

static char *scalar(PGconn *c, const char *sql, char *out, size_t cap)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return out;
}

/* old_schema - a database as lockstepd left it before frames: migrations 001-009 of sql/migrations/ (call sites,
 * extension fields and the state index included), recorded as applied. */
static void old_schema(PGconn *c)
{
    const char *src = getenv("LOCKSTEP_SRC");
    char pat[1100];
    snprintf(pat, sizeof(pat), "%s/sql/migrations/00[1-9]_*.sql", src ? src : ".");
    glob_t g;
    assert_int_equal(glob(pat, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 9);
    exec_ok(c, "CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, "
               "applied_at timestamptz NOT NULL DEFAULT now())");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        assert_non_null(f);
        static char sql[1 << 16];
        size_t n = fread(sql, 1, sizeof(sql) - 1, f);
        sql[n] = 0;
        fclose(f);
        exec_ok(c, sql);
        char rec[200];
        snprintf(rec, sizeof(rec), "INSERT INTO schema_migrations VALUES (%zu, 'old')", i + 1);
        exec_ok(c, rec);
    }
    globfree(&g);
}

#define RUN_ID "5d2e3f0c-1111-4222-8333-944455556666"

/* test_convert_rows - a database of the row layout (records of two days, one rank over two conversion chunks)
 * is converted at start: every record reads back as it was stored, its day is kept for retention, the row table
 * is gone, and a second start has nothing to do. */
static void test_convert_rows(void **state)
{
    (void)state;
    PGconn *c = db();
    old_schema(c);
    exec_ok(c, "INSERT INTO runs (run_id, job_id, twin_group, ranks) VALUES ('" RUN_ID "', '77', 'conv', 2)");
    exec_ok(c, "CREATE TABLE records_20200101 PARTITION OF records FOR VALUES FROM ('2020-01-01') TO ('2020-01-02')");
    /* rank 0: 10 steps of a loss (a value; a NaN's bits at step 3), a tensor with inputs and one with chunks;
     * step 0 received on an old day */
    exec_ok(c, "INSERT INTO records (run_key, rank, seq, step, name, occ, level, dtype, flags, t_ns, nbytes, fp, "
               "value, shape, inputs, chunks, received_on) "
               "SELECT 1, 0, s * 3 + k, s, (ARRAY['loss', 'allreduce.out', 'big'])[k + 1], 0, "
               "CASE k WHEN 0 THEN 0 ELSE 1 END, CASE k WHEN 0 THEN 1 ELSE 2 END, CASE k WHEN 0 THEN 1 ELSE 0 END, "
               "1000 * s, CASE k WHEN 0 THEN 8 ELSE 4096 END, -123456789 * (s + 1) - k, "
               "CASE k WHEN 0 THEN (CASE s WHEN 3 THEN 9221120237041090561 ELSE 4611686018427387904 + s END) END, "
               "CASE k WHEN 0 THEN '{}'::bigint[] ELSE ARRAY[4, 256]::bigint[] END, "
               "CASE k WHEN 1 THEN ARRAY[s, -1]::bigint[] END, CASE k WHEN 2 THEN ARRAY[1, 2, s]::bigint[] END, "
               "CASE s WHEN 0 THEN date '2020-01-01' ELSE current_date END "
               "FROM generate_series(0, 9) s, generate_series(0, 2) k");
    /* rank 1: 120,000 records over 300 steps: more than one conversion chunk */
    exec_ok(c, "INSERT INTO records (run_key, rank, seq, step, name, occ, level, dtype, flags, t_ns, nbytes, fp, "
               "shape) SELECT 1, 1, i, i / 400, 'layer' || (i % 400) || '.out', 0, 2, 1, 0, i, 64, i * 7, '{16}' "
               "FROM generate_series(0, 119999) i");
    /* rank 2: a record with a call site (sql/migrations/007) and a shard (extension fields, sql/migrations/009), and an
     * entry of a restored state block */
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_shard = 1;
    x.shard_offset = 4096;
    x.shard_total = 8192;
    x.shard_acc = 0x1122334455667788ULL;
    unsigned char xb[REC_EXT_ENCODED_MAX];
    size_t xl = rec_ext_encode(&x, xb);
    char hex[2 * REC_EXT_ENCODED_MAX + 1], sql[2048];
    for (size_t i = 0; i < xl; i++)
        snprintf(hex + 2 * i, 3, "%02x", xb[i]);
    snprintf(sql, sizeof(sql),
             "INSERT INTO records (run_key, rank, seq, step, name, occ, level, dtype, flags, t_ns, nbytes, fp, shape, "
             "site_module, site_offset, site_function, site_function_offset, site_caller, ext) VALUES "
             "(1, 2, 0, 0, 'w.shard', 0, 1, 2, 0, 5, 4096, 77, '{4,256}', 'train', 4660, 'step', 16, 'main', "
             "decode('%s', 'hex')), (1, 2, 1, 0, 'opt.m', 0, 1, 2, 8, 6, 4096, 78, '{4,256}', NULL, NULL, NULL, NULL, "
             "NULL, NULL)",
             hex);
    exec_ok(c, sql);
    h_srv s;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&s, args), 0);

    char v[200];
    assert_string_equal(scalar(c, "SELECT to_regclass('records_rows') IS NULL", v, sizeof(v)), "t");
    json_t *o2 = NULL;
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs/" RUN_ID "/records?rank=2", NULL, NULL, &o2), 200);
    json_t *r2 = json_object_get(o2, "items");
    assert_int_equal(json_array_size(r2), 2);
    json_t *site = json_object_get(json_array_get(r2, 0), "site");
    assert_string_equal(json_string_value(json_object_get(site, "module")), "train");
    assert_int_equal(json_integer_value(json_object_get(site, "offset")), 4660);
    assert_string_equal(json_string_value(json_object_get(site, "function")), "step");
    assert_string_equal(json_string_value(json_object_get(site, "caller")), "main");
    json_t *shard = json_object_get(json_array_get(r2, 0), "shard");
    assert_int_equal(json_integer_value(json_object_get(shard, "offset")), 4096);
    assert_string_equal(json_string_value(json_object_get(shard, "acc")), "1122334455667788");
    assert_string_equal(json_string_value(json_object_get(json_array_get(r2, 1), "state")), "restored");
    assert_null(json_object_get(json_array_get(r2, 1), "site"));
    json_decref(o2);
    /* the shard and the state entry went into their own segments (the logical comparison's and the restore
     * checks' indexes) */
    assert_string_equal(
        scalar(c, "SELECT string_agg(kind::text, ',' ORDER BY kind) FROM record_frames WHERE rank = 2", v, sizeof(v)),
        "3,4");
    assert_string_equal(scalar(c, "SELECT sum(n) FROM record_frames WHERE rank = 1", v, sizeof(v)), "120000");
    assert_string_equal(scalar(c, "SELECT sum(n) FROM record_frames WHERE received_on = '2020-01-01'", v, sizeof(v)),
                        "3");

    json_t *o = NULL;
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs/" RUN_ID "/records?rank=0", NULL, NULL, &o), 200);
    json_t *recs = json_object_get(o, "items");
    assert_int_equal(json_array_size(recs), 30);
    for (size_t i = 0; i < 30; i++) {
        json_t *r = json_array_get(recs, i);
        int64_t step = (int64_t)i / 3, k = (int64_t)i % 3;
        char fp[17];
        snprintf(fp, sizeof(fp), "%016" PRIx64, (uint64_t)(-123456789 * (step + 1) - k));
        assert_int_equal(json_integer_value(json_object_get(r, "seq")), i);
        assert_int_equal(json_integer_value(json_object_get(r, "step")), step);
        assert_string_equal(json_string_value(json_object_get(r, "fp")), fp);
        assert_string_equal(json_string_value(json_object_get(r, "level")), k ? "collective" : "metric");
        if (k == 0) {
            char bits[17];
            snprintf(bits, sizeof(bits), "%016" PRIx64,
                     (uint64_t)(step == 3 ? 0x7ff8000000000001ULL : 0x4000000000000000ULL + (uint64_t)step));
            assert_string_equal(json_string_value(json_object_get(r, "value_bits")), bits);
            assert_true(step == 3 ? json_is_null(json_object_get(r, "value"))
                                  : json_is_real(json_object_get(r, "value")));
            assert_int_equal(json_array_size(json_object_get(r, "shape")), 0);
        } else {
            assert_null(json_object_get(r, "value_bits"));
            assert_int_equal(json_integer_value(json_array_get(json_object_get(r, "shape"), 1)), 256);
        }
        json_t *in = json_object_get(r, "inputs"), *ch = json_object_get(r, "chunks");
        if (k == 1) {
            assert_int_equal(json_array_size(in), 2);
            assert_string_equal(json_string_value(json_array_get(in, 1)), "ffffffffffffffff");
        } else {
            assert_null(in);
        }
        if (k == 2) {
            char last[17];
            snprintf(last, sizeof(last), "%016" PRIx64, (uint64_t)step);
            assert_int_equal(json_array_size(ch), 3);
            assert_string_equal(json_string_value(json_array_get(ch, 2)), last);
        } else {
            assert_null(ch);
        }
    }
    json_decref(o);
    /* the series reads the converted loss */
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs/" RUN_ID "/series?rank=0&name=loss", NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(o, "series"), 0), "steps")), 10);
    json_decref(o);
    /* a step of rank 1, from the second chunk */
    assert_int_equal(it_call(&s, "GET", "/api/v1/runs/" RUN_ID "/records?rank=1&step=250", NULL, NULL, &o), 200);
    recs = json_object_get(o, "items");
    assert_int_equal(json_array_size(recs), 400);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, 0), "seq")), 100000);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, 399), "seq")), 100399);
    json_decref(o);

    /* retention still drops the old day */
    assert_string_equal(scalar(c, "SELECT lockstep_drop_partitions(30)", v, sizeof(v)), "0");
    assert_string_equal(scalar(c, "SELECT sum(n) FROM record_frames WHERE rank = 0", v, sizeof(v)), "27");

    /* a second start finds nothing to convert */
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    assert_int_equal(h_srv_restart(&s, args), 0);
    assert_int_equal(it_call(&s, "GET", "/api/v1/health", NULL, NULL, NULL), 200);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
    PQfinish(c);
}

/* post_wide_step - one batch of rank 0: step 0 with `n` tensors of ~130-byte frames and two losses
 * (occurrences 0 and 1) among them, steps 1 and 2 with three records each. */
static void post_wide_step(const h_srv *s, const char *run, int n)
{
    h_batch b = {0};
    h_batch_begin(&b, run, 0, 0);
    uint64_t seq = 0;
    for (int64_t step = 0; step < 3; step++) {
        int count = step == 0 ? n : 3;
        for (int i = 0; i < count; i++) {
            char name[64];
            rec_record r = {0};
            if (i == 0 || i == n / 2) {
                it_scalar(&r, "loss", seq++, step, 1.0 + (double)step + (double)i);
                r.occurrence = i == 0 ? 0 : 1;
            } else {
                snprintf(name, sizeof(name), "model.layers.%04d.mlp.down_proj.out", i);
                r.seq = seq++;
                r.step = step;
                r.name = name;
                r.name_len = (uint16_t)strlen(name);
                r.level = LS_LEVEL_MODULE;
                r.dtype = LS_BF16;
                r.ndim = 3;
                r.shape[0] = 8;
                r.shape[1] = 512;
                r.shape[2] = i;
                r.nbytes = 8192u * (unsigned)i;
                r.fp = fp_lsfp1(&r.seq, 8);
            }
            h_batch_add(&b, &r);
        }
    }
    assert_int_equal(it_post_batch(s, run, &b, NULL), 200);
}

/* check_pages - each page (cursor, limit) of run `run`'s records endpoint, rank 0, is that slice of `all` (every
 * record), and its next cursor follows it. */
static void check_pages(const h_srv *s, const char *run, json_t *all, const long long pages[][2], size_t n)
{
    char path[300];
    long long total = (long long)json_array_size(all);
    for (size_t p = 0; p < n; p++) {
        json_t *o = NULL;
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0&cursor=%lld&limit=%lld", run, pages[p][0],
                 pages[p][1]);
        assert_int_equal(it_call(s, "GET", path, NULL, NULL, &o), 200);
        json_t *page = json_object_get(o, "items");
        long long want = pages[p][0] + pages[p][1] <= total ? pages[p][1] : total - pages[p][0];
        assert_int_equal(json_array_size(page), want);
        for (size_t i = 0; i < json_array_size(page); i++)
            assert_true(json_equal(json_array_get(page, i), json_array_get(all, (size_t)pages[p][0] + i)));
        json_t *next = json_object_get(o, "next_cursor");
        if (pages[p][0] + pages[p][1] < total)
            assert_int_equal(atoll(json_string_value(next)), pages[p][0] + pages[p][1]);
        else
            assert_true(json_is_null(next));
        json_decref(o);
    }
}

/* test_pages_across_segments - a step larger than several segments, with series points among its records:
 * every page of the records endpoint is the same slice of the whole, in (step, seq) order, and the series
 * holds the occurrence-0 points only. */
static void test_pages_across_segments(void **state)
{
    (void)state;
    h_srv s;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&s, args), 0);
    char run[40], path[300];
    assert_int_equal(it_register(&s, "88", NULL, 1, 0, NULL, run), 0);
    post_wide_step(&s, run, 500); /* ~65 KB of frames in step 0: several segments, compressed or not */
    PGconn *c = db();
    char v[64];
    assert_true(atoi(scalar(c, "SELECT count(*) FROM record_frames WHERE step = 0 AND kind = 0", v, sizeof(v))) >= 2);
    PQfinish(c);
    json_t *all = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0&limit=100000", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &all), 200);
    json_t *recs = json_object_get(all, "items");
    assert_int_equal(json_array_size(recs), 506);
    for (size_t i = 0; i < 506; i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(recs, i), "seq")), i);
    static const long long pages[][2] = {{0, 1}, {3, 70}, {69, 71}, {240, 300}, {499, 5}, {505, 10}, {506, 3}};
    check_pages(&s, run, recs, pages, sizeof(pages) / sizeof(pages[0]));
    /* steps 1..2 alone */
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0&from=1&to=2", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "items")), 6);
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/series?rank=0&name=loss", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 200);
    json_t *steps = json_object_get(json_array_get(json_object_get(o, "series"), 0), "steps");
    assert_int_equal(json_array_size(steps), 3);
    assert_int_equal(json_integer_value(json_array_get(steps, 2)), 2);
    json_decref(o);
    json_decref(all);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

/* test_series_spans - series points of a batch's steps are stored as one segment per block of steps they span
 * (migrations/030_series_spans.sql): a batch of steps 28-37 makes two (28-31 and 32-37), the next batch a third, a
 * step without points ends one;
 * every read of a step inside a segment gets that step's points alone, in (step, seq) order with the other
 * records: a range that starts inside a segment, every page of the records endpoint, the series endpoint, and the
 * twin comparison, which finds a loss that differs at step 35 there and nowhere else. */
static void test_series_spans(void **state)
{
    (void)state;
    h_srv s;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&s, args), 0);
    char a[40], b[40], path[300];
    assert_int_equal(it_register(&s, "91", "spans", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&s, "92", "spans", 1, 0, NULL, b), 0);
    uint64_t sa = 0, sb = 0;
    assert_int_equal(it_post_steps(&s, a, 0, 0, 28, 10, 3, -1, -1, -1, -1, &sa, NULL), 200);
    assert_int_equal(it_post_steps(&s, a, 0, 1, 38, 3, 3, -1, -1, -1, -1, &sa, NULL), 200);
    assert_int_equal(it_post_steps(&s, b, 0, 0, 28, 10, 3, 35, 0, -1, -1, &sb, NULL), 200);
    assert_int_equal(it_post_steps(&s, b, 0, 1, 38, 3, 3, -1, -1, -1, -1, &sb, NULL), 200);
    assert_int_equal(it_end(&s, a, 0, NULL), 200);
    assert_int_equal(it_end(&s, b, 0, NULL), 200);

    PGconn *c = db();
    char v[256];
    snprintf(path, sizeof(path),
             "SELECT string_agg(f.step || '-' || coalesce(f.step_last::text, '='), ' ' ORDER BY f.step) FROM "
             "record_frames f JOIN runs r USING (run_key) WHERE r.run_id = '%s' AND f.kind = 1",
             a);
    assert_string_equal(scalar(c, path, v, sizeof(v)), "28-31 32-37 38-40");
    /* a step without points ends a segment: each step a segment spans has points in it */
    char solo[40];
    uint64_t sc = 0;
    assert_int_equal(it_register(&s, "93", NULL, 1, 0, NULL, solo), 0);
    assert_int_equal(it_post_steps(&s, solo, 0, 0, 1, 5, 3, -1, -1, 3, 0, &sc, NULL), 200);
    snprintf(path, sizeof(path),
             "SELECT string_agg(f.step || '-' || coalesce(f.step_last::text, '='), ' ' ORDER BY f.step) FROM "
             "record_frames f JOIN runs r USING (run_key) WHERE r.run_id = '%s' AND f.kind = 1",
             solo);
    assert_string_equal(scalar(c, path, v, sizeof(v)), "1-2 4-5");
    PQfinish(c);

    json_t *o = it_wait_group(&s, "spans", "diverged");
    json_t *first = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(first, "step")), 35);
    assert_int_equal(json_integer_value(json_object_get(first, "rank")), 0);
    assert_string_equal(json_string_value(json_object_get(first, "name")), "loss");
    json_decref(o);

    /* every record of run a, in (step, seq) order: 13 steps of 3 */
    json_t *all = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0&limit=100000", a);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &all), 200);
    json_t *recs = json_object_get(all, "items");
    assert_int_equal(json_array_size(recs), 39);
    for (size_t i = 0; i < 39; i++) {
        json_t *r = json_array_get(recs, i);
        assert_int_equal(json_integer_value(json_object_get(r, "seq")), i);
        assert_int_equal(json_integer_value(json_object_get(r, "step")), 28 + (long long)i / 3);
    }
    static const long long pages[][2] = {{0, 1}, {1, 5}, {4, 7}, {11, 13}, {30, 9}, {38, 4}};
    check_pages(&s, a, recs, pages, sizeof(pages) / sizeof(pages[0]));
    /* a range that starts and ends inside segments */
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0&from=30&to=33", a);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 200);
    json_t *items = json_object_get(o, "items");
    assert_int_equal(json_array_size(items), 12);
    for (size_t i = 0; i < 12; i++)
        assert_true(json_equal(json_array_get(items, i), json_array_get(recs, 6 + i)));
    json_decref(o);
    /* the loss curve: one point a step, none twice */
    snprintf(path, sizeof(path), "/api/v1/runs/%s/series?rank=0&name=loss", a);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 200);
    json_t *steps = json_object_get(json_array_get(json_object_get(o, "series"), 0), "steps");
    assert_int_equal(json_array_size(steps), 13);
    for (size_t i = 0; i < 13; i++)
        assert_int_equal(json_integer_value(json_array_get(steps, i)), 28 + (long long)i);
    json_decref(o);
    json_decref(all);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

/* post_series - one batch of rank 0: steps 0 .. steps-1, each with the four metrics of a training step (scalars of
 * occurrence 0: series points), the value of metric m at step t t + m / 8. */
static void post_series(const h_srv *s, const char *run, int steps)
{
    static const char *const names[] = {"loss", "grad_norm", "lr", "tokens"};
    h_batch b = {0};
    h_batch_begin(&b, run, 0, 0);
    uint64_t seq = 0;
    for (int64_t step = 0; step < steps; step++)
        for (int m = 0; m < 4; m++) {
            rec_record r;
            it_scalar(&r, names[m], seq++, step, (double)step + m / 8.0);
            h_batch_add(&b, &r);
        }
    assert_int_equal(it_post_batch(s, run, &b, NULL), 200);
}

/* test_series_compressed - where record_frames compresses frames (lockstep_frames_compressed: lz4), every partition
 * takes lockstep_frames_target at lockstep_ensure_partitions, one made before with another target included, and a
 * batch's segment of series points past ~2 KB is stored compressed; where it does not, segments are stored as they
 * came. Either way the points read back as they were sent. */
static void test_series_compressed(void **state)
{
    (void)state;
    h_srv s;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&s, args), 0);
    PGconn *c = db();
    char v[256], sql[600];
    int lz4 = scalar(c, "SELECT lockstep_frames_compressed()", v, sizeof(v))[0] == 't';
    const char *target = lz4 ? "2032" : "8160";
    exec_ok(c, lz4 ? "ALTER TABLE record_frames_default SET (toast_tuple_target = 8160)"
                   : "ALTER TABLE record_frames_default SET (toast_tuple_target = 2032)");
    exec_ok(c, "SELECT lockstep_ensure_partitions(1)");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) >= 3 AND bool_and(coalesce(c.reloptions, '{}') @> ARRAY['toast_tuple_target=%s']) "
             "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'record_frames'::regclass",
             target);
    /* every partition has the target: the default one, today's and tomorrow's at least */
    assert_string_equal(scalar(c, sql, v, sizeof(v)), "t");

    char run[40], path[300];
    assert_int_equal(it_register(&s, "94", NULL, 1, 0, NULL, run), 0);
    post_series(&s, run, 30); /* 120 points of one block: one segment of ~2.5 KB */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) || ' ' || bool_and(octet_length(f.frames) > 2100) || ' ' || "
             "bool_and(pg_column_size(f.frames) < octet_length(f.frames) / 2) FROM record_frames f "
             "JOIN runs r USING (run_key) WHERE r.run_id = '%s' AND f.kind = 1",
             run);
    assert_string_equal(scalar(c, sql, v, sizeof(v)), lz4 ? "1 true true" : "1 true false");
    PQfinish(c);
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/series?rank=0&name=loss,tokens", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 200);
    json_t *series = json_object_get(o, "series");
    assert_int_equal(json_array_size(series), 2);
    for (size_t k = 0; k < 2; k++) {
        json_t *one = json_array_get(series, k);
        json_t *steps = json_object_get(one, "steps"), *values = json_object_get(one, "values");
        double m = !strcmp(json_string_value(json_object_get(one, "name")), "loss") ? 0 : 3;
        assert_int_equal(json_array_size(steps), 30);
        for (size_t t = 0; t < 30; t++) {
            assert_int_equal(json_integer_value(json_array_get(steps, t)), (json_int_t)t);
            assert_true(json_real_value(json_array_get(values, t)) == (double)t + m / 8.0);
        }
    }
    json_decref(o);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

/* test_damaged_frames - a stored frame changed behind lockstepd's back is refused with 500, never served. */
static void test_damaged_frames(void **state)
{
    (void)state;
    h_srv s;
    const char *args[] = {"--db", pg.conninfo, NULL};
    assert_int_equal(h_srv_start(&s, args), 0);
    char run[40], path[300];
    assert_int_equal(it_register(&s, "89", NULL, 1, 0, NULL, run), 0);
    post_wide_step(&s, run, 20);
    PGconn *c = db();
    char sql[400];
    snprintf(sql, sizeof(sql),
             "UPDATE record_frames SET frames = set_byte(frames, 40, get_byte(frames, 40) # 1) WHERE kind = 0 "
             "AND step = 0 AND run_key = (SELECT run_key FROM runs WHERE run_id = '%s')",
             run);
    exec_ok(c, sql);
    PQfinish(c);
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0", run);
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, &o), 500);
    assert_string_equal(json_string_value(json_object_get(o, "error")), "stored records are damaged");
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=0&step=1", run); /* the rest still reads */
    assert_int_equal(it_call(&s, "GET", path, NULL, NULL, NULL), 200);
    assert_int_equal(h_srv_kill(&s, SIGTERM), 0);
    h_srv_cleanup(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_rows),   cmocka_unit_test(test_pages_across_segments),
        cmocka_unit_test(test_series_spans),   cmocka_unit_test(test_series_compressed),
        cmocka_unit_test(test_damaged_frames),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_fleet_post.c - bench/fleet's poster (bench/fleet/post.c) against a real lockstepd: its posts are stored and
 * their replies read whole, a kept-alive connection the server closed while idle is opened again and the batch sent
 * once (stored once), and only plain http to 127.0.0.1 is taken. A bench whose posts were not what they claim would
 * measure nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/fleet/post.h"
#include "common/wire.h"
#include "tests/integration/common.h"

static h_pg pg;
static h_srv srv;
static char dir[] = "/tmp/lsfpost.XXXXXX";
static char run[40];

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0 || !mkdtemp(dir))
        return -1;
    chmod(dir, 0711);
    char conf[300];
    snprintf(conf, sizeof(conf), "%s/lockstepd.conf", dir);
    it_write_file(conf, "connection_timeout = 1\n", 0);
    const char *args[] = {"--db", pg.conninfo, "--config", conf, NULL};
    if (h_srv_start(&srv, args) < 0)
        return -1;
    return it_register(&srv, "31", "fpost-g", 1, 0, NULL, run);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, dir);
}

/* batch - batch `bseq` of rank 0: 3 records of step `step` (it_batch_steps). */
static void batch(h_batch *b, uint64_t bseq, int64_t step)
{
    uint64_t seq = (uint64_t)step * 3;
    it_batch_steps(b, NULL, 0, bseq, step, 1, 3, -1, 0, -1, 0, &seq);
}

static long stored_batches(void)
{
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    const char *p[] = {run};
    PGresult *res = PQexecParams(c,
                                 "SELECT count(*) FROM batches b JOIN runs u ON u.run_key = b.run_key "
                                 "WHERE u.run_id = $1::uuid AND b.rank = 0",
                                 1, NULL, p, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    long n = atol(PQgetvalue(res, 0, 0));
    PQclear(res);
    PQfinish(c);
    return n;
}

static void test_posts_and_reopens(void **state)
{
    (void)state;
    fleet_conn c;
    assert_int_equal(fleet_conn_init(&c, srv.base), 0);
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/runs/%s/records", run);
    h_batch b = {0};
    for (int k = 0; k < 3; k++) { /* three on one connection */
        batch(&b, (uint64_t)k, k);
        assert_int_equal(fleet_post(&c, path, "application/x-lockstep", b.buf, b.len), 200);
        json_t *o = json_loads(c.reply, 0, NULL);
        if (!json_is_object(o))
            fail_msg("reply %d is not a whole JSON object: %s", k, c.reply);
        json_decref(o);
    }
    int fd = c.fd;
    assert_true(fd >= 0);
    assert_int_equal(stored_batches(), 3);
    sleep(3); /* past connection_timeout: lockstepd closes the idle connection */
    batch(&b, 3, 3);
    assert_int_equal(fleet_post(&c, path, "application/x-lockstep", b.buf, b.len), 200);
    assert_int_equal(stored_batches(), 4); /* sent again on a new connection, stored once */
    /* a refused request is answered, not retried: a body that is no batch */
    assert_int_equal(fleet_post(&c, path, "application/x-lockstep", "not a batch", 11), 400);
    assert_non_null(strstr(c.reply, "\"error\""));
    assert_int_equal(stored_batches(), 4);
    h_batch_free(&b);
    fleet_conn_close(&c);
    /* nothing listens there any more: no answer */
    fleet_conn dead;
    assert_int_equal(fleet_conn_init(&dead, "http://127.0.0.1:1"), 0);
    assert_int_equal(fleet_post(&dead, path, "application/x-lockstep", "x", 1), -1);
}

static void test_only_plain_loopback(void **state)
{
    (void)state;
    fleet_conn c;
    static const char *const bad[] = {"https://127.0.0.1:8080",
                                      "http://10.1.2.3:80",
                                      "http://127.0.0.1:x",
                                      "http://127.0.0.1:0",
                                      "http://127.0.0.1:70000",
                                      "http://127.0.0.1:80/api",
                                      ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (fleet_conn_init(&c, bad[i]) != -1)
            fail_msg("took %s", bad[i]);
    assert_int_equal(fleet_conn_init(&c, "http://127.0.0.1:8080/"), 0);
    assert_int_equal(c.port, 8080);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_posts_and_reopens),
        cmocka_unit_test(test_only_plain_loopback),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

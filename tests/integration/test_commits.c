/* test_commits.c - lockstepd integration: the database workers' group commit (server/http/defer.c, db_group_wait_ms).
 * Batches streaming in from many ranks share a transaction and a commit, each acknowledged only after it and stored
 * exactly once; a lone batch on an idle server is stored at once, without waiting for company. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/common.h"

#define WAIT_MS "1000" /* long, so that whether a batch waited cannot be mistaken */
#define LOADERS 8

static h_pg pg;
static h_srv srv;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    const char *args[] = {"--db", pg.conninfo, "--db-group-wait-ms", WAIT_MS, "--db-workers", "2", NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, NULL);
}

/* Eight ranks posting batch after batch: their batches share commits (the server's own count of transactions and the
 * batches they stored), and every acknowledged batch is stored once. */
static void test_streaming_batches_share_commits(void **state)
{
    (void)state;
    char run[40];
    assert_int_equal(it_register(&srv, "commits-1", NULL, LOADERS, 0, NULL, run), 0);
    double groups0 = it_metric(&srv, "lockstepd_db_groups_total", NULL),
           stored0 = it_metric(&srv, "lockstepd_db_group_requests_total", NULL);
    assert_true(groups0 >= 0 && stored0 >= 0);

    it_loader ls[LOADERS];
    pthread_t th[LOADERS];
    atomic_int stop = 0;
    it_load_start(ls, LOADERS, th, &srv, run, &stop);
    sleep(4);
    atomic_store(&stop, 1);
    for (int i = 0; i < LOADERS; i++)
        pthread_join(th[i], NULL);

    unsigned long long acked = 0;
    for (int i = 0; i < LOADERS; i++) {
        acked += atomic_load(&ls[i].acked);
        assert_int_equal(atomic_load(&ls[i].retries), 0);
    }
    double groups = it_metric(&srv, "lockstepd_db_groups_total", NULL) - groups0,
           stored = it_metric(&srv, "lockstepd_db_group_requests_total", NULL) - stored0;
    assert_true(acked >= LOADERS);
    assert_true(stored >= (double)acked);
    /* one transaction a batch would make groups == stored; waiting for company makes groups of about LOADERS */
    if (groups * 3 > stored)
        fail_msg("%.0f transactions stored %.0f batches: they did not share commits", groups, stored);
    it_check_exactly_once(pg.conninfo, run, ls, LOADERS);
}

/* One batch on a server that has been idle is stored and acknowledged without waiting the group wait, and so is each
 * batch of one client posting batch after batch (a rank sending its spool): nothing else comes in at once. */
static void test_lone_batch_goes_at_once(void **state)
{
    (void)state;
    char run[40];
    assert_int_equal(it_register(&srv, "commits-2", NULL, 1, 0, NULL, run), 0);
    usleep(1500 * 1000); /* longer than the wait: nothing streams in, no worker stores */
    uint64_t seq = 0;
    double t0 = h_now();
    assert_int_equal(it_post_steps(&srv, run, 0, 0, 0, 1, 10, -1, -1, -1, -1, &seq, NULL), 200);
    double took = h_now() - t0;
    if (took >= 0.6)
        fail_msg("a lone batch took %.3f s: it waited for company on an idle server", took);
    t0 = h_now();
    for (int k = 1; k <= 20; k++)
        assert_int_equal(it_post_steps(&srv, run, 0, (uint64_t)k, k, 1, 10, -1, -1, -1, -1, &seq, NULL), 200);
    took = h_now() - t0;
    if (took >= 4.0) /* a quarter of the wait each would be 5 s */
        fail_msg("20 batches posted one after another took %.3f s: each waited for company", took);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streaming_batches_share_commits),
        cmocka_unit_test(test_lone_batch_goes_at_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

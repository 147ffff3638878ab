/* test_cons_mem.c - consensus windows held in memory (server/consensus/cons_mem.h): ready once every member
 * reported, each rank once, the first digest counting; groups named differently, full tables and expiry left to the
 * database's look. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/consensus/cons_mem.h"

/* dig - a digest of window (step, win) of the listed group `ranks` (`n` of them; n 0: an unlisted group of `size`). */
static srv_cons_digest dig(int64_t step, uint32_t win, const uint32_t *ranks, uint32_t n, uint32_t size, uint64_t fold)
{
    srv_cons_digest d = {.step = step, .win = win, .n = 64, .fold = fold, .size = n ? n : size, .n_listed = n};
    if (n)
        memcpy(d.ranks, ranks, n * sizeof(uint32_t));
    d.key = n ? cons_key(ranks, n) : 0xABCDEFULL;
    return d;
}

static size_t count_ready(consmem_win *w)
{
    size_t n = 0;
    for (; w; w = w->next)
        n++;
    return n;
}

static int setup(void **state)
{
    (void)state;
    consmem_reset();
    consmem_limit(4194304, 262144);
    return 0;
}

/* A window is ready when its last member reports, with members sorted by rank, in order of completion. */
static void test_ready_when_complete(void **state)
{
    (void)state;
    const uint32_t g[] = {0, 1, 2};
    srv_cons_digest d = dig(5, 0, g, 3, 0, 42);
    assert_int_equal(consmem_add(7, 2, &d, 1, 1.0), 0);
    assert_int_equal(consmem_add(7, 0, &d, 1, 2.0), 0);
    assert_null(consmem_take());
    d.fold = 43;
    assert_int_equal(consmem_add(7, 1, &d, 1, 3.0), 1);
    consmem_win *w = consmem_take();
    assert_non_null(w);
    assert_null(w->next);
    assert_int_equal(w->run, 7);
    assert_int_equal(w->at.step, 5);
    assert_int_equal(w->n, 3);
    assert_int_equal(w->m[0].rank, 0);
    assert_int_equal(w->m[1].rank, 1);
    assert_int_equal(w->m[1].fold, 43);
    assert_int_equal(w->m[2].rank, 2);
    assert_true(w->commit_s == 3.0);
    assert_int_equal(w->n_listed, 3);
    consmem_free(w);
    size_t held, copies;
    uint64_t dropped;
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 0);
    assert_int_equal(copies, 0);
}

/* A rank that reports a window twice counts once, with its first digest: the window waits for the other member. */
static void test_repeat_counts_once(void **state)
{
    (void)state;
    const uint32_t g[] = {3, 9};
    srv_cons_digest a = dig(1, 2, g, 2, 0, 100), b = a;
    b.fold = 999;
    assert_int_equal(consmem_add(1, 3, &a, 1, 1.0), 0);
    assert_int_equal(consmem_add(1, 3, &b, 1, 1.0), 0);
    assert_null(consmem_take());
    assert_int_equal(consmem_add(1, 9, &a, 1, 2.0), 1);
    consmem_win *w = consmem_take();
    assert_int_equal(w->n, 2);
    assert_int_equal(w->m[0].rank, 3);
    assert_int_equal(w->m[0].fold, 100);
    consmem_free(w);
}

/* Windows of different runs, steps, groups and windows never mix. */
static void test_places_apart(void **state)
{
    (void)state;
    const uint32_t g[] = {0, 1}, h[] = {0, 2};
    srv_cons_digest d[] = {dig(1, 0, g, 2, 0, 1), dig(2, 0, g, 2, 0, 1), dig(1, 1, g, 2, 0, 1), dig(1, 0, h, 2, 0, 1)};
    assert_int_equal(consmem_add(1, 0, d, 4, 1.0), 0);
    assert_int_equal(consmem_add(2, 1, d, 4, 1.0), 0); /* another run */
    assert_null(consmem_take());
    assert_int_equal(consmem_add(1, 1, d, 3, 1.0), 3);
    assert_int_equal(consmem_add(1, 2, &d[3], 1, 1.0), 1);
    consmem_win *w = consmem_take();
    assert_int_equal(count_ready(w), 4);
    while (w) {
        consmem_win *next = w->next;
        assert_int_equal(w->run, 1);
        consmem_free(w);
        w = next;
    }
    size_t held, copies;
    uint64_t dropped;
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 4); /* run 2's four windows wait for their other members */
    assert_int_equal(copies, 4);
}

/* Members that name different sizes of one unlisted group: the window is not judged from memory. */
static void test_mixed_group_left(void **state)
{
    (void)state;
    srv_cons_digest a = dig(0, 0, NULL, 0, 100, 5), b = dig(0, 0, NULL, 0, 2, 5);
    assert_int_equal(consmem_add(1, 0, &a, 1, 1.0), 0);
    assert_int_equal(consmem_add(1, 1, &b, 1, 1.0), 0);
    assert_int_equal(consmem_add(1, 2, &b, 1, 1.0), 0);
    assert_null(consmem_take());
    size_t held, copies;
    uint64_t dropped;
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 1);
    assert_int_equal(copies, 0);
    assert_int_equal(consmem_expire(-1), 1);
}

/* A full table takes no more digests (counted), and a group too large is never held. */
static void test_limits(void **state)
{
    (void)state;
    consmem_limit(2, 100);
    const uint32_t g[] = {0, 1, 2};
    srv_cons_digest d = dig(0, 0, g, 3, 0, 5);
    consmem_add(1, 0, &d, 1, 1.0);
    consmem_add(1, 1, &d, 1, 1.0);
    assert_int_equal(consmem_add(1, 2, &d, 1, 1.0), 0);
    size_t held, copies;
    uint64_t dropped;
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(copies, 2);
    assert_int_equal(dropped, 1);
    consmem_reset();
    consmem_limit(100, 2); /* two windows at most: a third is not held */
    srv_cons_digest w3[] = {dig(0, 0, g, 3, 0, 5), dig(1, 0, g, 3, 0, 5), dig(2, 0, g, 3, 0, 5)};
    consmem_add(1, 0, w3, 3, 1.0);
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 2);
    assert_int_equal(dropped, 1);
    consmem_reset();
    srv_cons_digest big = dig(0, 0, NULL, 0, CONSMEM_GROUP_MAX + 1, 5);
    assert_int_equal(consmem_add(1, 0, &big, 1, 1.0), 0);
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 0);
}

/* Expiry drops what waited too long, and the table grows past its first buckets without losing a window. */
static void test_expire_and_grow(void **state)
{
    (void)state;
    const uint32_t g[] = {0, 1};
    for (int s = 0; s < 50000; s++) {
        srv_cons_digest d = dig(s, 0, g, 2, 0, 1);
        consmem_add(3, 0, &d, 1, 1.0);
    }
    size_t held, copies;
    uint64_t dropped;
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 50000);
    size_t ready = 0;
    for (int s = 0; s < 50000; s += 2) {
        srv_cons_digest d = dig(s, 0, g, 2, 0, 1);
        ready += consmem_add(3, 1, &d, 1, 1.0);
    }
    assert_int_equal(ready, 25000);
    for (consmem_win *w = consmem_take(), *next; w; w = next) {
        next = w->next;
        consmem_free(w);
    }
    assert_int_equal(consmem_expire(3600), 0);
    assert_int_equal(consmem_expire(-1), 25000);
    consmem_stats(&held, &copies, &dropped);
    assert_int_equal(held, 0);
    assert_int_equal(copies, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_ready_when_complete, setup),
        cmocka_unit_test_setup(test_repeat_counts_once, setup),
        cmocka_unit_test_setup(test_places_apart, setup),
        cmocka_unit_test_setup(test_mixed_group_left, setup),
        cmocka_unit_test_setup(test_limits, setup),
        cmocka_unit_test_setup(test_expire_and_grow, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

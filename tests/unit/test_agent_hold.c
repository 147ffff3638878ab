/* test_agent_hold.c - digest streaming's ring of held records: blocks per step, eviction to the spool past the memory
 * cap, the spool's cap, lookup by step, the exit spill, and each block a ready batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>

#include "agent/hold.h"
#include "agent/spool.h"
#include "common/record.h"

static char root[256];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/ls-test-hold-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* add_step - hold `n` records of `step` (seqs from *seq on), ~100 bytes framed each. */
static void add_step(hold_ring *h, const spool *sp, int64_t step, int n, uint64_t *seq)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof(name), "layers.%03d.grad.allreduce.out", i);
        rec_record r = {.seq = (*seq)++,
                        .step = step,
                        .nbytes = 4096,
                        .fp = (uint64_t)step * 1000 + (uint64_t)i,
                        .level = LS_LEVEL_COLLECTIVE,
                        .dtype = LS_F32,
                        .ndim = 1,
                        .shape = {1024},
                        .name = name,
                        .name_len = (uint16_t)strlen(name)};
        assert_int_equal(hold_add(h, &r, sp), 0);
    }
}

/* check_block - one copy is a held batch of `n` records of `step`, its batch_seq from its first seq. */
static void check_block(const hold_copy *c, int64_t step, int n, uint64_t first_seq)
{
    rec_reader rd;
    rec_record r;
    assert_int_equal(rec_reader_init(&rd, c->buf, c->len), 0);
    assert_int_equal(rd.hdr.kind, REC_KIND_BATCH);
    assert_true(rd.hdr.flags & REC_HDR_HELD);
    assert_int_equal(rd.hdr.rank, 3);
    assert_int_equal(rd.hdr.batch_seq, HOLD_SEQ_BASE + first_seq);
    int k = 0;
    while (rec_reader_next(&rd, &r) == 1) {
        assert_int_equal(r.step, step);
        assert_int_equal(r.seq, first_seq + (uint64_t)k);
        k++;
    }
    assert_int_equal(rd.status, REC_OK);
    assert_int_equal(k, n);
    rec_reader_release(&rd);
}

static long held_files(const spool *sp)
{
    DIR *d = opendir(sp->dir);
    long n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, SPOOL_HELD_PREFIX, strlen(SPOOL_HELD_PREFIX)) == 0;
    if (d)
        closedir(d);
    return n;
}

static void test_ring_memory_then_spool(void **state)
{
    (void)state;
    spool sp;
    char why[300];
    assert_int_equal(spool_open(&sp, root, "J.0", 3, NULL, why, sizeof(why)), 0);
    rec_header tmpl = {.rank = 3};
    snprintf(tmpl.job_id, sizeof(tmpl.job_id), "J");
    hold_ring h;
    hold_init(&h, &tmpl, 256 * 1024, 1 << 30); /* a step's block takes 16 KiB: some steps in memory */
    uint64_t seq = 0;
    for (int64_t step = 0; step < 40; step++)
        add_step(&h, &sp, step, 100, &seq);
    assert_int_equal(h.n_held, 4000);
    assert_int_equal(h.n_lost, 0);
    assert_true(h.mem <= 256 * 1024 + 32 * 1024); /* the open block on top of the cap */
    assert_true(held_files(&sp) >= 1);            /* the oldest steps went to the spool, several per file */
    assert_true(held_files(&sp) < 40);

    /* a recent step from memory, an old one from the spool; the open step is sent once the batch carrying the digest
     * that seals it was posted, never before (lockstepd would refuse records its digests do not account for) */
    hold_copy *c;
    assert_int_equal(hold_copy_step(&h, 38, -1, &c), 1);
    check_block(&c[0], 38, 100, 3800);
    hold_copies_free(c, 1);
    assert_int_equal(hold_copy_step(&h, 39, 100, &c), 0);
    hold_copies_free(c, 0);
    hold_seal(&h, &sp, 7);
    assert_int_equal(hold_copy_step(&h, 39, 6, &c), 0);
    hold_copies_free(c, 0);
    assert_int_equal(hold_copy_step(&h, 39, 7, &c), 1);
    check_block(&c[0], 39, 100, 3900);
    hold_copies_free(c, 1);
    assert_int_equal(hold_copy_step(&h, 2, 7, &c), 0);
    hold_copies_free(c, 0);
    assert_int_equal(hold_spool_step(&sp, 2, &c, why, sizeof(why)), 1);
    check_block(&c[0], 2, 100, 200);
    hold_copies_free(c, 1);
    assert_int_equal(hold_spool_step(&sp, 41, &c, why, sizeof(why)), 0);
    hold_copies_free(c, 0);

    /* a step recorded again later is a second block of that step */
    add_step(&h, &sp, 2, 5, &seq);
    hold_seal(&h, &sp, 8);
    assert_int_equal(hold_copy_step(&h, 2, 8, &c), 1);
    check_block(&c[0], 2, 5, 4000);
    hold_copies_free(c, 1);

    /* at exit every block is in the spool; the directory stays for them */
    assert_true(hold_spill_all(&h, &sp) > 0);
    assert_int_equal(h.mem, 0);
    for (int64_t step = 0; step < 40; step++) {
        assert_int_equal(hold_spool_step(&sp, step, &c, why, sizeof(why)), step == 2 ? 2 : 1);
        hold_copies_free(c, step == 2 ? 2 : 1);
    }
    assert_true(spool_has_held(&sp));
    assert_int_equal(spool_remove_dir(&sp), -1); /* held records are kept */
    hold_release(&h);
}

static void test_disk_cap_drops_oldest(void **state)
{
    (void)state;
    spool sp;
    char why[300];
    assert_int_equal(spool_open(&sp, root, "K.0", 3, NULL, why, sizeof(why)), 0);
    rec_header tmpl = {.rank = 3};
    hold_ring h;
    hold_init(&h, &tmpl, 32 * 1024, 120 * 1024);
    uint64_t seq = 0;
    for (int64_t step = 0; step < 60; step++)
        add_step(&h, &sp, step, 100, &seq);
    hold_copy *c;
    assert_int_equal(hold_spool_step(&sp, 0, &c, why, sizeof(why)), 0); /* the oldest are gone */
    hold_copies_free(c, 0);
    assert_true(h.disk <= 120 * 1024);
    hold_seal(&h, &sp, 0);
    assert_int_equal(hold_copy_step(&h, 59, 0, &c), 1); /* the newest are there */
    hold_copies_free(c, 1);
    hold_release(&h);
    spool_close(&sp);
}

static void test_without_spool_counts_losses(void **state)
{
    (void)state;
    rec_header tmpl = {.rank = 3};
    hold_ring h;
    hold_init(&h, &tmpl, 16 * 1024, 1 << 20);
    uint64_t seq = 0;
    for (int64_t step = 0; step < 10; step++)
        add_step(&h, NULL, step, 100, &seq);
    assert_true(h.n_lost > 0);
    assert_true(h.n_lost < 1000);
    assert_true(hold_spill_all(&h, NULL) <= 0);
    assert_int_equal(h.n_lost, 1000); /* nowhere to keep them: each one counted */
    hold_release(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_memory_then_spool),
        cmocka_unit_test(test_disk_cap_drops_oldest),
        cmocka_unit_test(test_without_spool_counts_losses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

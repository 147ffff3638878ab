/* test_agent_consensus.c - a rank's consensus windows (agent/conswin.h) and the digests the agent sends: a window
 * closes at its 64th place, a step change and the shutdown close the open ones, a key beyond the table gets no
 * place; the trace and the stream (records and digests modes) carry the same digests; the consensus mode records
 * consensus records and metrics only; ls_replica_fp of a buffer's fingerprint records what ls_replica of the buffer
 * does. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/conswin.h"
#include "agent/mode.h"
#include "cli/tracedir.h"
#include "common/consensus.h"
#include "common/fsutil.h"
#include "common/lsfp1.h"
#include "common/record.h"
#include "include/lockstep.h"

/* --- the window table alone ------------------------------------------------------------------------------------ */

static cw_digest got[64];
static uint32_t got_ranks[64][4];
static int n_got;

static void collect(void *arg, const cw_digest *d)
{
    (void)arg;
    assert_true(n_got < 64);
    got[n_got] = *d;
    memcpy(got_ranks[n_got], d->ranks, d->n_listed * sizeof(uint32_t));
    n_got++;
}

static rec_record rec_of(uint64_t fp)
{
    rec_record r;
    memset(&r, 0, sizeof(r));
    r.name = "mpi.allreduce";
    r.name_len = 13;
    r.fp = fp;
    r.nbytes = 8;
    return r;
}

/* add - place and fold one record of (step, key); its index. */
static uint32_t add(cw_table *t, int64_t step, uint64_t key, uint64_t fp)
{
    static const uint32_t ranks[4] = {3, 0, 2, 1};
    uint32_t idx = 0;
    assert_int_equal(cw_place(t, step, key, 4, ranks, 4, &idx, collect, NULL), 0);
    rec_record r = rec_of(fp);
    cw_fold(t, key, idx, &r, collect, NULL);
    return idx;
}

static void test_windows(void **state)
{
    (void)state;
    cw_table t;
    cw_init(&t);
    n_got = 0;
    uint64_t want0 = 0, want2 = 0;
    for (uint32_t i = 0; i < 130; i++) {
        assert_int_equal(add(&t, 5, 0xabc, 100 + i), i);
        rec_record r = rec_of(100 + i);
        if (i < 64)
            want0 = cons_fold(want0, &r, i);
        else if (i >= 128)
            want2 = cons_fold(want2, &r, i);
        assert_int_equal(n_got, i >= 127 ? 2 : i >= 63 ? 1 : 0); /* a window closes at its 64th place */
    }
    assert_int_equal(got[0].window, 0);
    assert_int_equal(got[0].n, CONS_WINDOW);
    assert_int_equal(got[0].step, 5);
    assert_true(got[0].key == 0xabc);
    assert_true(got[0].fold == want0);
    assert_int_equal(got[1].window, 1);
    /* the members, sorted */
    assert_int_equal(got[0].size, 4);
    assert_int_equal(got[0].n_listed, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(got_ranks[0][i], i);
    /* a step change closes the open window (2 records of window 2) and starts the new step at place 0 */
    assert_int_equal(add(&t, 6, 0xabc, 1), 0);
    assert_int_equal(n_got, 3);
    assert_int_equal(got[2].step, 5);
    assert_int_equal(got[2].window, 2);
    assert_int_equal(got[2].n, 2);
    assert_true(got[2].fold == want2);
    /* the shutdown closes the rest; nothing is left to close after it */
    cw_flush(&t, collect, NULL);
    assert_int_equal(n_got, 4);
    assert_int_equal(got[3].step, 6);
    assert_int_equal(got[3].n, 1);
    cw_flush(&t, collect, NULL);
    assert_int_equal(n_got, 4);
    cw_release(&t);
}

/* reserve - reserve the next place of (step, key); its index. */
static uint32_t reserve(cw_table *t, int64_t step, uint64_t key)
{
    static const uint32_t ranks[4] = {0, 1, 2, 3};
    uint32_t idx = 0;
    assert_int_equal(cw_reserve(t, step, key, 4, ranks, 4, &idx, collect, NULL), 0);
    return idx;
}

static void fill(cw_table *t, uint64_t key, uint32_t idx, uint64_t fp)
{
    rec_record r = rec_of(fp);
    cw_fill(t, key, idx, &r, collect, NULL);
}

/* Reserved places (nonblocking collectives): a window is sent once its places are all given and its reservations all
 * filled, in whatever order they complete, with the same digest as the same records folded in order; it waits past
 * its last place in the late list; a reservation given up or open at a flush voids its window (never sent). */
static void test_reservations(void **state)
{
    (void)state;
    cw_table t;
    cw_init(&t);
    n_got = 0;
    /* window 0: places 0..63, of which 5 and 63 reserved; 5 completes after everything else */
    uint64_t want = 0;
    uint32_t r5 = 0, r63 = 0;
    for (uint32_t i = 0; i < 64; i++) {
        rec_record r = rec_of(200 + i);
        want = cons_fold(want, &r, i);
        if (i == 5)
            r5 = reserve(&t, 1, 0x77);
        else if (i == 63)
            r63 = reserve(&t, 1, 0x77);
        else
            assert_int_equal(add(&t, 1, 0x77, 200 + i), i);
    }
    assert_int_equal(r5, 5);
    assert_int_equal(r63, 63);
    fill(&t, 0x77, r63, 263);
    assert_int_equal(n_got, 0); /* place 5 is still open */
    /* window 1 starts while place 5 is open: window 0 waits in the late list */
    uint32_t r64 = reserve(&t, 1, 0x77);
    assert_int_equal(r64, 64);
    assert_int_equal(t.n_late, 1);
    fill(&t, 0x77, r5, 205);
    assert_int_equal(n_got, 1);
    assert_int_equal(got[0].window, 0);
    assert_int_equal(got[0].n, CONS_WINDOW);
    assert_true(got[0].fold == want);
    assert_int_equal(t.n_late, 0);
    /* window 1: its reservation given up voids it; the flush sends nothing for it */
    assert_int_equal(add(&t, 1, 0x77, 1), 65);
    cw_void(&t, 0x77, r64);
    assert_int_equal(t.n_voided, 1);
    cw_flush(&t, collect, NULL);
    assert_int_equal(n_got, 1);
    /* a reservation still open at a flush (the step changed under it): its window is voided, the next step starts */
    uint32_t open = reserve(&t, 2, 0x77);
    add(&t, 2, 0x77, 2);
    assert_int_equal(add(&t, 3, 0x77, 3), 0);
    assert_int_equal(n_got, 1);
    assert_int_equal(t.n_voided, 2);
    fill(&t, 0x77, open, 9); /* the caller's epoch check keeps such fills away; a stray one changes nothing sent */
    cw_flush(&t, collect, NULL);
    assert_int_equal(n_got, 2); /* step 3's window */
    assert_int_equal(got[1].step, 3);
    assert_int_equal(got[1].n, 1);
    cw_release(&t);
}

static void test_keys_bounded(void **state)
{
    (void)state;
    cw_table t;
    cw_init(&t);
    n_got = 0;
    uint32_t idx;
    for (uint64_t k = 0; k < CW_KEYS_MAX; k++)
        assert_int_equal(cw_place(&t, 0, k * 0x9e3779b97f4a7c15ULL, 2, NULL, 0, &idx, collect, NULL), 0);
    assert_int_equal(cw_place(&t, 0, 7777, 2, NULL, 0, &idx, collect, NULL), -1); /* full: no place */
    assert_int_equal(t.n_refused, 1);
    assert_int_equal(cw_place(&t, 0, 0, 2, NULL, 0, &idx, collect, NULL), 0); /* a known key still gets one */
    assert_int_equal(idx, 1);
    /* the next step starts empty: the key refused before gets a place */
    assert_int_equal(cw_place(&t, 1, 7777, 2, NULL, 0, &idx, collect, NULL), 0);
    assert_int_equal(idx, 0);
    cw_release(&t);
}

/* --- through the agent: trace and stream ------------------------------------------------------------------------ */

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ls-test-cons-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char p[300];
    snprintf(p, sizeof(p), "%s/trace", dir);
    setenv("LOCKSTEP_TRACE_DIR", p, 1);
    snprintf(p, sizeof(p), "%s/spool", dir);
    setenv("LOCKSTEP_SPOOL_DIR", p, 1);
    setenv("LOCKSTEP_SERVER", "http://127.0.0.1:1", 1); /* nobody listens: every batch goes to the spool */
    setenv("LOCKSTEP_FLUSH_TIMEOUT", "1", 1);
    setenv("LOCKSTEP_MANIFEST", "0", 1);
    setenv("LOCKSTEP_RANK", "1", 1);
    setenv("LOCKSTEP_RANKS", "4", 1);
    setenv("LOCKSTEP_JOB_ID", "cons", 1);
    setenv("LOCKSTEP_TRACE", "ops", 1);
    unsetenv("LOCKSTEP_MODE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ls_shutdown();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* What a stream or a trace holds. */
typedef struct seen {
    int digests[4][3]; /* [step][window]: records the digest folds (0: none) */
    uint64_t folds[4][3];
    int places, plain, metrics;
    int step_digests[4]; /* records a step digest stands for, per step */
} seen;

static void tally(const rec_record *r, seen *s)
{
    rec_ext x;
    rec_ext_of(r, &x);
    if (r->flags & REC_CONSENSUS_DIGEST) {
        assert_true(r->step >= 0 && r->step < 4 && r->occurrence < 3);
        assert_int_equal(s->digests[r->step][r->occurrence], 0); /* one per window */
        s->digests[r->step][r->occurrence] = (int)r->nbytes;
        s->folds[r->step][r->occurrence] = r->fp;
        assert_true(x.has_comm && x.comm_size == 4 && x.comm_nlisted == 4 && x.comm_id == r->value);
    } else if (x.has_consensus) {
        s->places++;
    } else if (r->flags & REC_HAS_VALUE) {
        s->metrics++;
    } else if (r->flags & REC_STEP_DIGEST) {
        assert_true(r->step >= 0 && r->step < 4);
        s->step_digests[r->step] += (int)r->nbytes;
    } else {
        s->plain++;
    }
}

static void read_trace(seen *s)
{
    char p[300], why[512];
    snprintf(p, sizeof(p), "%s/trace", dir);
    td_run run;
    if (td_load(&run, p, why, sizeof(why)) < 0)
        fail_msg("cannot load the trace: %s", why);
    for (size_t i = 0; i < run.ranks[0].n; i++)
        tally(&run.ranks[0].recs[i], s);
    td_release(&run);
}

/* read_spool - the records of every batch file under the spool (held files are not streamed). */
static void read_spool(const char *d, seen *s)
{
    DIR *dh = opendir(d);
    assert_non_null(dh);
    struct dirent *e;
    while ((e = readdir(dh))) {
        char p[1024];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
        if (e->d_type == DT_DIR) {
            read_spool(p, s);
            continue;
        }
        if (!strstr(e->d_name, ".lsbatch"))
            continue;
        fs_blob b;
        assert_int_equal(fs_blob_load(&b, p), 0);
        rec_reader rd;
        assert_int_equal(rec_reader_init(&rd, b.data, b.len), 0);
        rec_record r;
        while (rec_reader_next(&rd, &r) == 1)
            tally(&r, s);
        assert_int_equal(rd.status, REC_OK);
        rec_reader_release(&rd);
        fs_blob_release(&b);
    }
    closedir(dh);
}

/* replica - ls_replica of v, or ls_replica_fp of its fingerprint (what ls_replica_device records). */
static int by_fp;
static int replica(const char *name, const double *v, size_t nbytes, const ls_comm *g)
{
    return by_fp ? ls_replica_fp(name, fp_lsfp1(v, nbytes), nbytes, LS_F64, g) : ls_replica(name, v, nbytes, LS_F64, g);
}

/* program - 70 replicas of the world at step 0 (windows 0 and 1), a tensor and a metric, 3 at step 1. */
static void program(void)
{
    if (ls_init() < 0)
        fail_msg("ls_init: %s", ls_last_error());
    double v[4] = {1, 2, 3, 4};
    for (int i = 0; i < 70; i++) {
        v[0] = i;
        assert_int_equal(replica("params", v, sizeof(v), NULL), 0);
    }
    int64_t shape[1] = {4};
    assert_int_equal(ls_tensor("layer.out", v, sizeof(v), LS_F64, 1, shape), 0);
    assert_int_equal(ls_metric("loss", 0.5), 0);
    ls_step_begin(1);
    int ranks[4] = {2, 0, 3, 1}; /* the world, listed out of order: the same key as NULL */
    ls_comm g = {4, ranks};
    for (int i = 0; i < 3; i++)
        assert_int_equal(replica("params", v, sizeof(v), &g), 0);
    ls_shutdown();
}

static void check_digests(const seen *s)
{
    assert_int_equal(s->digests[0][0], 64);
    assert_int_equal(s->digests[0][1], 6);
    assert_int_equal(s->digests[0][2], 0);
    assert_int_equal(s->digests[1][0], 3);
}

static void run_mode(const char *stream, seen *trace, seen *spool)
{
    char p[300];
    setenv("LOCKSTEP_STREAM", stream, 1);
    snprintf(p, sizeof(p), "cons-%s", stream);
    setenv("LOCKSTEP_JOB_ID", p, 1);
    program();
    memset(trace, 0, sizeof(*trace));
    memset(spool, 0, sizeof(*spool));
    read_trace(trace);
    snprintf(p, sizeof(p), "%s/spool", dir);
    read_spool(p, spool);
    check_digests(trace);
    check_digests(spool);
    assert_memory_equal(trace->folds, spool->folds, sizeof(trace->folds)); /* the same digests both ways */
}

static void test_stream_records(void **state)
{
    (void)state;
    seen t, s;
    run_mode("records", &t, &s);
    assert_int_equal(t.places, 73);
    assert_int_equal(s.places, 73); /* every record streamed */
    assert_int_equal(s.plain, 1);
}

static void test_stream_digests(void **state)
{
    (void)state;
    seen t, s;
    run_mode("digests", &t, &s);
    assert_int_equal(t.places, 73);
    assert_int_equal(s.places, 0); /* held back with the other records: lockstepd asks for them */
    assert_int_equal(s.plain, 0);
    assert_int_equal(s.step_digests[0], 71); /* 70 replicas and the tensor */
    assert_int_equal(s.step_digests[1], 3);  /* a step of consensus records only: its digest says it is held */
    assert_int_equal(s.metrics, 1);
}

static void test_consensus_mode(void **state)
{
    (void)state;
    setenv("LOCKSTEP_MODE", "consensus", 1);
    setenv("LOCKSTEP_STREAM", "records", 1);
    setenv("LOCKSTEP_JOB_ID", "cons-mode", 1);
    if (ls_init() < 0)
        fail_msg("ls_init: %s", ls_last_error());
    assert_int_equal(ls_enabled(LS_LEVEL_MODULE), 0); /* callers skip hashing what the mode leaves out */
    assert_int_equal(ls_enabled(LS_LEVEL_METRIC), 1);
    ls_shutdown();
    program();
    unsetenv("LOCKSTEP_MODE");
    seen t;
    memset(&t, 0, sizeof(t));
    read_trace(&t);
    check_digests(&t);
    assert_int_equal(t.places, 73);
    assert_int_equal(t.plain, 0); /* the tensor is not recorded */
    assert_int_equal(t.metrics, 1);
}

/* Reservations through the API (what the MPI wrappers of nonblocking collectives do): records take their step,
 * occurrence and consensus place when reserved, whatever order they are filled in; before a step change the
 * registered drain fills what is open, so its records stay in the step that started them; a ticket still open at a
 * step change (no drain) is left out, and its window is never sent. */
static ls_ticket open_tickets[4];
static int n_open_tickets, drained;
static const int world[4] = {0, 1, 2, 3};
static const ls_comm world_comm = {4, world};

static void fill_api(ls_ticket *t, uint64_t fp)
{
    int64_t shape[2] = {4, 1};
    assert_int_equal(ls_fill(t, "mpi.iallreduce", fp, 8, LS_F64, 2, shape, 0, NULL, NULL, &world_comm), 0);
}

static int drained_other;
static void drain_other(void)
{
    drained_other++;
}

static void drain_cb(void)
{
    drained++;
    for (int i = 0; i < n_open_tickets; i++)
        fill_api(&open_tickets[i], 40 + (uint64_t)i);
    n_open_tickets = 0;
}

static void test_reserve_api(void **state)
{
    (void)state;
    uint32_t w[4] = {0, 1, 2, 3};
    uint64_t key = cons_key(w, 4);
    setenv("LOCKSTEP_JOB_ID", "cons-reserve", 1);
    if (ls_init() < 0)
        fail_msg("ls_init: %s", ls_last_error());
    ls_on_step_change(drain_cb);
    ls_on_step_change(drain_other); /* the MPI and the NCCL wrappers each add theirs */
    ls_on_step_change(drain_cb);    /* once only */
    ls_ticket a, c, e;
    int64_t shape[2] = {4, 1};
    assert_int_equal(ls_reserve(LS_LEVEL_COLLECTIVE, "mpi.iallreduce", NULL, &world_comm, &key, &a), 1);
    assert_int_equal(ls_record_fp_consensus(LS_LEVEL_COLLECTIVE, "mpi.allreduce", 20, 8, LS_F64, 2, shape, 0, NULL,
                                            NULL, &world_comm, key),
                     0);
    assert_int_equal(ls_reserve(LS_LEVEL_COLLECTIVE, "mpi.iallreduce", NULL, &world_comm, &key, &c), 1);
    fill_api(&c, 30); /* completed first */
    fill_api(&a, 10);
    fill_api(&a, 99); /* a second fill of one ticket does nothing */
    assert_int_equal(ls_reserve(LS_LEVEL_COLLECTIVE, "mpi.iallreduce", NULL, &world_comm, &key, &open_tickets[0]), 1);
    n_open_tickets = 1;
    ls_step_begin(1); /* the drain fills it at step 0 */
    assert_int_equal(drained, 1);
    assert_int_equal(drained_other, 1);
    ls_on_step_change(NULL);
    assert_int_equal(ls_reserve(LS_LEVEL_COLLECTIVE, "mpi.iallreduce", NULL, &world_comm, &key, &e), 1);
    ls_step_begin(2); /* no drain: e is open across the change */
    fill_api(&e, 50);
    ls_shutdown();

    char p[300], why[512];
    snprintf(p, sizeof(p), "%s/trace", dir);
    td_run run;
    if (td_load(&run, p, why, sizeof(why)) < 0)
        fail_msg("cannot load the trace: %s", why);
    uint64_t want = 0;
    int n_iallreduce = 0, n_digests = 0;
    for (size_t i = 0; i < run.ranks[0].n; i++) {
        const rec_record *r = &run.ranks[0].recs[i];
        rec_ext x;
        rec_ext_of(r, &x);
        if (r->flags & REC_CONSENSUS_DIGEST) {
            n_digests++;
            assert_int_equal(r->step, 0);
            assert_int_equal(r->nbytes, 4);
            continue;
        }
        assert_int_equal(r->step, 0); /* e (step 1) is left out */
        assert_true(x.has_consensus);
        want = cons_fold(want, r, x.consensus_index);
        if (r->name_len == 14) { /* mpi.iallreduce: occurrence and place as reserved */
            n_iallreduce++;
            uint32_t occ = r->fp == 10 ? 0 : r->fp == 30 ? 1 : 2, place = r->fp == 10 ? 0 : r->fp == 30 ? 2 : 3;
            assert_int_equal(r->occurrence, occ);
            assert_int_equal(x.consensus_index, place);
        }
    }
    assert_int_equal(n_iallreduce, 3);
    assert_int_equal(n_digests, 1); /* step 0's window; step 1's, with e open, is never sent */
    for (size_t i = 0; i < run.ranks[0].n; i++)
        if (run.ranks[0].recs[i].flags & REC_CONSENSUS_DIGEST)
            assert_true(run.ranks[0].recs[i].fp == want);
    td_release(&run);
}

/* The consensus mode's rate: LOCKSTEP_CONSENSUS_EVERY's parsing, and which calls one in `every` samples: exactly
 * one in each block of `every`, at a position that turns with the block, so that every position of a repeating
 * pattern of calls is checked within every^2 calls. */
static void test_sampling(void **state)
{
    (void)state;
    assert_int_equal(mode_every_of(NULL), 1);
    assert_int_equal(mode_every_of(""), 1);
    assert_int_equal(mode_every_of("16"), 16);
    assert_int_equal(mode_every_of("1"), 1);
    assert_int_equal(mode_every_of("0"), 1);
    assert_int_equal(mode_every_of("-4"), 1);
    assert_int_equal(mode_every_of("8x"), 1);
    assert_int_equal(mode_every_of("1000001"), 1);
    assert_int_equal(mode_every_of("1000000"), 1000000);
    for (uint64_t c = 0; c < 100; c++)
        assert_true(mode_sampled(c, 1));
    for (unsigned every = 2; every <= 16; every++) {
        int at[16] = {0};
        for (uint64_t block = 0; block < 4 * every; block++) {
            int n = 0;
            for (uint64_t c = block * every; c < (block + 1) * every; c++)
                if (mode_sampled(c, every)) {
                    n++;
                    at[c % every] = 1;
                }
            assert_int_equal(n, 1);
        }
        for (unsigned pos = 0; pos < every; pos++)
            assert_true(at[pos]); /* a pattern of `every` calls a step has each of them checked in turn */
    }
    /* a program of 3 collectives a step at one in 4: each of the 3 is checked within 16 steps */
    int hit[3] = {0};
    for (uint64_t c = 0; c < 48; c++)
        if (mode_sampled(c, 4))
            hit[c % 3] = 1;
    assert_true(hit[0] && hit[1] && hit[2]);
}

static void test_replica_fp(void **state)
{
    (void)state;
    seen t[2], s[2];
    for (by_fp = 0; by_fp < 2; by_fp++) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/trace' '%s/spool'", dir, dir); /* each run its own trace */
        assert_int_equal(system(cmd), 0);
        run_mode("records", &t[by_fp], &s[by_fp]);
    }
    by_fp = 0;
    assert_int_equal(t[1].places, 73);
    assert_memory_equal(t[0].folds, t[1].folds, sizeof(t[0].folds));   /* the same records, the same digests */
    assert_int_equal(ls_replica_fp("params", 1, 8, LS_F64, NULL), -1); /* after shutdown: an error, no record */
    assert_int_equal(ls_replica_fp("params", 1, 8, (ls_dtype)99, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_reservations),
        cmocka_unit_test(test_keys_bounded),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test_setup_teardown(test_stream_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_digests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consensus_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replica_fp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_api, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

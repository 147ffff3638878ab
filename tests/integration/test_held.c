/* test_held.c - lockstepd integration: digest streaming's held records must answer the step digests they stand for:
 * records that do not are refused at ingest, counted, and never make a differing step agree. */
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
#include "common/recmatch.h"
#include "common/record.h"
#include "tests/integration/common.h"

#define STEPS 6
#define TENSORS 3              /* held back by the digest-streaming run; the loss goes in full */
#define DIFF_STEP 3            /* where the digest-streaming run really differs: tensor 1's fingerprint */
#define HELD_BASE (1ULL << 62) /* the agent's batch_seq of held blocks (agent/hold.h) */

static h_pg pg;
static h_srv srv;

static int setup(void **state)
{
    (void)state;
    if (h_pg_start(&pg) < 0)
        return -1;
    /* memory short of room would forget a group idle for 1 s (test_ends_after_a_pause_vouched) */
    const char *args[] = {"--db", pg.conninfo, "--memory-idle-s", "1", NULL};
    return h_srv_start(&srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return it_stop(&srv, &pg, NULL);
}

/* A batch stream under construction, with the header flags the harness's batches do not set. */
typedef struct stream {
    unsigned char buf[1 << 16];
    size_t len;
} stream;

static void stream_begin(stream *s, const char *run_id, uint64_t batch_seq, uint32_t flags)
{
    rec_header h;
    memset(&h, 0, sizeof(h));
    h.kind = REC_KIND_BATCH;
    h.batch_seq = batch_seq;
    h.flags = flags;
    snprintf(h.run_id, sizeof(h.run_id), "%s", run_id);
    snprintf(h.algo, sizeof(h.algo), "lsfp1");
    s->len = rec_header_size(&h);
    rec_header_encode(&h, s->buf);
}

static void stream_add(stream *s, const rec_record *r)
{
    size_t n = rec_encoded_size(r);
    assert_true(s->len + n <= sizeof(s->buf));
    assert_int_equal(rec_encode(r, s->buf + s->len), n);
    s->len += n;
}

static long stream_post(const stream *s, const char *run_id, char **resp)
{
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", srv.base, run_id);
    return h_http("POST", url, "application/x-lockstep", s->buf, s->len, NULL, resp);
}

/* Record `i` of `step` (0: the loss, 1..TENSORS: tensors), its name in `name`; `flip` changes its fingerprint. */
static rec_record record(int64_t step, int i, int flip, char name[32])
{
    rec_record r = {0};
    r.seq = (uint64_t)(step * 10 + i);
    r.step = step;
    if (i == 0) {
        double loss = 1.0 / (double)(step + 1);
        snprintf(name, 32, "loss");
        r.level = LS_LEVEL_METRIC;
        r.dtype = LS_F64;
        r.nbytes = 8;
        memcpy(&r.value, &loss, 8);
        r.flags = REC_HAS_VALUE;
        r.fp = fp_lsfp1(&loss, 8);
    } else {
        uint64_t key[2] = {(uint64_t)step, (uint64_t)i};
        snprintf(name, 32, "layer%d.out", i);
        r.level = LS_LEVEL_MODULE;
        r.dtype = LS_F32;
        r.ndim = 1;
        r.shape[0] = 1024;
        r.nbytes = 4096;
        r.fp = fp_lsfp1(key, sizeof(key)) ^ (flip ? 0x40 : 0);
    }
    r.name = name;
    r.name_len = (uint16_t)strlen(name);
    return r;
}

/* post_full_steps - every record of steps from..to-1 in one batch `seq`, as an agent that streams no digests does. */
static void post_full_steps(const char *run_id, uint64_t seq, int64_t from, int64_t to)
{
    stream s;
    stream_begin(&s, run_id, seq, 0);
    for (int64_t step = from; step < to; step++)
        for (int i = 0; i <= TENSORS; i++) {
            char name[32];
            rec_record r = record(step, i, 0, name);
            stream_add(&s, &r);
        }
    assert_int_equal(stream_post(&s, run_id, NULL), 200);
}

/* post_full - every record of every step in one batch. */
static void post_full(const char *run_id)
{
    post_full_steps(run_id, 0, 0, STEPS);
}

/* post_digest_steps - for steps from..to-1, in one batch `seq`, the losses in full and the step digest of the
 * tensors held back (tensor 1 of step `diff` differs from the full run's), as a digest-streaming agent does. */
static void post_digest_steps(const char *run_id, uint64_t seq, int64_t from, int64_t to, int64_t diff)
{
    stream s;
    stream_begin(&s, run_id, seq, 0);
    for (int64_t step = from; step < to; step++) {
        char name[32];
        rec_record loss = record(step, 0, 0, name);
        stream_add(&s, &loss);
        uint64_t x = 0;
        for (int i = 1; i <= TENSORS; i++) {
            rec_record r = record(step, i, step == diff && i == 1, name);
            x ^= rec_digest_term(&r);
        }
        rec_record d = {.seq = (uint64_t)(step * 10 + TENSORS),
                        .step = step,
                        .nbytes = TENSORS,
                        .fp = x,
                        .flags = REC_STEP_DIGEST,
                        .dtype = LS_BYTES,
                        .name = REC_STEP_DIGEST_NAME,
                        .name_len = sizeof(REC_STEP_DIGEST_NAME) - 1};
        stream_add(&s, &d);
    }
    assert_int_equal(stream_post(&s, run_id, NULL), 200);
}

/* post_digests - every step in one batch, DIFF_STEP differing. */
static void post_digests(const char *run_id)
{
    post_digest_steps(run_id, 0, 0, STEPS, DIFF_STEP);
}

/* post_held - held records of DIFF_STEP, tensors from..to, with tensor 1 as the run recorded it (`real`) or as
 * its twin did; returns the status, the reply's "error" into `why` when given. */
static long post_held(const char *run_id, int from, int to, int real, char *why, size_t cap)
{
    stream s;
    stream_begin(&s, run_id, HELD_BASE + (uint64_t)(DIFF_STEP * 10 + from), REC_HDR_HELD);
    for (int i = from; i <= to; i++) {
        char name[32];
        rec_record r = record(DIFF_STEP, i, real && i == 1, name);
        stream_add(&s, &r);
    }
    char *resp = NULL;
    long code = stream_post(&s, run_id, &resp);
    json_t *o = resp ? json_loads(resp, 0, NULL) : NULL;
    if (why)
        snprintf(why, cap, "%s", json_string_value(json_object_get(o, "error")) ?: "");
    json_decref(o);
    free(resp);
    return code;
}

/* ended - end rank 0; the steps lockstepd asks the rank for (send_steps) as a count, and the first in *first. */
static int ended(const char *run_id, long long *first)
{
    char path[256];
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/end", run_id);
    assert_int_equal(it_call(&srv, "POST", path, "{\"rank\": 0, \"exit_code\": 0}", NULL, &o), 200);
    json_t *want = json_object_get(o, "send_steps");
    int n = (int)json_array_size(want);
    *first = n ? json_integer_value(json_array_get(want, 0)) : -1;
    json_decref(o);
    return n;
}

static const char *status_of(const char *group, char *buf, size_t cap)
{
    char path[256];
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/twins/%s", group);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    snprintf(buf, cap, "%s", json_string_value(json_object_get(o, "status")) ?: "");
    json_decref(o);
    return buf;
}

/* twins - a full run and a digest-streaming one in `group`, both ended; the second is asked for DIFF_STEP. */
static void twins(const char *group, const char *job_a, const char *job_b, char *a, char *b)
{
    assert_int_equal(it_register(&srv, job_a, group, 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, job_b, group, 1, 0, NULL, b), 0);
    post_full(a);
    long long first;
    ended(a, &first);
    post_digests(b);
    int asked = ended(b, &first);
    for (int i = 0; i < 100 && asked == 0; i++) { /* the end compares at once; a busy look leaves it to the thread */
        usleep(50000);
        asked = ended(b, &first);
    }
    assert_int_equal(asked, 1);
    assert_int_equal(first, DIFF_STEP);
}

/* Held records that copy the twin's, answering a digest they do not reproduce, are refused and counted, and the
 * group never reads `match`; the run's own records, in two blocks, are taken and the group diverges where it
 * really differs. */
static void test_forged_held_refused(void **state)
{
    (void)state;
    char a[40], b[40], why[200], st[32];
    twins("t-held", "9100", "9101", a, b);
    double before = it_metric(&srv, "lockstepd_held_records_refused_total{at=\"ingest\"}", NULL);
    assert_int_equal(post_held(b, 1, TENSORS, 0, why, sizeof(why)), 409);
    assert_string_equal(why, "held records do not answer their step digest");
    assert_true(it_metric(&srv, "lockstepd_held_records_refused_total{at=\"ingest\"}", NULL) >= before + 1);
    /* one record too many, even if they were the run's own */
    stream s;
    stream_begin(&s, b, HELD_BASE + 999, REC_HDR_HELD);
    for (int i = 1; i <= TENSORS + 1; i++) {
        char name[32];
        rec_record r = record(DIFF_STEP, i <= TENSORS ? i : 1, i == 1, name);
        r.seq = (uint64_t)(DIFF_STEP * 10 + i);
        stream_add(&s, &r);
    }
    assert_int_equal(stream_post(&s, b, NULL), 409);
    usleep(500000);
    assert_string_equal(status_of("t-held", st, sizeof(st)), "pending");
    /* the real records, the first of them alone (a part is taken), then the rest, then a replay of the first */
    assert_int_equal(post_held(b, 1, 1, 1, NULL, 0), 200);
    assert_int_equal(post_held(b, 2, TENSORS, 1, NULL, 0), 200);
    assert_int_equal(post_held(b, 1, 1, 1, NULL, 0), 200);
    json_t *o = it_wait_group(&srv, "t-held", "diverged");
    assert_non_null(o);
    json_t *fd = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), DIFF_STEP);
    assert_string_equal(json_string_value(json_object_get(fd, "name")), "layer1.out");
    json_decref(o);
}

/* A part of the twin's records first (taken: it may be the start of the answer), then the rest of them: the
 * rest is refused, since together they do not reproduce the digest. */
static void test_forged_in_parts(void **state)
{
    (void)state;
    char a[40], b[40], st[32];
    twins("t-held-parts", "9200", "9201", a, b);
    assert_int_equal(post_held(b, 1, 1, 0, NULL, 0), 200);
    assert_int_equal(post_held(b, 2, TENSORS, 0, NULL, 0), 409);
    usleep(500000);
    assert_string_equal(status_of("t-held-parts", st, sizeof(st)), "pending");
}

/* Records stored for a step that do not reproduce its digest (as two held batches of one step stored at once
 * could leave them, each checked without the other): the comparison does not take the step as agreeing. */
static void test_stored_mismatch_not_compared(void **state)
{
    (void)state;
    char a[40], b[40], st[32], q[600];
    twins("t-held-stored", "9300", "9301", a, b);
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(q, sizeof(q),
             "INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames) "
             "SELECT (SELECT run_key FROM runs WHERE run_id = '%s'), rank, step, seq_lo, n, kind, frames "
             "FROM record_frames WHERE run_key = (SELECT run_key FROM runs WHERE run_id = '%s') AND step = %d "
             "AND kind = 0",
             b, a, DIFF_STEP);
    PGresult *r = PQexec(c, q);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    assert_string_equal(PQcmdTuples(r), "1");
    PQclear(r);
    PQfinish(c);
    double before = it_metric(&srv, "lockstepd_held_records_refused_total{at=\"compare\"}", NULL);
    long long first;
    ended(b, &first); /* compares the rank again at once */
    usleep(500000);
    assert_string_equal(status_of("t-held-stored", st, sizeof(st)), "pending");
    assert_true(it_metric(&srv, "lockstepd_held_records_refused_total{at=\"compare\"}", NULL) >= before + 1);
}

/* While both runs still run, the step digests that differ are said at once, on their rank and step: the group's
 * reason says so (not that the runs agree so far) and awaiting_records names the step, the commit that showed
 * the difference and how long after it lockstepd asked; the records, once sent, say where and why. */
static void test_running_difference_said_at_once(void **state)
{
    (void)state;
    char a[40], b[40];
    assert_int_equal(it_register(&srv, "9400", "t-held-live", 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, "9401", "t-held-live", 1, 0, NULL, b), 0);
    post_full(a);
    post_digests(b);
    json_t *o = NULL, *aw = NULL;
    for (int i = 0; i < 200 && !json_array_size(aw); i++) {
        json_decref(o);
        o = NULL;
        usleep(50000);
        assert_int_equal(it_call(&srv, "GET", "/api/v1/twins/t-held-live", NULL, NULL, &o), 200);
        aw = json_object_get(o, "awaiting_records");
    }
    assert_int_equal(json_array_size(aw), 1);
    json_t *e = json_array_get(aw, 0);
    assert_string_equal(json_string_value(json_object_get(e, "run_id")), b);
    assert_int_equal(json_integer_value(json_object_get(e, "rank")), 0);
    assert_int_equal(json_integer_value(json_object_get(e, "step")), DIFF_STEP);
    assert_true(json_is_string(json_object_get(e, "committed_at")));
    double ms = json_number_value(json_object_get(e, "detection_ms"));
    assert_true(ms >= 0 && ms < 10000);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "pending");
    const char *why = json_string_value(json_object_get(o, "status_reason"));
    assert_non_null(strstr(why, "digests show a difference on 1 rank:"));
    assert_null(strstr(why, "agree"));
    json_decref(o);
    assert_int_equal(post_held(b, 1, TENSORS, 1, NULL, 0), 200);
    o = it_wait_group(&srv, "t-held-live", "diverged");
    json_t *fd = json_object_get(o, "first_divergence");
    assert_int_equal(json_integer_value(json_object_get(fd, "step")), DIFF_STEP);
    assert_string_equal(json_string_value(json_object_get(fd, "name")), "layer1.out");
    assert_null(json_object_get(o, "awaiting_records"));
    json_decref(o);
}

/* side_by_side - a full run and a digest-streaming one in `group`, a batch a step each, while both run, so that the
 * comparison's memory holds both (tensor 1 of step `diff` differs; -1: none). */
static void side_by_side(const char *group, const char *job_a, const char *job_b, int64_t diff, char *a, char *b)
{
    assert_int_equal(it_register(&srv, job_a, group, 1, 0, NULL, a), 0);
    assert_int_equal(it_register(&srv, job_b, group, 1, 0, NULL, b), 0);
    for (int64_t step = 0; step < STEPS; step++) {
        post_full_steps(a, (uint64_t)step, step, step + 1);
        post_digest_steps(b, (uint64_t)step, step, step + 1, diff);
        usleep(300000); /* past a flush of memory (CMP_MEM_FLUSH_S), which marks the steps both completed */
    }
}

/* ends_vouched - end runs a and b of `group` (twins that agree): memory vouches for both ends, so no look runs before
 * either reply, and the group matches. */
static void ends_vouched(const char *group, const char *a, const char *b)
{
    const char *mem = "lockstepd_compare_ends_total{way=\"memory\"}";
    double before = it_metric(&srv, mem, NULL);
    assert_true(before >= 0);
    long long first;
    assert_int_equal(ended(a, &first), 0);
    assert_int_equal(ended(b, &first), 0);
    assert_true(it_metric(&srv, mem, NULL) >= before + 2);
    json_t *o = it_wait_group(&srv, group, "match");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "match");
    json_decref(o);
}

/* Twins that agree, ending: memory vouches for each end (the steps they complete are held alike, or not reached
 * yet by the twin that streams on), so no look runs before the reply, and the twins match. */
static void test_quiet_ends_vouched_by_memory(void **state)
{
    (void)state;
    char a[40], b[40];
    side_by_side("t-held-quiet", "9500", "9501", -1, a, b);
    ends_vouched("t-held-quiet", a, b);
}

/* Twins that agree and pause past memory_idle_s before they end (a checkpoint written, a slow teardown): memory,
 * not short of room, still holds their group while their ends are awaited, so it vouches for both ends as it would at
 * once; once both ended, memory_idle_s later it has forgotten the group. */
static void test_ends_after_a_pause_vouched(void **state)
{
    (void)state;
    char a[40], b[40];
    const char *held = "lockstepd_compare_memory_run_ranks";
    side_by_side("t-held-pause", "9700", "9701", -1, a, b);
    usleep(2500000); /* past --memory-idle-s 1, and several flushes of memory (the other tests' groups, ended, go) */
    double before = it_metric(&srv, held, NULL);
    assert_true(before >= 2); /* this group's two runs on its rank */
    ends_vouched("t-held-pause", a, b);
    usleep(2500000);
    assert_true(it_metric(&srv, held, NULL) <= before - 2);
}

/* Twins whose last step differs, both streaming: memory holds the difference, so the end of the run with held
 * records is looked at before its reply, which asks for that step's records while the agent still has them. */
static void test_last_step_asked_at_end(void **state)
{
    (void)state;
    char a[40], b[40];
    side_by_side("t-held-last", "9600", "9601", STEPS - 1, a, b);
    const char *look = "lockstepd_compare_ends_total{way=\"look\"}";
    double before = it_metric(&srv, look, NULL);
    long long first;
    ended(a, &first);
    int asked = ended(b, &first);
    assert_int_equal(asked, 1);
    assert_int_equal(first, STEPS - 1);
    assert_true(it_metric(&srv, look, NULL) >= before + 2); /* both ends: b holds the step as a does not */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forged_held_refused),          cmocka_unit_test(test_forged_in_parts),
        cmocka_unit_test(test_stored_mismatch_not_compared), cmocka_unit_test(test_running_difference_said_at_once),
        cmocka_unit_test(test_quiet_ends_vouched_by_memory), cmocka_unit_test(test_ends_after_a_pause_vouched),
        cmocka_unit_test(test_last_step_asked_at_end),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_consensus.c - lockstepd integration: each run checked against itself, with no twin. Four ranks post crafted
 * batches of collectives that carry the consensus field, and their consensus digests; lockstepd judges each window
 * once every member reported, stores the run's first disagreement (odd ranks by majority, the first differing
 * record, the attested node), asks agents that hold records back for them, and refuses malformed digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/consensus.h"
#include "common/crc32c.h"
#include "common/recmatch.h"
#include "common/record.h"
#include "tests/integration/common.h"

#define HELD_BASE (1ULL << 62) /* the agent's batch_seq of held blocks (agent/hold.h) */

static h_pg pg;
static h_srv srv, other;            /* `other`: a second lockstepd on the same database */
static const h_srv *post_to = &srv; /* where stream_post sends */
static char dir[256], admin_file[300];
static const char *ADMIN = "consensus-admin-token";

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ls-cons.XXXXXX");
    if (!mkdtemp(dir) || h_pg_start(&pg) < 0)
        return -1;
    snprintf(admin_file, sizeof(admin_file), "%s/admin", dir);
    it_write_file(admin_file, ADMIN, 0600);
    const char *args[] = {"--db", pg.conninfo, "--admin-token", admin_file, NULL};
    return h_srv_start(&srv, args) < 0 ? -1 : h_srv_start(&other, args);
}

static int teardown(void **state)
{
    (void)state;
    int st = h_srv_kill(&other, SIGTERM);
    h_srv_cleanup(&other);
    return it_stop(&srv, &pg, dir) | (st == 0 ? 0 : -1);
}

/* A batch stream of one rank under construction. */
typedef struct stream {
    unsigned char buf[1 << 18];
    size_t len;
} stream;

static void stream_begin(stream *s, const char *run_id, uint32_t rank, uint64_t batch_seq, uint32_t flags)
{
    rec_header h;
    memset(&h, 0, sizeof(h));
    h.kind = REC_KIND_BATCH;
    h.rank = rank;
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
    snprintf(url, sizeof(url), "%s/api/v1/runs/%s/records", post_to->base, run_id);
    return h_http("POST", url, "application/x-lockstep", s->buf, s->len, NULL, resp);
}

/* A group: its sorted world ranks and key. */
typedef struct group {
    uint32_t ranks[8];
    uint32_t n;
    uint64_t key;
} group;

static group group_of(uint32_t n)
{
    group g = {.n = n};
    for (uint32_t i = 0; i < n; i++)
        g.ranks[i] = i;
    g.key = cons_key(g.ranks, n);
    return g;
}

/* A collective's record: consensus place `index` of (step, key) on some rank, occurrence = index; `bad` changes
 * its output's fingerprint (the corrupt copy). `ext` holds its extension fields. */
static rec_record collective(const group *g, int64_t step, uint32_t index, int bad, uint64_t seq,
                             unsigned char ext[REC_EXT_ENCODED_MAX])
{
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_comm = 1;
    x.comm_size = g->n;
    x.comm_nlisted = g->n;
    memcpy(x.comm_ranks, g->ranks, g->n * sizeof(uint32_t));
    x.comm_id = rec_comm_id(g->ranks, g->n);
    x.has_consensus = 1;
    x.consensus_key = g->key;
    x.consensus_index = index;
    rec_record r = {0};
    r.seq = seq;
    r.step = step;
    r.level = LS_LEVEL_COLLECTIVE;
    r.dtype = LS_F32;
    r.ndim = 1;
    r.shape[0] = 256;
    r.nbytes = 1024;
    r.fp = 0x1234567800000000ULL + (uint64_t)step * 1000 + index + (bad ? 0x40 : 0);
    r.occurrence = index;
    r.name = "mpi.allreduce";
    r.name_len = 13;
    r.site =
        (rec_site){.offset = 0x1a2b, .module = "train", .module_len = 5, .function = "train_step", .function_len = 10};
    r.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    r.ext = ext;
    return r;
}

/* A consensus digest of window `win` of (step, key): `n` records folding to `fold`. */
static rec_record digest(const group *g, int64_t step, uint32_t win, uint32_t n, uint64_t fold, uint64_t seq,
                         unsigned char ext[REC_EXT_ENCODED_MAX])
{
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_comm = 1;
    x.comm_size = g->n;
    x.comm_nlisted = g->n <= REC_COMM_LIST_MAX ? g->n : 0;
    memcpy(x.comm_ranks, g->ranks, x.comm_nlisted * sizeof(uint32_t));
    x.comm_id = g->key;
    rec_record d = {0};
    d.seq = seq;
    d.step = step;
    d.nbytes = n;
    d.fp = fold;
    d.value = g->key;
    d.occurrence = win;
    d.flags = REC_CONSENSUS_DIGEST;
    d.dtype = LS_BYTES;
    d.name = REC_CONSENSUS_DIGEST_NAME;
    d.name_len = sizeof(REC_CONSENSUS_DIGEST_NAME) - 1;
    d.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    d.ext = ext;
    return d;
}

/* What one rank posts of one step: `count` collectives of group `g` from place `from`, place `bad_at` corrupt
 * (-1: none), then the digests of the windows they fill. `held`: the records are held back (digest streaming): a
 * step digest stands for them. Returns the HTTP status. */
static long post_step(const char *run_id, const group *g, uint32_t rank, int64_t step, uint32_t from, uint32_t count,
                      int bad_at, int held, uint64_t bseq)
{
    static stream s;
    static unsigned char ext[2 * 256][REC_EXT_ENCODED_MAX];
    stream_begin(&s, run_id, rank, bseq, 0);
    uint64_t fold[8] = {0}, term = 0, seq = (uint64_t)step * 100000 + from + 1;
    uint32_t cnt[8] = {0};
    for (uint32_t i = from; i < from + count; i++) {
        rec_record r = collective(g, step, i, (int)i == bad_at, seq++, ext[i - from]);
        fold[i / CONS_WINDOW] = cons_fold(fold[i / CONS_WINDOW], &r, i);
        cnt[i / CONS_WINDOW]++;
        term ^= rec_digest_term(&r);
        if (!held)
            stream_add(&s, &r);
    }
    if (held) {
        rec_record sd = {.seq = seq++,
                         .step = step,
                         .nbytes = count,
                         .fp = term,
                         .flags = REC_STEP_DIGEST,
                         .dtype = LS_BYTES,
                         .name = REC_STEP_DIGEST_NAME,
                         .name_len = sizeof(REC_STEP_DIGEST_NAME) - 1};
        stream_add(&s, &sd);
    }
    for (uint32_t w = 0; w < 8; w++)
        if (cnt[w]) {
            rec_record d = digest(g, step, w, cnt[w], fold[w], seq++, ext[256 + w]);
            stream_add(&s, &d);
        }
    return stream_post(&s, run_id, NULL);
}

/* post_held - the held records of `step` of `rank` (as post_step made them), sent on demand. */
static long post_held(const char *run_id, const group *g, uint32_t rank, int64_t step, uint32_t count, int bad_at)
{
    static stream s;
    static unsigned char ext[256][REC_EXT_ENCODED_MAX];
    stream_begin(&s, run_id, rank, HELD_BASE + (uint64_t)step, REC_HDR_HELD);
    uint64_t seq = (uint64_t)step * 100000 + 1;
    for (uint32_t i = 0; i < count; i++) {
        rec_record r = collective(g, step, i, (int)i == bad_at, seq++, ext[i]);
        stream_add(&s, &r);
    }
    return stream_post(&s, run_id, NULL);
}

/* consensus - GET the run's consensus (a new object). */
static json_t *consensus(const char *run_id)
{
    char path[256];
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/consensus", run_id);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    return o;
}

/* wait_for - the run's consensus once `ok` holds of it (within 10 s), else the last one read. */
static json_t *wait_for(const char *run_id, int (*ok)(const json_t *))
{
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = consensus(run_id);
        if (ok(o))
            break;
        usleep(50000);
    }
    return o;
}

static const char *status(const json_t *o)
{
    return json_string_value(json_object_get(o, "status"));
}

static long long checked(const json_t *o)
{
    return json_integer_value(json_object_get(o, "checked"));
}

static json_t *first(const json_t *o)
{
    return json_object_get(o, "first");
}

static int named(const json_t *o)
{
    const char *n = json_string_value(json_object_get(first(o), "name"));
    return n && n[0];
}

/* wait_checked - the run's consensus once it checked `n` windows or more (within 10 s), else the last one read. */
static json_t *wait_checked(const char *run_id, long long n)
{
    json_t *o = NULL;
    for (int i = 0; i < 200; i++) {
        json_decref(o);
        o = consensus(run_id);
        if (checked(o) >= n)
            break;
        usleep(50000);
    }
    return o;
}

static int disagrees(const json_t *o)
{
    return !strcmp(status(o), "disagree") && named(o);
}

/* ints - a JSON array of integers as text, "0,1,2". */
static const char *ints(const json_t *a, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(a) && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "",
                              (long long)json_integer_value(json_array_get(a, i)));
    return buf;
}

/* A job in the production mode registers as `consensus` (longer than the other mode names); an unknown mode is
 * refused with the list of the known ones. */
static void test_consensus_mode_registers(void **state)
{
    (void)state;
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs",
                             "{\"job_id\": \"7010\", \"ranks\": 2, \"user\": \"bob\", \"mode\": \"consensus\"}", NULL,
                             &o),
                     201);
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/runs/%s", json_string_value(json_object_get(o, "run_id")));
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "mode")), "consensus");
    json_decref(o);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/runs",
                             "{\"job_id\": \"7011\", \"ranks\": 2, \"user\": \"bob\", \"mode\": \"consensual\"}", NULL,
                             &o),
                     400);
    json_decref(o);
}

/* Four ranks agree on three steps of four collectives: "agree", three windows checked, nothing first. */
static void test_agree(void **state)
{
    (void)state;
    char run[40];
    group g = group_of(4);
    assert_int_equal(it_register(&srv, "7001", NULL, 4, 0, NULL, run), 0);
    json_t *o = consensus(run);
    assert_string_equal(status(o), "none");
    assert_true(json_is_null(first(o)));
    assert_non_null(strstr(json_string_value(json_object_get(o, "why")), "no consensus digest came"));
    json_decref(o);
    assert_int_equal(post_step(run, &g, 0, 1, 0, 4, -1, 0, 1), 200); /* one member of four: nothing to judge yet */
    o = consensus(run);
    assert_string_equal(status(o), "none");
    assert_non_null(strstr(json_string_value(json_object_get(o, "why")), "no window is complete yet"));
    json_decref(o);
    for (uint32_t r = 0; r < 4; r++)
        for (int64_t step = 1; step <= 3; step++)
            assert_int_equal(post_step(run, &g, r, step, 0, 4, -1, 0, (uint64_t)step), 200);
    o = wait_checked(run, 3);
    assert_string_equal(status(o), "agree");
    assert_int_equal(checked(o), 3);
    assert_true(json_is_null(first(o)));
    json_decref(o);
    /* the run's own page says the same */
    char path[256];
    snprintf(path, sizeof(path), "/api/v1/runs/%s", run);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    assert_string_equal(status(json_object_get(o, "consensus")), "agree");
    json_decref(o);
}

/* Rank 2's third collective of step 5 differs, and rank 1's first of step 7; step 7 arrives first, then step 5:
 * the first disagreement is step 5's, rank 2 alone is odd, its record named with its occurrence and call site,
 * its attested node and its node's one GPU beside it. */
static void test_one_odd_rank(void **state)
{
    (void)state;
    char run[40], buf[64];
    group g = group_of(4);
    assert_int_equal(it_register(&srv, "7002", NULL, 4, 0, NULL, run), 0);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/attest",
                             "{\"job_id\": \"7002\", \"node\": \"n1\", \"ranks\": [0, 1], \"user\": \"alice\", "
                             "\"gpus\": \"0,1\"}",
                             ADMIN, NULL),
                     200);
    assert_int_equal(it_call(&srv, "POST", "/api/v1/attest",
                             "{\"job_id\": \"7002\", \"node\": \"n2\", \"ranks\": [2], \"user\": \"alice\", "
                             "\"gpus\": \"3\"}",
                             ADMIN, NULL),
                     200);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 7, 0, 4, r == 1 ? 0 : -1, 0, 7), 200);
    json_t *o = wait_for(run, disagrees);
    assert_int_equal(json_integer_value(json_object_get(first(o), "step")), 7);
    assert_string_equal(ints(json_object_get(first(o), "odd_ranks"), buf, sizeof(buf)), "1");
    json_decref(o);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 5, 0, 4, r == 2 ? 2 : -1, 0, 5), 200);
    for (int i = 0; i < 200; i++) {
        o = consensus(run);
        if (json_integer_value(json_object_get(first(o), "step")) == 5 && named(o))
            break;
        json_decref(o);
        o = NULL;
        usleep(50000);
    }
    assert_non_null(o);
    json_t *f = first(o);
    assert_string_equal(status(o), "disagree");
    assert_int_equal(checked(o), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "step")), 5);
    assert_string_equal(json_string_value(json_object_get(f, "name")), "mpi.allreduce");
    assert_int_equal(json_integer_value(json_object_get(f, "occurrence")), 2);
    assert_string_equal(ints(json_object_get(f, "comm_ranks"), buf, sizeof(buf)), "0,1,2,3");
    assert_string_equal(ints(json_object_get(f, "odd_ranks"), buf, sizeof(buf)), "2");
    assert_true(json_is_true(json_object_get(f, "clear")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(f, "site"), "function")), "train_step");
    assert_string_equal(json_string_value(json_object_get(f, "node")), "n2");
    assert_string_equal(json_string_value(json_object_get(f, "gpu")), "3");
    json_decref(o);
}

/* Two ranks that differ: no majority, both are "one of these"; no node is blamed. */
static void test_two_ranks(void **state)
{
    (void)state;
    char run[40], buf[64];
    group g = group_of(2);
    assert_int_equal(it_register(&srv, "7003", NULL, 2, 0, NULL, run), 0);
    assert_int_equal(post_step(run, &g, 0, 1, 0, 3, -1, 0, 1), 200);
    assert_int_equal(post_step(run, &g, 1, 1, 0, 3, 1, 0, 1), 200);
    json_t *o = wait_for(run, disagrees);
    json_t *f = first(o);
    assert_string_equal(status(o), "disagree");
    assert_string_equal(ints(json_object_get(f, "odd_ranks"), buf, sizeof(buf)), "0,1");
    assert_true(json_is_false(json_object_get(f, "clear")));
    assert_int_equal(json_integer_value(json_object_get(f, "occurrence")), 1);
    assert_true(json_is_null(json_object_get(f, "node")));
    json_decref(o);
}

/* A program without steps: every record at step 0. Windows are judged as they fill, before the run ends: window 0
 * agrees, window 1 (places 64..127) holds rank 3's corrupt place 70. */
static void test_step_zero_windows(void **state)
{
    (void)state;
    char run[40], buf[64];
    group g = group_of(4);
    assert_int_equal(it_register(&srv, "7004", NULL, 4, 0, NULL, run), 0);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 0, 0, 64, -1, 0, 1), 200);
    json_t *o = wait_checked(run, 1);
    assert_string_equal(status(o), "agree");
    assert_int_equal(checked(o), 1);
    json_decref(o);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 0, 64, 64, r == 3 ? 70 : -1, 0, 2), 200);
    o = wait_for(run, disagrees);
    json_t *f = first(o);
    assert_int_equal(checked(o), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "step")), 0);
    assert_int_equal(json_integer_value(json_object_get(f, "occurrence")), 70);
    assert_string_equal(ints(json_object_get(f, "odd_ranks"), buf, sizeof(buf)), "3");
    json_decref(o);
}

/* wanted - the steps lockstepd asked `rank` for, as text. */
static const char *wanted(const char *run_id, int rank, char *buf, size_t cap)
{
    char path[256];
    json_t *o = NULL;
    snprintf(path, sizeof(path), "/api/v1/runs/%s/wanted?rank=%d", run_id, rank);
    assert_int_equal(it_call(&srv, "GET", path, NULL, NULL, &o), 200);
    ints(json_object_get(o, "steps"), buf, cap);
    json_decref(o);
    return buf;
}

static int unnamed_disagree(const json_t *o)
{
    return !strcmp(status(o), "disagree");
}

/* Digest streaming: the records are held back, only step digests and consensus digests come. The disagreement is
 * stored at once with no name; lockstepd asks every member for the step's records; once they come the row names
 * the first differing record. */
static void test_held_records(void **state)
{
    (void)state;
    char run[40], buf[64];
    group g = group_of(4);
    assert_int_equal(it_register(&srv, "7005", NULL, 4, 0, NULL, run), 0);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 4, 0, 5, r == 0 ? 3 : -1, 1, 1), 200);
    json_t *o = wait_for(run, unnamed_disagree);
    assert_string_equal(status(o), "disagree");
    assert_string_equal(json_string_value(json_object_get(first(o), "name")), "");
    json_decref(o);
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < 100 && !wanted(run, r, buf, sizeof(buf))[0]; i++)
            usleep(50000);
        assert_string_equal(buf, "4");
    }
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_held(run, &g, r, 4, 5, r == 0 ? 3 : -1), 200);
    o = wait_for(run, disagrees);
    json_t *f = first(o);
    assert_string_equal(json_string_value(json_object_get(f, "name")), "mpi.allreduce");
    assert_int_equal(json_integer_value(json_object_get(f, "occurrence")), 3);
    assert_string_equal(ints(json_object_get(f, "odd_ranks"), buf, sizeof(buf)), "0");
    json_decref(o);
}

/* post_one - one crafted digest from `rank`; the HTTP status. */
static long post_one(const char *run_id, uint32_t rank, uint64_t bseq, const rec_record *d)
{
    static stream s;
    stream_begin(&s, run_id, rank, bseq, 0);
    stream_add(&s, d);
    return stream_post(&s, run_id, NULL);
}

/* post_size0 - digest `d` (a comm field of one member, unlisted) from `rank` with its comm size patched to 0 on the
 * wire (no encoder writes it; the frame's CRC made again); the HTTP status. */
static long post_size0(const char *run_id, uint32_t rank, uint64_t bseq, const rec_record *d)
{
    static stream s;
    stream_begin(&s, run_id, rank, bseq, 0);
    size_t at = s.len;
    stream_add(&s, d);
    const unsigned char field[] = {REC_X_COMM, 0, 16, 0, 1, 0, 0, 0};
    unsigned char *f = memmem(s.buf + at + 8, s.len - at - 8, field, sizeof(field));
    assert_non_null(f);
    memset(f + 4, 0, 4);
    uint32_t crc = crc32c(s.buf + at + 8, s.len - at - 8);
    memcpy(s.buf + at + 4, &crc, 4); /* little-endian, as the machines this runs on */
    return stream_post(&s, run_id, NULL);
}

/* Hostile digests: a group of 0 members or of millions, a rank outside its group, a key that is not its ranks':
 * refused; a digest sent twice counts once; a run beside them is judged as ever. */
static void test_hostile_digests(void **state)
{
    (void)state;
    char run[40], run2[40];
    unsigned char ext[REC_EXT_ENCODED_MAX];
    group g = group_of(4), three = {.ranks = {0, 1, 3}, .n = 3};
    three.key = cons_key(three.ranks, 3);
    assert_int_equal(it_register(&srv, "7006", NULL, 4, 0, NULL, run), 0);
    assert_int_equal(it_register(&srv, "7007", NULL, 4, 0, NULL, run2), 0);
    rec_record d = digest(&g, 1, 0, 4, 99, 1, ext);
    rec_ext x;
    memset(&x, 0, sizeof(x));
    x.has_comm = 1;
    x.comm_size = 1;
    x.comm_id = g.key;
    d.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    assert_int_equal(post_size0(run, 0, 1, &d), 400); /* no members */
    x.comm_size = 5000000;
    d.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    assert_int_equal(post_one(run, 0, 2, &d), 400); /* millions */
    d = digest(&three, 1, 0, 4, 99, 1, ext);
    assert_int_equal(post_one(run, 2, 3, &d), 400); /* rank 2 is not of {0, 1, 3} */
    d = digest(&g, 1, 0, 4, 99, 1, ext);
    d.value = three.key;
    assert_int_equal(post_one(run, 0, 4, &d), 400); /* a key that is not its ranks' */
    d = digest(&g, 1, 0, 0, 99, 1, ext);
    assert_int_equal(post_one(run, 0, 5, &d), 400); /* folds nothing */
    /* duplicates: twice in one batch, and again in a later one after the window was judged */
    for (uint32_t r = 0; r < 4; r++) {
        static stream s;
        unsigned char e1[REC_EXT_ENCODED_MAX], e2[REC_EXT_ENCODED_MAX];
        stream_begin(&s, run, r, 10, 0);
        rec_record a = digest(&g, 2, 0, 4, 1234, 1, e1), b = digest(&g, 2, 0, 4, r == 3 ? 999 : 1234, 2, e2);
        stream_add(&s, &a);
        stream_add(&s, &b); /* rank 3's second word differs: the first counts */
        assert_int_equal(stream_post(&s, run, NULL), 200);
    }
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run2, &g, r, 1, 0, 4, -1, 0, 1), 200);
    json_t *o = wait_checked(run, 1);
    assert_string_equal(status(o), "agree");
    assert_int_equal(checked(o), 1);
    json_decref(o);
    d = digest(&g, 2, 0, 4, 1234, 3, ext);
    assert_int_equal(post_one(run, 0, 11, &d), 200); /* the judged window again: a lone copy, never complete */
    usleep(300000);
    o = consensus(run);
    assert_int_equal(checked(o), 1);
    json_decref(o);
    o = wait_checked(run2, 1);
    assert_string_equal(status(o), "agree");
    assert_int_equal(checked(o), 1);
    json_decref(o);
}

/* scalar - one value of `sql` on PostgreSQL, as text into `out`. */
static const char *scalar(PGconn *c, const char *sql, char *out, size_t cap)
{
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return out;
}

/* The digests stay beside their step digests; answered requests go; the sweep's look moves the runs' swept marks
 * (their ranks reported, so no window before can still fill); judged windows' rows go with retention when no mark
 * reached them. */
static void test_retention(void **state)
{
    (void)state;
    char v[64];
    PGconn *c = PQconnectdb(pg.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    assert_true(atoi(scalar(c, "SELECT count(*) FROM step_consensus", v, sizeof(v))) > 0);
    /* the held records' requests went once the divergence was finished */
    assert_string_equal(scalar(c, "SELECT count(*) FROM record_requests", v, sizeof(v)), "0");
    int marked = 0;
    for (int i = 0; i < 300 && !marked; i++) { /* a sweep every 10 s */
        marked = atoi(scalar(c, "SELECT count(*) FROM consensus_runs WHERE swept_upto IS NOT NULL", v, sizeof(v)));
        if (!marked)
            usleep(100000);
    }
    assert_true(marked > 0);
    PQclear(PQexec(c, "UPDATE consensus_judged SET judged_on = '2020-01-01'"));
    scalar(c, "SELECT lockstep_drop_partitions(30)", v, sizeof(v));
    /* the old ones: lockstepd may judge a window of its own in the meantime, dated today */
    assert_string_equal(scalar(c, "SELECT count(*) FROM consensus_judged WHERE judged_on = '2020-01-01'", v, sizeof(v)),
                        "0");
    assert_string_equal(scalar(c, "SELECT count(*) FROM consensus_runs WHERE checked > 0", v, sizeof(v)), "7");
    PQfinish(c);
}

/* The fleet's list: the four runs that disagreed, newest first, each with its first place and odd ranks. */
static void test_fleet_list(void **state)
{
    (void)state;
    json_t *o = NULL;
    assert_int_equal(it_call(&srv, "GET", "/api/v1/consensus?limit=10", NULL, NULL, &o), 200);
    json_t *items = json_object_get(o, "items");
    assert_int_equal(json_array_size(items), 4);
    static const char *const jobs[] = {"7005", "7004", "7003", "7002"};
    for (size_t i = 0; i < 4; i++) {
        json_t *x = json_array_get(items, i);
        assert_string_equal(json_string_value(json_object_get(x, "job_id")), jobs[i]);
        assert_true(json_array_size(json_object_get(x, "odd_ranks")) >= 1);
    }
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 3), "node")), "n2");
    json_decref(o);
    assert_int_equal(it_call(&srv, "GET", "/api/v1/consensus?limit=0", NULL, NULL, NULL), 400);
}

/* A window half reported when lockstepd is killed: the new lockstepd holds only its other half in memory, and its
 * sweep judges the window from the database (the odd rank found, counted once). Windows complete in memory on
 * either side of the restart are judged as they complete. */
static void test_restart_mid_window(void **state)
{
    (void)state;
    char run[40], buf[64];
    group g = group_of(4);
    assert_int_equal(it_register(&srv, "7006", NULL, 4, 0, NULL, run), 0);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 1, 0, 4, -1, 0, 1), 200);
    json_t *o = wait_checked(run, 1);
    assert_int_equal(checked(o), 1);
    json_decref(o);
    double held = it_metric(&srv, "lockstepd_consensus_windows_held", NULL),
           digests = it_metric(&srv, "lockstepd_consensus_digests_held", NULL); /* other tests' incomplete windows */
    for (uint32_t r = 0; r < 2; r++)
        assert_int_equal(post_step(run, &g, r, 2, 0, 4, r == 1 ? 3 : -1, 0, 2), 200);
    assert_true(it_metric(&srv, "lockstepd_consensus_windows_held", NULL) == held + 1);
    assert_true(it_metric(&srv, "lockstepd_consensus_digests_held", NULL) == digests + 2);
    assert_int_equal(h_srv_kill(&srv, 9), 128 + 9);
    const char *args[] = {"--db", pg.conninfo, "--admin-token", admin_file, NULL};
    assert_int_equal(h_srv_restart(&srv, args), 0);
    for (uint32_t r = 2; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 2, 0, 4, -1, 0, 2), 200);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(post_step(run, &g, r, 3, 0, 4, -1, 0, 3), 200);
    o = NULL;
    for (int i = 0; i < 500 && !(o && checked(o) >= 3 && disagrees(o)); i++) { /* the sweep comes within 10 s */
        json_decref(o);
        o = consensus(run);
        usleep(50000);
    }
    assert_string_equal(status(o), "disagree");
    assert_int_equal(checked(o), 3);
    assert_int_equal(json_integer_value(json_object_get(first(o), "step")), 2);
    assert_string_equal(ints(json_object_get(first(o), "odd_ranks"), buf, sizeof(buf)), "1");
    assert_int_equal(json_integer_value(json_object_get(first(o), "occurrence")), 3);
    json_decref(o);
}

/* A run's ranks post through two lockstepd: the first to store one of its batches holds the run's consensus lease,
 * the other forwards it its consensus digests, so the holder's memory holds every window whole and judges it there
 * (the database's look, every 10 s, is for what memory cannot hold). */
static void test_two_instances(void **state)
{
    (void)state;
    char run[40], buf[64];
    group g = group_of(4);
    assert_int_equal(it_register(&srv, "7008", NULL, 4, 0, NULL, run), 0);
    double got0 = it_metric(&srv, "lockstepd_compare_forward_received_total", NULL),
           sent0 = it_metric(&other, "lockstepd_compare_forwarded_total", NULL),
           digests = it_metric(&srv, "lockstepd_consensus_digests_held", NULL);
    for (uint32_t r = 0; r < 3; r++) { /* ranks 0 and 1 through srv (which takes the lease), rank 2 through other */
        post_to = r < 2 ? &srv : &other;
        assert_int_equal(post_step(run, &g, r, 1, 0, 4, -1, 0, 1), 200);
    }
    post_to = &srv;
    int i;
    for (i = 0; i < 100 && it_metric(&srv, "lockstepd_consensus_digests_held", NULL) < digests + 3; i++)
        usleep(20000); /* the forward arrives within the sender's 20 ms and the notification's delivery */
    assert_true(i < 100);
    char sql[160], owner[200] = "";
    snprintf(sql, sizeof(sql),
             "SELECT l.owner FROM group_leases l JOIN runs r ON l.twin_group = 'consensus' || chr(9) || r.run_key "
             "WHERE r.run_id = '%s'",
             run);
    PGconn *c = PQconnectdb(pg.conninfo);
    PGresult *q = PQexec(c, sql);
    if (PQresultStatus(q) == PGRES_TUPLES_OK && PQntuples(q) == 1)
        snprintf(owner, sizeof(owner), "%s", PQgetvalue(q, 0, 0));
    PQclear(q);
    PQfinish(c);
    snprintf(buf, sizeof(buf), ":%d", srv.port);
    assert_true(strlen(owner) > strlen(buf) && !strcmp(owner + strlen(owner) - strlen(buf), buf));
    post_to = &other;
    assert_int_equal(post_step(run, &g, 3, 1, 0, 4, -1, 0, 1), 200);
    for (int64_t step = 2; step <= 3; step++)
        for (uint32_t r = 0; r < 4; r++) {
            post_to = r % 2 ? &other : &srv;
            assert_int_equal(post_step(run, &g, r, step, 0, 4, r == 3 && step == 2 ? 1 : -1, 0, (uint64_t)step), 200);
        }
    post_to = &srv;
    json_t *o = wait_checked(run, 3);
    assert_string_equal(status(o), "disagree");
    assert_int_equal(json_integer_value(json_object_get(first(o), "step")), 2);
    assert_string_equal(ints(json_object_get(first(o), "odd_ranks"), buf, sizeof(buf)), "3");
    json_decref(o);
    assert_true(it_metric(&other, "lockstepd_compare_forwarded_total", NULL) >= sent0 + 6);
    assert_true(it_metric(&srv, "lockstepd_compare_forward_received_total", NULL) >= got0 + 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consensus_mode_registers),
        cmocka_unit_test(test_agree),
        cmocka_unit_test(test_one_odd_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_step_zero_windows),
        cmocka_unit_test(test_held_records),
        cmocka_unit_test(test_hostile_digests),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_fleet_list),
        cmocka_unit_test(test_two_instances),
        cmocka_unit_test(test_restart_mid_window),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

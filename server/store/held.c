/* held.c - digest streaming: held records checked against the step digests they answer (server/store/held.h). */
#include "server/store/held.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

/* The most steps one batch of held records may carry: the agent sends one step a block. */
#define HELD_MAX_STEPS 64
#define HELD_MAX_STEPS_TEXT "64"

void store_held_register(void)
{
    db_register("held_replay", "SELECT 1 FROM batches WHERE run_key = $1 AND rank = $2 AND batch_seq = $3");
    db_register("held_digests", "SELECT d.step, d.n, d.digest FROM unnest($3::bigint[]) AS q(st) CROSS JOIN LATERAL "
                                "(SELECT step, n, digest FROM step_digests WHERE run_key = $1 AND rank = $2 "
                                "AND blk = lockstep_step_block(q.st) AND step = q.st OFFSET 0) d");
}

/* One step of a held batch: its records' count and XOR, and what the digest and the stored records say. */
typedef struct held_step {
    int64_t step;
    int64_t n;
    uint64_t x;
    int64_t n_digest; /* -1: no step digest */
    uint64_t digest;
} held_step;

/* steps_of - the steps of batch `b` with their records' counts and XORs, into `s` (at most HELD_MAX_STEPS).
 * Returns how many, or -1 when there are more. */
static int steps_of(const srv_batch *b, held_step *s)
{
    int n = 0;
    for (size_t i = 0; i < b->n; i++) {
        const rec_record *r = &b->recs[i];
        if (!rec_in_steps(r))
            continue;
        int k = 0;
        while (k < n && s[k].step != r->step)
            k++;
        if (k == n) {
            if (n == HELD_MAX_STEPS)
                return -1;
            s[n++] = (held_step){.step = r->step, .n_digest = -1};
        }
        s[k].n++;
        s[k].x ^= rec_digest_term(r);
    }
    return n;
}

/* replayed - 1 when the batch was stored before (its replay is acknowledged, not stored), 0 when not, -1 on a
 * database error (with `e`). */
static int replayed(const run_info *run, const srv_batch *b, srv_error *e)
{
    char key[24], rank[16], bseq[24], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rank, sizeof(rank), "%u", b->rank);
    snprintf(bseq, sizeof(bseq), "%" PRIu64, b->batch_seq);
    const char *p[] = {key, rank, bseq};
    PGresult *r = db_exec("held_replay", 3, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the batches stored", err);
    int found = PQntuples(r) > 0;
    PQclear(r);
    return found;
}

/* read_digests - each step's digest, into s[i].n_digest and .digest. 0, or -1 with `e`. */
static int read_digests(const run_info *run, const srv_batch *b, held_step *s, int n, srv_error *e)
{
    char key[24], rank[16], err[512], steps[HELD_MAX_STEPS * 22 + 3];
    size_t len = 0;
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rank, sizeof(rank), "%u", b->rank);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(steps + len, sizeof(steps) - len, "%c%" PRId64, i ? ',' : '{', s[i].step);
    snprintf(steps + len, sizeof(steps) - len, "}");
    const char *p[] = {key, rank, steps};
    PGresult *r = db_exec("held_digests", 3, p, err, sizeof(err));
    if (!r)
        return db_fail(e, "reading the step digests", err);
    for (int row = 0; row < PQntuples(r); row++) {
        int64_t step = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        for (int i = 0; i < n; i++)
            if (s[i].step == step) {
                s[i].n_digest = strtoll(PQgetvalue(r, row, 1), NULL, 10);
                s[i].digest = (uint64_t)strtoll(PQgetvalue(r, row, 2), NULL, 10);
            }
    }
    PQclear(r);
    return 0;
}

/* add_stored - the records of `s->step` stored for the run's rank already, added to the step's count and XOR.
 * 0, or -1 with `e`. */
static int add_stored(const run_info *run, uint32_t rank, held_step *s, srv_error *e)
{
    frame_set set = {0};
    char err[512];
    int rc = frames_read_step(&run->key, 1, rank, s->step, &set, err, sizeof(err));
    if (rc < 0) {
        frame_set_release(&set);
        return rc == FRAMES_DAMAGED ? srv_error_set(e, "stored records are damaged", err, "see docs/server.md")
                                    : db_fail(e, "reading the records stored", err);
    }
    for (size_t i = 0; i < set.n; i++)
        if (rec_in_steps(&set.recs[i])) {
            s->n++;
            s->x ^= rec_digest_term(&set.recs[i]);
        }
    frame_set_release(&set);
    return 0;
}

/* refuse - fill `e` for step `s`, which the held batch cannot answer, count it and say so once in the log. */
static int refuse(const run_info *run, const srv_batch *b, const held_step *s, srv_error *e)
{
    char detail[400];
    if (s->n_digest < 0)
        snprintf(detail, sizeof(detail),
                 "rank %u of run %s sent held records of step %" PRId64 ", for which it sent no step digest", b->rank,
                 run->run_id, s->step);
    else if (s->n > s->n_digest)
        snprintf(detail, sizeof(detail),
                 "rank %u of run %s: step %" PRId64 "'s digest stands for %" PRId64
                 " held records, and these would make %" PRId64,
                 b->rank, run->run_id, s->step, s->n_digest, s->n);
    else
        snprintf(detail, sizeof(detail),
                 "rank %u of run %s: the %" PRId64 " records of step %" PRId64
                 " do not reproduce the step digest the rank sent for them",
                 b->rank, run->run_id, s->n, s->step);
    log_warn("held records refused: %s", detail);
    metrics_held_refused(MH_INGEST);
    srv_error_set(e, "held records do not answer their step digest", detail,
                  "the agent must send the records it held back, as it recorded them (docs/server.md, \"Digest "
                  "streaming\"); nothing of this batch was stored");
    e->status = 409;
    return -1;
}

int store_held_check(const run_info *run, const srv_batch *b, srv_error *e)
{
    held_step s[HELD_MAX_STEPS];
    int n = steps_of(b, s);
    if (n < 0) {
        srv_error_set(e, "too many steps in a batch of held records",
                      "a batch sent on demand carries the held records of at most " HELD_MAX_STEPS_TEXT " steps",
                      "send each step's held records as their own batch");
        e->status = 400;
        return -1;
    }
    if (n == 0)
        return 0;
    int seen = replayed(run, b, e);
    if (seen != 0)
        return seen < 0 ? -2 : 0;
    if (read_digests(run, b, s, n, e) < 0)
        return -2;
    for (int i = 0; i < n; i++) {
        if (s[i].n_digest < 0)
            return refuse(run, b, &s[i], e);
        if (add_stored(run, b->rank, &s[i], e) < 0)
            return -2;
        if (rec_held_answers(s[i].n, s[i].x, s[i].n_digest, s[i].digest) < 0)
            return refuse(run, b, &s[i], e);
    }
    return 0;
}

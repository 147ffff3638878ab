/* replay_cmp.c - two runs compared over a window of steps from their stored records (server/replay/replay_cmp.h). */
#include "server/replay/replay_cmp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/recmatch.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

void rc_register(void)
{
    /* The window's stored segments (server/store/frames.h) and those of series points that reach into it from
     * the block before its first step: how many records first (a spanning segment counts whole), then the
     * frames. */
    db_register("rc_count", "SELECT coalesce(sum(n), 0) FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                            "AND " FRAMES_REACHING("$2", "$3") " "
                                                               "AND ($4::int[] IS NULL OR rank = ANY($4::int[]))");
    db_register("rc_frames", "SELECT run_key, rank, step, frames FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                             "AND " FRAMES_REACHING("$2", "$3") " "
                                                                "AND ($4::int[] IS NULL OR rank = ANY($4::int[]))");
    /* state entries of one step (kinds 2 saved and 4 restored: the partial index record_frames_state) */
    db_register("rc_state", "SELECT run_key, rank, step, frames FROM record_frames WHERE run_key = ANY($1::bigint[]) "
                            "AND kind IN (2, 4) AND step = $2 AND ($3::int[] IS NULL OR rank = ANY($3::int[])) "
                            "ORDER BY rank, run_key, seq_lo");
}

/* state_block - the entries of run `key` on `rank` with state flag `flag` from `set`, in record order. */
static size_t state_block(const frame_set *set, int64_t key, uint32_t rank, int flag, const rec_record **out)
{
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->run_key[i] == key && set->recs[i].rank == rank && (set->recs[i].flags & REC_STATE_MASK) == flag)
            out[n++] = &set->recs[i];
    return n;
}

int rc_resume_check(int64_t replay, int64_t source, int64_t step, const char *ranks, rc_resume *out, char *err,
                    size_t cap)
{
    char keys[64], st[32];
    memset(out, 0, sizeof(*out));
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", replay, source);
    snprintf(st, sizeof(st), "%" PRId64, step);
    const char *p[] = {keys, st, ranks};
    PGresult *r = db_exec_bin("rc_state", 3, p, err, cap);
    if (!r)
        return -1;
    frame_set set = {0};
    if (frames_rows(&set, r, 0, 1, 2, 3, step, step, NULL, err, cap) < 0) {
        frame_set_release(&set);
        return -1;
    }
    const rec_record **mine = xcalloc(set.n + 1, sizeof(*mine)), **ref = xcalloc(set.n + 1, sizeof(*ref));
    for (size_t i = 0; i < set.n && !out->differs; i++) {
        uint32_t rank = set.recs[i].rank;
        if (i && set.recs[i - 1].rank == rank)
            continue; /* each rank once (rows come by rank) */
        size_t n = state_block(&set, replay, rank, REC_STATE_RESTORED, mine);
        size_t m = state_block(&set, source, rank, REC_STATE_SAVED, ref);
        if (!n || !m) {
            out->not_restored += !n && m;
            out->not_saved += n && !m;
            continue;
        }
        rec_restore_result v;
        if (rec_restore_check(mine, n, ref, m, 1, &v) < 0)
            abort(); /* out of memory: the server's policy (server/core/xalloc.h) */
        out->checked++;
        if (v.status == REC_RESTORE_SAME || v.status == REC_RESTORE_UNVERIFIED)
            continue;
        const rec_record *named = v.restored ? v.restored : v.ref;
        out->differs = 1;
        out->rank = (int)rank;
        out->status = rec_restore_status_name(v.status);
        out->diff = v.status == REC_RESTORE_DIFFERS ? rec_diff_name(v.diff) : NULL;
        if (named) {
            snprintf(out->name, sizeof(out->name), "%.*s", (int)named->name_len, named->name);
            out->occurrence = named->occurrence;
        }
    }
    free(mine);
    free(ref);
    frame_set_release(&set);
    return 0;
}

static int in_steps(const rec_record *r)
{
    return rec_in_steps(r);
}

/* read_rows - the step records of runs `a` and `b` over steps [from, to] on ranks `ranks` (entries of state blocks
 * are no step records: common/recmatch.h), how many in *n. `set` holds the records the rows borrow
 * (frame_set_release). The rows (caller frees), or NULL with `err` (a database error, or more than RC_MAX_RECORDS
 * records). */
static rc_row *read_rows(int64_t a, int64_t b, int64_t from, int64_t to, const char *ranks, frame_set *set, int *n,
                         char *err, size_t cap)
{
    char keys[64], f[32], t[32];
    snprintf(keys, sizeof(keys), "{%" PRId64 ",%" PRId64 "}", a, b);
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    const char *p[] = {keys, f, t, ranks};
    PGresult *r = db_exec("rc_count", 4, p, err, cap);
    if (!r)
        return NULL;
    long long stored = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (stored > RC_MAX_RECORDS) {
        snprintf(err, cap,
                 "steps %" PRId64 "-%" PRId64 " of the two runs hold more than %d records; declare checkpoints so that "
                 "a replay starts closer to the divergence",
                 from, to, RC_MAX_RECORDS);
        return NULL;
    }
    r = db_exec_bin("rc_frames", 4, p, err, cap);
    if (!r)
        return NULL;
    if (frames_rows(set, r, 0, 1, 2, 3, from, to, in_steps, err, cap) < 0)
        return NULL;
    *n = (int)set->n;
    rc_row *rows = xcalloc((size_t)*n + 1, sizeof(*rows));
    for (int i = 0; i < *n; i++) {
        rc_row *x = &rows[i];
        x->run = set->run_key[i] == a ? 0 : 1;
        x->rec = set->recs[i];
        x->rank = (int)x->rec.rank;
        x->step = x->rec.step;
        x->level = x->rec.level;
    }
    return rows;
}

int rc_compare(int64_t a, int64_t b, int64_t from, int64_t to, const char *ranks, rc_result *out, char *err, size_t cap)
{
    memset(out, 0, sizeof(*out));
    frame_set set = {0};
    int n = 0;
    rc_row *rows = read_rows(a, b, from, to, ranks, &set, &n, err, cap);
    if (!rows) {
        frame_set_release(&set);
        return -1;
    }
    replay_diff(rows, n, out);
    free(rows);
    frame_set_release(&set);
    return 0;
}

/* cons_first.c - a consensus divergence finished: the first record where the members of its window differ
 * (cons_first_record, common/consensus.h), from the members' stored records of the step, asked for from agents that
 * hold them back (digest streaming) as the twin comparison asks. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/consensus.h"
#include "server/consensus/cons_int.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/frames.h"

#define CONS_FINISH_MAX_MEMBERS 4096 /* members whose records a divergence's row is finished from */

void cons_first_register(void)
{
    db_register("cons_unfinished", "SELECT step, comm_key, win, members::text, member_n::text, odd_ranks::text "
                                   "FROM consensus_divergences WHERE run_key = $1 AND name = '' AND idx IS NULL");
    db_register("cons_step_frames",
                "SELECT run_key, rank, step, frames, seq_lo FROM record_frames "
                "WHERE run_key = $1 AND step = $2 AND rank = ANY ($3::int[]) UNION ALL "
                "SELECT run_key, rank, step, frames, seq_lo FROM record_frames "
                "WHERE run_key = $1 AND rank = ANY ($3::int[]) AND " FRAMES_SPANNING("$2") " ORDER BY rank, seq_lo");
    /* the members short of records: their agents hold them back (the reply to the rank's next batch asks) */
    db_register("cons_request", "INSERT INTO record_requests (run_key, rank, step, committed_at) "
                                "SELECT $1, r, $2, clock_timestamp() FROM unnest($3::int[]) AS r "
                                "ON CONFLICT DO NOTHING");
    /* idx -1: every member's records are there and none differs (the digests differed by a 64-bit collision); the
     * requests it made are dropped once answered (a twin group's comparison drops its own) */
    db_register("cons_finish",
                "WITH q AS (DELETE FROM record_requests q WHERE q.run_key = $1 AND q.step = $2 AND q.answered AND NOT "
                "EXISTS (SELECT 1 FROM runs r WHERE r.run_key = $1 AND r.twin_group <> '')) "
                "UPDATE consensus_divergences SET name = $5, occ = $6, site = $7::jsonb, idx = $8, odd_rank = $9 "
                "WHERE run_key = $1 AND step = $2 AND comm_key = $3 AND win = $4 AND name = '' AND idx IS NULL "
                "RETURNING 1");
}

static json_t *site_json(const rec_site *st)
{
    if (!rec_has_site(&(rec_record){.site = *st}))
        return json_null();
    return json_pack("{s:s%, s:I, s:s%, s:I, s:s%}", "module", st->module ? st->module : "", (size_t)st->module_len,
                     "offset", (json_int_t)st->offset, "function", st->function ? st->function : "",
                     (size_t)st->function_len, "function_offset", (json_int_t)st->function_offset, "caller",
                     st->caller ? st->caller : "", (size_t)st->caller_len);
}

/* The unfinished row, as read. */
typedef struct pending {
    const char *step, *comm, *win, *members_text;
    int64_t members[CONS_FINISH_MAX_MEMBERS], member_n[CONS_FINISH_MAX_MEMBERS], odd[CONS_FINISH_MAX_MEMBERS];
    int n, n_odd;
} pending;

/* members_of - the members' records of the window from `set` (sorted by rank) into `m` (arrays `ptr` and `ix`,
 * set->n long); `short_of` flags members with fewer records than their digest folded. Returns how many are short. */
static int members_of(const pending *pd, const frame_set *set, cons_member *m, const rec_record **ptr, uint32_t *ix,
                      unsigned char *short_of)
{
    uint64_t key = (uint64_t)strtoll(pd->comm, NULL, 10);
    uint32_t win = (uint32_t)atoi(pd->win);
    size_t at = 0, used = 0;
    int n_short = 0;
    for (int j = 0; j < pd->n; j++) {
        int odd = 0;
        for (int k = 0; k < pd->n_odd; k++)
            odd |= pd->odd[k] == pd->members[j];
        m[j] = (cons_member){.rank = (uint32_t)pd->members[j], .odd = odd, .recs = ptr + used, .index = ix + used};
        while (at < set->n && (int64_t)set->recs[at].rank < pd->members[j])
            at++;
        for (; at < set->n && (int64_t)set->recs[at].rank == pd->members[j]; at++) {
            rec_ext x;
            rec_ext_of(&set->recs[at], &x);
            if (!x.has_consensus || x.consensus_key != key || x.consensus_index / CONS_WINDOW != win)
                continue;
            ptr[used] = &set->recs[at];
            ix[used++] = x.consensus_index;
            m[j].n++;
        }
        short_of[j] = (int64_t)m[j].n < pd->member_n[j];
        n_short += short_of[j];
    }
    return n_short;
}

/* ask_short - request the step's records from the members that are short of them. 0, or -1. */
static int ask_short(const char *key, const pending *pd, const unsigned char *short_of)
{
    int ranks[CONS_FINISH_MAX_MEMBERS], n = 0;
    char lit[CONS_FINISH_MAX_MEMBERS * 12 + 3], err[512];
    for (int j = 0; j < pd->n; j++)
        if (short_of[j])
            ranks[n++] = (int)pd->members[j];
    const char *p[] = {key, pd->step, db_int_array_text(ranks, n, lit, sizeof(lit))};
    if (db_do("cons_request", 3, p, err, sizeof(err)) < 0) {
        log_warn("consensus of run %s: records of step %s not asked for: %s", key, pd->step, err);
        return -1;
    }
    return 0;
}

/* finish_row - store what cons_first_record found (`got` 0: nothing differs). Returns 1 when stored, 0, -1. */
static int finish_row(const char *key, const pending *pd, const cons_member *m, int got, const cons_first *f)
{
    const rec_record *r = got ? (f->rec ? f->rec : f->ref) : NULL;
    char name[LS_NAME_MAX + 1] = "", occ[16] = "0", idx[16] = "-1", odd[16] = "", err[512];
    char *site = NULL;
    if (r) {
        snprintf(name, sizeof(name), "%.*s", (int)r->name_len, r->name);
        snprintf(occ, sizeof(occ), "%u", r->occurrence);
        snprintf(idx, sizeof(idx), "%u", f->index);
        snprintf(odd, sizeof(odd), "%u", m[f->member].rank);
        json_t *s = site_json(&r->site);
        site = json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(s);
    }
    const char *p[] = {key, pd->step, pd->comm, pd->win, name, occ, site, idx, odd[0] ? odd : NULL};
    PGresult *res = db_exec("cons_finish", 9, p, err, sizeof(err));
    free(site);
    if (!res) {
        log_warn("consensus of run %s: first record not stored: %s", key, err);
        return -1;
    }
    int done = PQntuples(res) > 0;
    PQclear(res);
    if (done && r)
        log_info("run %s: consensus differs first at %s #%s of step %s (rank %s)", key, name, occ, pd->step, odd);
    return done;
}

/* finish_one - the row `pd` of run `key`: 1 finished, 0 records awaited, -1 on a database error. */
static int finish_one(const char *key, pending *pd)
{
    char err[512];
    const char *p[] = {key, pd->step, pd->members_text};
    PGresult *r = db_exec_bin("cons_step_frames", 3, p, err, sizeof(err));
    if (!r) {
        log_warn("consensus of run %s: records of step %s not read: %s", key, pd->step, err);
        return -1;
    }
    frame_set set = {0};
    int64_t step = strtoll(pd->step, NULL, 10);
    int rc = frames_rows(&set, r, 0, 1, 2, 3, step, step, NULL, err, sizeof(err));
    if (rc < 0) {
        log_warn("consensus of run %s: records of step %s unreadable: %s", key, pd->step, err);
        frame_set_release(&set);
        return rc == FRAMES_DAMAGED ? 0 : -1;
    }
    cons_member *m = xcalloc((size_t)pd->n, sizeof(*m));
    const rec_record **ptr = xcalloc(set.n + 1, sizeof(*ptr));
    uint32_t *ix = xcalloc(set.n + 1, sizeof(*ix));
    unsigned char *short_of = xcalloc((size_t)pd->n, 1);
    if (members_of(pd, &set, m, ptr, ix, short_of) > 0)
        rc = ask_short(key, pd, short_of);
    else {
        cons_first f;
        int got = cons_first_record(m, (size_t)pd->n, (uint32_t)atoi(pd->win), &f);
        rc = finish_row(key, pd, m, got, &f);
    }
    free(m);
    free(ptr);
    free(ix);
    free(short_of);
    frame_set_release(&set);
    return rc;
}

int cons_finish_run(int64_t run_key)
{
    char key[24], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run_key);
    const char *p[] = {key};
    PGresult *r = db_exec("cons_unfinished", 1, p, err, sizeof(err));
    if (!r) {
        log_warn("consensus of run %s: divergence not read: %s", key, err);
        return -1;
    }
    int rc = 0;
    if (PQntuples(r) == 1) {
        pending *pd = xcalloc(1, sizeof(*pd));
        pd->step = PQgetvalue(r, 0, 0);
        pd->comm = PQgetvalue(r, 0, 1);
        pd->win = PQgetvalue(r, 0, 2);
        pd->members_text = PQgetvalue(r, 0, 3);
        pd->n = db_int_array_parse(pd->members_text, pd->members, CONS_FINISH_MAX_MEMBERS);
        int nn = db_int_array_parse(PQgetvalue(r, 0, 4), pd->member_n, CONS_FINISH_MAX_MEMBERS);
        pd->n_odd = db_int_array_parse(PQgetvalue(r, 0, 5), pd->odd, CONS_FINISH_MAX_MEMBERS);
        if (pd->n > 0 && nn == pd->n && pd->n < CONS_FINISH_MAX_MEMBERS)
            rc = finish_one(key, pd);
        free(pd);
    }
    PQclear(r);
    return rc;
}

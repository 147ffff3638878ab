/* convert.c - the one-time move of a database's records from the row layout (records_rows: one row per record, before
 * migration 010) into frames. */
#include "server/store/convert.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/batch.h"
#include "server/store/db.h"
#include "server/store/frames.h"

#define CONVERT_LOCK 0x4c4f434b46524d53LL /* "LOCKFRMS" */
#define CONVERT_ROWS 100000               /* rows one transaction converts at most (whole steps) */
#define STR_(x) #x
#define STR(x) STR_(x)

static PGresult *q(PGconn *c, const char *sql, int n, const char *const *p, char *err, size_t cap)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
    if (db_ok(r))
        return r;
    snprintf(err, cap, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return NULL;
}

static int exec_ok(PGconn *c, const char *sql, char *err, size_t cap)
{
    PGresult *r = q(c, sql, 0, NULL, err, cap);
    PQclear(r);
    return r ? 0 : -1;
}

/* words_parse - an int8[] in text form into new words (*out, caller frees); returns the count. */
static size_t words_parse(const char *text, uint64_t **out)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    int64_t *w = xmalloc(cap * sizeof(int64_t));
    size_t n = (size_t)db_int_array_parse(text, w, (int)cap);
    *out = (uint64_t *)w;
    return n;
}

/* Columns of the row query, in order. */
#define ROW_COLS                                                                                                       \
    "seq, step, name, occ, level, dtype, flags, t_ns, nbytes, fp, value, shape::text, inputs::text, "                  \
    "chunks::text, received_on::text, site_module, site_offset, site_function, site_function_offset, "                 \
    "site_caller, encode(ext, 'hex')"

/* convert_rows - frame rows [from, to) of result `r` (one day's rows of one rank, in step, seq order) and insert
 * them as segments. 0 or -1 with `err`. */
static int convert_rows(PGconn *c, const char *key, const char *rank, PGresult *r, int from, int to, char *err,
                        size_t cap)
{
    srv_batch b;
    memset(&b, 0, sizeof(b));
    b.n = (size_t)(to - from);
    b.recs = xcalloc(b.n + 1, sizeof(*b.recs));
    uint64_t **words = xcalloc(2 * b.n + 1, sizeof(*words));
    unsigned char *ext = xmalloc(b.n * REC_EXT_MAX + 1); /* the extension fields (sql/migrations/009), decoded */
    for (int i = from; i < to; i++) {
        rec_record *x = &b.recs[i - from];
        x->seq = strtoull(PQgetvalue(r, i, 0), NULL, 10);
        x->step = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        x->name = PQgetvalue(r, i, 2);
        x->name_len = (uint16_t)PQgetlength(r, i, 2);
        x->occurrence = (uint32_t)strtoul(PQgetvalue(r, i, 3), NULL, 10);
        x->level = (uint8_t)atoi(PQgetvalue(r, i, 4));
        x->dtype = (uint8_t)atoi(PQgetvalue(r, i, 5));
        x->flags = (uint8_t)(atoi(PQgetvalue(r, i, 6)) & ~(REC_HAS_VALUE | REC_HAS_EXT)); /* state flags kept */
        x->t_ns = strtoll(PQgetvalue(r, i, 7), NULL, 10);
        x->nbytes = strtoull(PQgetvalue(r, i, 8), NULL, 10);
        x->fp = (uint64_t)strtoll(PQgetvalue(r, i, 9), NULL, 10);
        if (!PQgetisnull(r, i, 10)) {
            x->flags |= REC_HAS_VALUE;
            x->value = (uint64_t)strtoll(PQgetvalue(r, i, 10), NULL, 10);
        }
        x->ndim = (uint8_t)db_int_array_parse(PQgetvalue(r, i, 11), x->shape, LS_MAX_DIMS);
        uint64_t **in = &words[2 * (i - from)], **ch = in + 1;
        if (!PQgetisnull(r, i, 12)) {
            x->n_inputs = (uint16_t)words_parse(PQgetvalue(r, i, 12), in);
            x->inputs = *in;
        }
        if (!PQgetisnull(r, i, 13)) {
            x->n_chunks = (uint32_t)words_parse(PQgetvalue(r, i, 13), ch);
            x->chunks = *ch;
        }
        rec_site *st = &x->site; /* the call site (sql/migrations/007_record_sites): its strings borrowed from `r` */
        if (!PQgetisnull(r, i, 15) || !PQgetisnull(r, i, 17) || !PQgetisnull(r, i, 19)) {
            st->module = PQgetvalue(r, i, 15);
            st->module_len = (uint16_t)PQgetlength(r, i, 15);
            st->offset = (uint64_t)strtoll(PQgetvalue(r, i, 16), NULL, 10);
            st->function = PQgetvalue(r, i, 17);
            st->function_len = (uint16_t)PQgetlength(r, i, 17);
            st->function_offset = (uint64_t)strtoll(PQgetvalue(r, i, 18), NULL, 10);
            st->caller = PQgetvalue(r, i, 19);
            st->caller_len = (uint16_t)PQgetlength(r, i, 19);
        }
        if (!PQgetisnull(r, i, 20)) {
            unsigned char *e = ext + (size_t)(i - from) * REC_EXT_MAX;
            int n = db_hex_parse(PQgetvalue(r, i, 20), e, REC_EXT_MAX);
            if (n > 0) {
                x->ext = e;
                x->ext_len = (uint16_t)n;
            }
        }
    }
    frames_out fo = {0};
    frames_cut(&b, &fo);
    char *arr[FRAMES_SEG_ARRAYS];
    frames_seg_arrays(&fo, arr);
    size_t flen;
    unsigned char *frames = frames_bytea_array(&fo, &flen);
    const char *p[] = {key,   rank, arr[0], arr[1], arr[2], arr[3], (const char *)frames, PQgetvalue(r, from, 14),
                       arr[4]};
    int lens[9] = {0, 0, 0, 0, 0, 0, (int)flen, 0, 0}, fmts[9] = {0, 0, 0, 0, 0, 0, 1, 0, 0};
    PGresult *ins =
        PQexecParams(c,
                     "INSERT INTO record_frames (run_key, rank, step, seq_lo, n, kind, frames, received_on, step_last) "
                     "SELECT $1, $2, s, q, c, k, f, $8::date, l FROM unnest($3::bigint[], $4::bigint[], "
                     "$5::int[], $6::smallint[], $7::bytea[], $9::bigint[]) AS u(s, q, c, k, f, l)",
                     9, NULL, p, lens, fmts, 0);
    int rc = db_ok(ins) ? 0 : -1;
    if (rc < 0)
        snprintf(err, cap, "%s", PQresultErrorMessage(ins));
    PQclear(ins);
    free(frames);
    for (int a = 0; a < FRAMES_SEG_ARRAYS; a++)
        free(arr[a]);
    frames_out_release(&fo);
    for (size_t i = 0; i < 2 * b.n; i++)
        free(words[i]);
    free(words);
    free(ext);
    free(b.recs);
    return rc;
}

/* convert_chunk - convert the rows of (key, rank) from its smallest step up to whole steps of about CONVERT_ROWS
 * rows, and delete them, in one transaction. Returns the rows converted, or -1 with `err`. */
static long convert_chunk(PGconn *c, const char *key, const char *rank, char *err, size_t cap)
{
    if (exec_ok(c, "BEGIN", err, cap) < 0)
        return -1;
    const char *p[] = {key, rank};
    char lo[32], hi[32] = "";
    PGresult *r = q(c, "SELECT min(step) FROM records_rows WHERE run_key = $1 AND rank = $2", 2, p, err, cap);
    if (!r)
        goto out_rollback;
    if (PQgetisnull(r, 0, 0)) { /* this rank is done */
        PQclear(r);
        PQclear(PQexec(c, "ROLLBACK"));
        return 0;
    }
    snprintf(lo, sizeof(lo), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    const char *p2[] = {key, rank, lo};
    r = q(c,
          "SELECT step FROM records_rows WHERE run_key = $1 AND rank = $2 AND step >= $3 ORDER BY step "
          "OFFSET " STR(CONVERT_ROWS) " LIMIT 1",
          3, p2, err, cap);
    if (!r)
        goto out_rollback;
    if (PQntuples(r) == 1)
        snprintf(hi, sizeof(hi), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (hi[0] && strcmp(hi, lo) == 0) /* one step holds more than CONVERT_ROWS rows: take it whole */
        snprintf(hi, sizeof(hi), "%lld", strtoll(lo, NULL, 10) + 1);
    const char *p3[] = {key, rank, lo, hi[0] ? hi : NULL};
    r = q(c,
          "SELECT " ROW_COLS " FROM records_rows WHERE run_key = $1 AND rank = $2 AND step >= $3 "
          "AND ($4::bigint IS NULL OR step < $4) ORDER BY received_on, step, seq",
          4, p3, err, cap);
    if (!r)
        goto out_rollback;
    int n = PQntuples(r);
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && !strcmp(PQgetvalue(r, j, 14), PQgetvalue(r, i, 14)))
            j++;
        if (convert_rows(c, key, rank, r, i, j, err, cap) < 0) {
            PQclear(r);
            goto out_rollback;
        }
        i = j;
    }
    PQclear(r);
    r = q(c,
          "DELETE FROM records_rows WHERE run_key = $1 AND rank = $2 AND step >= $3 AND ($4::bigint IS NULL OR "
          "step < $4)",
          4, p3, err, cap);
    if (!r)
        goto out_rollback;
    PQclear(r);
    if (exec_ok(c, "COMMIT", err, cap) < 0)
        goto out_rollback;
    return n;
out_rollback:
    PQclear(PQexec(c, "ROLLBACK"));
    return -1;
}

int store_convert_rows(const char *conninfo)
{
    char err[512], sql[128];
    int rc = -1;
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        log_error("cannot connect to PostgreSQL to convert records: %s", PQerrorMessage(c));
        goto out_finish;
    }
    PGresult *r = q(c, "SELECT to_regclass('records_rows') IS NOT NULL", 0, NULL, err, sizeof(err));
    if (!r)
        goto out_fail;
    int present = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!present) {
        rc = 0;
        goto out_finish;
    }
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_lock(%lld)", CONVERT_LOCK);
    if (exec_ok(c, sql, err, sizeof(err)) < 0)
        goto out_fail;
    r = q(c, "SELECT to_regclass('records_rows') IS NOT NULL", 0, NULL, err, sizeof(err));
    if (!r)
        goto out_unlock;
    present = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    long long done = 0;
    char key[32] = "-1", rank[16] = "-1";
    if (present)
        log_info("converting stored records from rows to frames (migration 010); lockstepd serves once it is done");
    while (present) {
        /* the next (run, rank) along the index: the converted ones, deleted, lie behind it */
        const char *after[] = {key, rank};
        r = q(c,
              "SELECT run_key, rank FROM records_rows WHERE (run_key, rank) > ($1::bigint, $2::int) "
              "ORDER BY run_key, rank LIMIT 1",
              2, after, err, sizeof(err));
        if (!r)
            goto out_unlock;
        if (PQntuples(r) == 0) {
            PQclear(r);
            r = q(c, "SELECT count(*) FROM (SELECT 1 FROM records_rows LIMIT 1) x", 0, NULL, err, sizeof(err));
            int left = r && atoi(PQgetvalue(r, 0, 0)) > 0;
            PQclear(r);
            if (!r)
                goto out_unlock;
            if (left) { /* rows that came in behind the walk (none should): walk again */
                snprintf(key, sizeof(key), "-1");
                snprintf(rank, sizeof(rank), "-1");
                continue;
            }
            if (exec_ok(c, "DROP TABLE records_rows", err, sizeof(err)) < 0)
                goto out_unlock;
            log_info("converted %lld records into frames; the row table is dropped", done);
            break;
        }
        snprintf(key, sizeof(key), "%s", PQgetvalue(r, 0, 0));
        snprintf(rank, sizeof(rank), "%s", PQgetvalue(r, 0, 1));
        PQclear(r);
        long got;
        while ((got = convert_chunk(c, key, rank, err, sizeof(err))) > 0) {
            done += got;
            if (done / 1000000 != (done - got) / 1000000)
                log_info("converted %lld records so far", done);
        }
        if (got < 0)
            goto out_unlock;
    }
    rc = 0;
out_unlock:
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_unlock(%lld)", CONVERT_LOCK);
    PQclear(PQexec(c, sql));
out_fail:
    if (rc < 0)
        log_error("converting the stored records failed: %s", err);
out_finish:
    PQfinish(c);
    return rc;
}

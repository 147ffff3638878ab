/* absorbed.c - a twin group's absorbed differences for its report (server/twins/absorbed.h). */
#include "server/twins/absorbed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/site.h"
#include "server/store/db.h"
#include "server/store/frames.h"

void absorbed_register(void)
{
    /* how many rank-steps, over how many ranks, and the first (by step, then rank) with the runs compared there */
    db_register("absorbed_of",
                "SELECT count(*), count(DISTINCT rank), (array_agg(rank ORDER BY step, rank))[1], "
                "(array_agg(step ORDER BY step, rank))[1], (array_agg(array_to_string(keys, ',') ORDER BY step, "
                "rank))[1] FROM group_absorbed WHERE twin_group = $1");
}

static int same_key(const rec_record *a, const rec_record *b)
{
    return a->occurrence == b->occurrence && a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

static int same_inputs(const rec_record *a, const rec_record *b)
{
    return a->n_inputs == b->n_inputs && (!a->n_inputs || !memcmp(a->inputs, b->inputs, a->n_inputs * 8u));
}

const rec_record *absorbed_first(const rec_record *recs, const int64_t *run_key, size_t n, int64_t key0)
{
    for (size_t i = 0; i < n; i++) {
        if (run_key[i] != key0 || !recs[i].n_inputs)
            continue;
        for (size_t j = 0; j < n; j++)
            if (run_key[j] != key0 && same_key(&recs[i], &recs[j]) && recs[i].fp == recs[j].fp &&
                !same_inputs(&recs[i], &recs[j]))
                return &recs[i];
    }
    return NULL;
}

/* first_json - the first absorbed difference at (`rank`, `step`) of the runs `keys_text` (comma-separated): its
 * record and call site read from the frames; rank and step alone when the records are gone (retention). */
static json_t *first_json(int rank, int64_t step, const char *keys_text)
{
    int64_t keys[64];
    int nkeys = 0;
    for (const char *p = keys_text; *p && nkeys < 64;) {
        keys[nkeys++] = strtoll(p, NULL, 10);
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    json_t *o = json_pack("{s:i, s:I}", "rank", rank, "step", (json_int_t)step);
    frame_set set;
    memset(&set, 0, sizeof(set));
    char err[256];
    const rec_record *r = NULL;
    if (nkeys >= 2 && frames_read_step(keys, nkeys, (uint32_t)rank, step, &set, err, sizeof(err)) == 0)
        r = absorbed_first(set.recs, set.run_key, set.n, keys[0]);
    if (r) {
        json_object_set_new(o, "name", json_stringn(r->name, r->name_len));
        json_object_set_new(o, "occurrence", json_integer(r->occurrence));
        json_object_set_new(o, "seq", json_integer((json_int_t)r->seq));
        if (rec_has_site(r)) {
            char text[SITE_TEXT_MAX];
            site_format(&r->site, text, sizeof(text));
            json_object_set_new(o, "site", json_string(text));
        }
    }
    frame_set_release(&set);
    return o;
}

int absorbed_load(const char *group, json_t **out, char *err, size_t cap)
{
    *out = json_null();
    const char *p[] = {group};
    PGresult *r = db_exec("absorbed_of", 1, p, err, cap);
    if (!r)
        return -1;
    long long count = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : 0;
    if (count > 0) {
        json_t *first =
            first_json(atoi(PQgetvalue(r, 0, 2)), strtoll(PQgetvalue(r, 0, 3), NULL, 10), PQgetvalue(r, 0, 4));
        *out = json_pack("{s:I, s:i, s:o}", "count", (json_int_t)count, "ranks", atoi(PQgetvalue(r, 0, 1)), "first",
                         first);
    }
    PQclear(r);
    return 0;
}

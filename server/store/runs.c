/* runs.c - runs in PostgreSQL: registration (idempotent per client), lookup through a cache, manifests, rank ends. */
#include "server/store/runs.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/lsfp1.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "server/store/db.h"
#include "server/store/groups.h"

#define CACHE_SLOTS 4096

static run_info cache[CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

void store_runs_register(void)
{
    store_groups_register();
    db_register("run_get", "SELECT run_key, run_id, job_id, coalesce(twin_group, ''), ranks, start_step "
                           "FROM runs WHERE run_id = $1::uuid");
    /* A repeated client_id returns the run it registered (the no-op update makes RETURNING see the row);
     * xmax = 0 only on a row this statement inserted. */
    db_register("run_again", "SELECT run_key, run_id, coalesce(twin_group, ''), ranks, start_step FROM runs "
                             "WHERE job_id = $1 AND client_id = $2");
    /* A run joining a group: every rank of the group counts as not compared until it is compared again (the
     * fleet's settle rule reads group_checks; the comparison starts such a rank over from its shared start), and
     * its absorbed differences are noted again over the new set of runs. */
    db_register("group_reset", "WITH a AS (DELETE FROM group_absorbed WHERE twin_group = $1) "
                               "DELETE FROM group_checks WHERE twin_group = $1");
    db_register("job_attested_user", "SELECT user_name FROM attestations WHERE job_id = $1 ORDER BY attested_at "
                                     "LIMIT 1");
    /* argv arrives as the JSON array the client sent ($14, NULL when none): its words in their order */
    db_register("run_ins", "INSERT INTO runs (run_id, job_id, step_id, twin_group, ranks, start_step, user_name, "
                           "nodes, command, mode, client_id, partition, resume_template, attested_user, argv) VALUES "
                           "(gen_random_uuid(), $1, $2, nullif($3, ''), $4, $5, $6, $7, $8, $9, nullif($10, ''), $11, "
                           "$12, $13, CASE WHEN $14::jsonb IS NOT NULL THEN ARRAY(SELECT w FROM "
                           "jsonb_array_elements_text($14::jsonb) WITH ORDINALITY AS a(w, i) ORDER BY i) END) "
                           "ON CONFLICT (job_id, client_id) WHERE client_id IS "
                           "NOT NULL DO UPDATE SET client_id = excluded.client_id RETURNING run_key, run_id, "
                           "coalesce(twin_group, ''), ranks, start_step, xmax = 0");
    db_register("checkpoint_put",
                "INSERT INTO run_checkpoints (run_key, step, path, rank) VALUES ($1, $2, $3, $4) "
                "ON CONFLICT (run_key, step) DO UPDATE SET path = excluded.path, rank = excluded.rank, "
                "declared_at = now()");
    db_register("checkpoint_list",
                "SELECT step, path, rank, " DB_TS(
                    "declared_at") ", count(*) OVER () "
                                   "FROM run_checkpoints WHERE run_key = $1::bigint ORDER BY step DESC "
                                   "LIMIT $2::bigint OFFSET $3::bigint");
    db_register("manifest_put", "INSERT INTO manifests (run_key, rank, manifest) VALUES ($1, $2, $3::jsonb) "
                                "ON CONFLICT (run_key, rank) DO UPDATE SET manifest = excluded.manifest, "
                                "received_at = now()");
    /* A rank's end, and its run's when it is the last: one transaction, one round trip (write.sql) */
    db_register("rank_end", "SELECT lockstep_rank_end($1, $2, $3, $4, $5::boolean, $6)");
}

int store_uuid_valid(const char *s)
{
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return 1;
}

static unsigned slot_of(const char *run_id)
{
    return (unsigned)(fp_lsfp1(run_id, strlen(run_id)) % CACHE_SLOTS);
}

static void cache_put(const run_info *r)
{
    pthread_mutex_lock(&cache_lock);
    cache[slot_of(r->run_id)] = *r;
    pthread_mutex_unlock(&cache_lock);
}

static void fill_run(PGresult *r, run_info *out)
{
    memset(out, 0, sizeof(*out));
    out->key = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(out->run_id, sizeof(out->run_id), "%s", PQgetvalue(r, 0, 1));
    snprintf(out->job_id, sizeof(out->job_id), "%s", PQgetvalue(r, 0, 2));
    snprintf(out->group, sizeof(out->group), "%s", PQgetvalue(r, 0, 3));
    out->ranks = atoi(PQgetvalue(r, 0, 4));
    out->start_step = strtoll(PQgetvalue(r, 0, 5), NULL, 10);
}

int store_run_lookup(const char *run_id, run_info *out, srv_error *e)
{
    char lower[40];
    if (!store_uuid_valid(run_id))
        return 0;
    for (int i = 0; i < 37; i++)
        lower[i] = (char)((run_id[i] >= 'A' && run_id[i] <= 'F') ? run_id[i] + 32 : run_id[i]);
    pthread_mutex_lock(&cache_lock);
    const run_info *c = &cache[slot_of(lower)];
    int hit = c->key && strcmp(c->run_id, lower) == 0;
    if (hit)
        *out = *c;
    pthread_mutex_unlock(&cache_lock);
    if (hit)
        return 1;
    char err[512];
    const char *p[] = {lower};
    PGresult *r = db_exec("run_get", 1, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "looking up the run", err);
        return -1;
    }
    int found = PQntuples(r) == 1;
    if (found) {
        fill_run(r, out);
        cache_put(out);
    }
    PQclear(r);
    return found;
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* fill_created - `out` from a row of run_key, run_id, twin_group, ranks, start_step (and the job id). */
static void fill_created(PGresult *r, const char *job_id, run_info *out)
{
    memset(out, 0, sizeof(*out));
    out->key = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(out->run_id, sizeof(out->run_id), "%s", PQgetvalue(r, 0, 1));
    snprintf(out->job_id, sizeof(out->job_id), "%s", job_id);
    snprintf(out->group, sizeof(out->group), "%s", PQgetvalue(r, 0, 2));
    out->ranks = atoi(PQgetvalue(r, 0, 3));
    out->start_step = strtoll(PQgetvalue(r, 0, 4), NULL, 10);
}

const char *store_job_attested_user(const char *job_id, char *out, size_t cap)
{
    char err[256];
    const char *p[] = {job_id};
    PGresult *r = db_exec("job_attested_user", 1, p, err, sizeof(err));
    const char *u = NULL;
    if (r && PQntuples(r) == 1) {
        snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
        u = out;
    }
    PQclear(r);
    return u;
}

/* cache_forget - drop run `run_id`'s cache entry (its group changed). */
static void cache_forget(const char *run_id)
{
    pthread_mutex_lock(&cache_lock);
    run_info *c = &cache[slot_of(run_id)];
    if (!strcmp(c->run_id, run_id))
        memset(c, 0, sizeof(*c));
    pthread_mutex_unlock(&cache_lock);
}

/* run_create - store_run_create with the request's argv as JSON text (NULL when none). */
static int run_create(const json_t *o, const char *argv_json, const run_claim *who, run_info *out, int *created,
                      group_admission *adm, srv_error *e)
{
    char ranks[32], start[32], err[512];
    snprintf(ranks, sizeof(ranks), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "ranks")));
    snprintf(start, sizeof(start), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(o, "start_step")));
    const char *job = str_or(o, "job_id", ""), *group = str_or(o, "twin_group", ""), *cid = str_or(o, "client_id", "");
    memset(adm, 0, sizeof(*adm));
    const char *p[] = {job,
                       str_or(o, "step_id", ""),
                       adm->key,
                       ranks,
                       start,
                       str_or(o, "user", ""),
                       str_or(o, "nodes", ""),
                       str_or(o, "command", ""),
                       str_or(o, "mode", ""),
                       cid,
                       str_or(o, "partition", ""),
                       str_or(o, "resume", ""),
                       who->attested_user,
                       argv_json};
    PGresult *r = NULL;
    *created = 0;
    if (db_begin(err, sizeof(err)) < 0)
        return db_fail(e, "registering the run", err);
    if (*cid) {
        /* A registration repeated by its client: the run the first one made, whatever this one says (and
         * even when its group has filled up since). */
        const char *pa[] = {job, cid};
        r = db_exec_once("run_again", 2, pa, err, sizeof(err));
        if (!r)
            goto out_db;
        if (PQntuples(r) == 1) {
            fill_created(r, job, out);
            PQclear(r);
            if (db_commit(err, sizeof(err)) < 0)
                goto out_db;
            cache_put(out);
            return 0;
        }
        PQclear(r);
    }
    if (*group && store_group_admit(group, who, adm, e) < 0)
        goto out_rollback;
    r = db_exec_once("run_ins", 14, p, err, sizeof(err));
    if (!r)
        goto out_db;
    /* What the database holds: on a repeated registration that raced this one, the first attempt's fields. */
    fill_created(r, job, out);
    *created = PQgetvalue(r, 0, 5)[0] == 't';
    PQclear(r);
    if (*created && *group) {
        const char *pg[] = {adm->key};
        r = db_exec_once("group_reset", 1, pg, err, sizeof(err));
        if (!r)
            goto out_db;
        PQclear(r);
    }
    if (db_commit(err, sizeof(err)) < 0)
        goto out_db;
    cache_put(out);
    for (int i = 0; i < adm->set_aside && i < GROUP_MAX_RUNS; i++)
        cache_forget(adm->set_aside_ids[i]);
    return 0;
out_db:
    db_fail(e, "registering the run", err);
out_rollback:
    db_rollback();
    return -1;
}

int store_run_create(const json_t *o, const run_claim *who, run_info *out, int *created, group_admission *adm,
                     srv_error *e)
{
    const json_t *argv = json_object_get(o, "argv");
    char *argv_json = json_is_array(argv) ? json_dumps(argv, JSON_COMPACT) : NULL;
    int rc = run_create(o, argv_json, who, out, created, adm, e);
    free(argv_json);
    return rc;
}

int store_manifest(const run_info *run, int rank, const char *json_text, srv_error *e)
{
    char key[32], rk[16], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {key, rk, json_text};
    PGresult *r = db_exec("manifest_put", 3, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "storing the manifest", err);
        return -1;
    }
    PQclear(r);
    return 0;
}

int store_checkpoint(const run_info *run, int64_t step, const char *path, int rank, srv_error *e)
{
    char key[32], st[32], rk[16], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(st, sizeof(st), "%" PRId64, step);
    snprintf(rk, sizeof(rk), "%d", rank);
    const char *p[] = {key, st, path ? path : "", rk};
    PGresult *r = db_exec("checkpoint_put", 4, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "storing the checkpoint", err);
        return -1;
    }
    PQclear(r);
    return 0;
}

int store_rank_end(const run_info *run, int rank, int exit_code, int aborted, const char *mpi_unseen, int *run_done,
                   srv_error *e)
{
    char key[32], rk[16], code[16], err[512];
    snprintf(key, sizeof(key), "%" PRId64, run->key);
    snprintf(rk, sizeof(rk), "%d", rank);
    snprintf(code, sizeof(code), "%d", exit_code);
    const char *p[] = {run->group, key, rk, code, aborted ? "true" : "false", mpi_unseen ? mpi_unseen : ""};
    PGresult *r = db_exec("rank_end", 6, p, err, sizeof(err));
    if (!r) {
        db_fail(e, "recording the rank's end", err);
        return -1;
    }
    *run_done = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    PQclear(r);
    return 0;
}

PGresult *store_checkpoints_read(int64_t key, long long limit, long long offset, char *err, size_t cap)
{
    char k[32], lim[32], off[32];
    snprintf(k, sizeof(k), "%" PRId64, key);
    snprintf(lim, sizeof(lim), "%lld", limit);
    snprintf(off, sizeof(off), "%lld", offset);
    const char *p[] = {k, lim, off};
    return db_exec("checkpoint_list", 3, p, err, cap);
}

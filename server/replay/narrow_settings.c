/* narrow_settings.c - what a replay carries from the run it replays, so that it records as that run did: its ignore
 * and step rules, its trace with the narrow's window added, the determinism environment and its working directory,
 * all from the run's manifest (server/replay/narrow_int.h); and whether a replay's own manifest shows it did. */
#include "server/replay/narrow_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/envrule.h"
#include "common/tracespec.h"
#include "server/store/db.h"

/* The LOCKSTEP_* settings that change what is recorded and that a replay takes from its run as they are (the mode
 * and the trace travel as the plugin's options; the rest name the job, not what it records). */
static const char *const RECORDING[][2] = {
    {"LOCKSTEP_IGNORE", "ignore"}, {"LOCKSTEP_STEP_ON", "step_on"}, {"LOCKSTEP_MPI_INPUTS", "mpi_inputs"}};
#define N_RECORDING (sizeof(RECORDING) / sizeof(RECORDING[0]))

#define TRACE_OPTION_MAX 512 /* the longest --lockstep-trace the plugin takes, plus one (spank/spank_request.c) */

/* env_name_ok - a variable name a replay's environment may carry: letters, digits and '_', not starting with a
 * digit. */
static int env_name_ok(const char *k)
{
    return *k && (*k < '0' || *k > '9') &&
           strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(k);
}

/* manifest_of - the env object and working directory of run `run_key`'s lowest rank's manifest, as a new
 * {"env": {...}, "cwd": "..."} (members absent when unknown). NULL with the database's message. */
static json_t *manifest_of(const char *run_key, char *err, size_t cap)
{
    const char *p[] = {run_key};
    PGresult *r = db_exec_once("nset_manifest", 1, p, err, cap);
    if (!r)
        return NULL;
    json_t *m = json_object();
    json_t *env = PQntuples(r) && !PQgetisnull(r, 0, 0) ? json_loads(PQgetvalue(r, 0, 0), 0, NULL) : NULL;
    if (json_is_object(env))
        json_object_set(m, "env", env);
    json_decref(env);
    if (PQntuples(r) && !PQgetisnull(r, 0, 1) && PQgetvalue(r, 0, 1)[0] == '/')
        json_object_set_new(m, "cwd", json_string(PQgetvalue(r, 0, 1)));
    PQclear(r);
    return m;
}

json_t *narrow_settings_make(const char *run_key, const char *window, char *err, size_t cap)
{
    json_t *m = manifest_of(run_key, err, cap);
    if (!m)
        return NULL;
    json_t *out = json_object(), *env = json_object(), *skipped = json_array(), *menv = json_object_get(m, "env");
    const char *k;
    json_t *v;
    const char *trace = NULL;
    json_object_foreach(menv, k, v)
    {
        const char *val = json_string_value(v);
        if (!val || strlen(val) != json_string_length(v))
            continue;
        if (!strcmp(k, "LOCKSTEP_TRACE")) {
            trace = val;
            continue;
        }
        int rec = -1;
        for (size_t i = 0; i < N_RECORDING; i++)
            if (!strcmp(k, RECORDING[i][0]))
                rec = (int)i;
        if (rec >= 0) {
            json_object_set_new(out, RECORDING[rec][1], json_string(val));
            continue;
        }
        if (!strncmp(k, "LOCKSTEP_", 9) || env_classify(k, strlen(k)) != ENV_CONFIGURATION)
            continue;
        if (!env_name_ok(k) || !strncmp(val, ENV_DIGEST_PREFIX, strlen(ENV_DIGEST_PREFIX)))
            json_array_append_new(skipped, json_string(k)); /* a secret's digest cannot be set again */
        else
            json_object_set_new(env, k, json_string(val));
    }
    /* Its trace, and the narrow's finer window on top: the clauses of both (common/tracespec.h: a record is kept
     * when any clause admits it). */
    const char *clause = strchr(window, ';');
    char both[1200], why[200];
    trace_spec ts;
    snprintf(both, sizeof(both), "%s;%s", trace && *trace ? trace : TS_DEFAULT, clause ? clause + 1 : window);
    int fits = strlen(both) < TRACE_OPTION_MAX && ts_parse(both, &ts, why, sizeof(why)) == 0;
    json_object_set_new(out, "trace", json_string(fits ? both : window));
    json_t *cwd = json_object_get(m, "cwd");
    if (cwd)
        json_object_set(out, "cwd", cwd);
    json_object_set_new(out, "env", env);
    if (json_array_size(skipped))
        json_object_set_new(out, "not_carried", skipped);
    else
        json_decref(skipped);
    json_decref(m);
    return out;
}

int narrow_settings_check(const char *replay_key, json_t *settings, char *note, size_t cap)
{
    note[0] = 0;
    char err[300];
    if (!json_is_object(settings) || !json_object_size(settings))
        return 0; /* a placement made before replays carried settings: nothing to hold it to */
    json_t *m = manifest_of(replay_key, err, sizeof(err));
    if (!m)
        return -1;
    json_t *menv = json_object_get(m, "env");
    if (!menv) { /* its manifest has not come yet */
        json_decref(m);
        return 0;
    }
    size_t len = 0;
    for (size_t i = 0; i < N_RECORDING + 1 && len < cap; i++) {
        const char *var = i < N_RECORDING ? RECORDING[i][0] : "LOCKSTEP_TRACE";
        const char *key = i < N_RECORDING ? RECORDING[i][1] : "trace";
        const char *want = json_string_value(json_object_get(settings, key));
        const char *got = json_string_value(json_object_get(menv, var));
        if (!strcmp(want ? want : "", got ? got : ""))
            continue;
        len += (size_t)snprintf(note + len, cap - len, "%s%s '%.300s' where the run it replays had '%.300s'",
                                len ? "; " : "", var, got ? got : "", want ? want : "");
    }
    json_decref(m);
    return note[0] != 0;
}

void narrow_settings_register(void)
{
    db_register("nset_manifest",
                "SELECT CASE WHEN jsonb_typeof(manifest->'env') = 'object' THEN (manifest->'env')::text "
                "END, manifest->>'cwd' FROM manifests WHERE run_key = $1::bigint ORDER BY rank LIMIT 1");
}

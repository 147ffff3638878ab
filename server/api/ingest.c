/* ingest.c - the write endpoints: register a run, manifests, record batches, rank ends. */
#include "server/api/ingest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/run_ref.h"
#include "server/twins/compare.h"
#include "common/json/msecret.h"
#include "common/text.h"
#include "common/wire.h"
#include "server/consensus/cons_check.h"
#include "server/core/limits.h"
#include "server/core/log.h"
#include "server/core/metrics.h"
#include "server/core/xalloc.h"
#include "server/fleet/fleet_thread.h"
#include "server/http/auth.h"
#include "server/http/defer.h"
#include "server/http/reply.h"
#include "server/http/route.h"
#include "server/store/batch.h"
#include "server/store/held.h"
#include "server/store/runs.h"
#include "server/store/write.h"

static const char *const REGISTER_FIRST = "register the run first with POST /api/v1/runs";
static const char *const JSON_HINT = "send one JSON object; see docs/server.md for the fields";

/* parse_body - the request body as a JSON object, or NULL after replying 400. */
static json_t *parse_body(http_req *req)
{
    json_error_t jerr;
    if (!req->len) {
        http_reply_error(req, 400, "empty body", "this endpoint takes a JSON object", JSON_HINT);
        return NULL;
    }
    json_t *o = json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        char detail[300];
        snprintf(detail, sizeof(detail), "line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
        http_reply_error(req, 400, "malformed JSON", detail, JSON_HINT);
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        http_reply_error(req, 400, "wrong type", "the body is not a JSON object", JSON_HINT);
        return NULL;
    }
    return o;
}

/* bad_field - reply 400 for field `key` that must be `what`. */
static enum MHD_Result bad_field(http_req *req, const char *key, const char *what, int missing)
{
    char detail[200];
    snprintf(detail, sizeof(detail), "\"%s\" %s %s", key, missing ? "is missing; it must be" : "must be", what);
    return http_reply_error(req, 400, missing ? "missing field" : "wrong type", detail, JSON_HINT);
}

/* The text fields of a registration: their limits (server/core/limits.h) and whether they may be empty. */
static const struct {
    const char *key;
    size_t max;
    int required, integer_ok;
} RUN_FIELDS[] = {
    {"job_id", JOB_ID_MAX, 1, 1},
    {"step_id", STEP_ID_MAX, 0, 1},
    {"twin_group", GROUP_NAME_MAX, 0, 0},
    {"user", USER_MAX, 0, 0},
    {"partition", PARTITION_MAX, 0, 0},
    {"nodes", NODES_MAX, 0, 0},
    {"command", COMMAND_MAX, 0, 0},
    {"mode", 16, 0, 0},
    {"client_id", CLIENT_ID_MAX, 0, 0},
    {"resume", WIRE_RESUME_MAX - 1, 0, 0}, /* the plugin's --lockstep-resume template (wire_resume_check) */
};

/* check_resume_argv - a registration's resume template (one line, already checked) splits into words that name a
 * checkpoint (wire_resume_check), and its argv, when given, is an argument vector (wire_argv_valid). Returns 0, or
 * -1 after replying 400. */
static int check_resume_argv(http_req *req, json_t *o)
{
    const char *resume = json_string_value(json_object_get(o, "resume"));
    char why[300];
    if (resume && *resume && wire_resume_check(resume, why, sizeof(why)) < 0) {
        http_reply_error(req, 400, "bad resume template", why,
                         "a resume template is the command that resumes from a checkpoint, in words quoted as for "
                         "sh, naming {step} or {path}; see docs/server.md, Narrows");
        return -1;
    }
    json_t *argv = json_object_get(o, "argv");
    if (!argv || json_is_null(argv))
        return 0;
    char *words[WIRE_ARGV_WORDS + 1];
    size_t n = json_is_array(argv) ? json_array_size(argv) : 0;
    int ok = n >= 1 && n <= WIRE_ARGV_WORDS;
    for (size_t i = 0; ok && i < n; i++) {
        json_t *w = json_array_get(argv, i);
        ok = json_is_string(w) && strlen(json_string_value(w)) == json_string_length(w);
        words[i] = ok ? (char *)json_string_value(w) : NULL;
    }
    if (!ok || !wire_argv_valid(words, (int)n)) {
        http_reply_error(req, 400, "bad argv",
                         "\"argv\" must be an array of 1 to " WIRE_ARGV_WORDS_TEXT " strings (the program's words, "
                         "the first not empty), UTF-8, " WIRE_ARGV_MAX_TEXT " bytes in all",
                         "argv is the step's argument vector as slurmstepd gives it; leave it out when unknown");
        return -1;
    }
    return 0;
}

/* check_run_fields - the registration's shape and name rules (docs/server.md, "Limits"): every text field a
 * string (job_id and step_id may be non-negative integers, made strings here), within its length, UTF-8
 * without control characters; mode one of off, fp, det; ranks 1..RUN_MAX_RANKS; start_step 0..
 * RUN_MAX_START_STEP. `job_only`: job_id alone (checked before the token, which is the job's). Returns 0, or -1
 * after replying 400. */
static int check_run_fields(http_req *req, json_t *o, int job_only)
{
    for (size_t i = 0; i < (job_only ? 1 : sizeof(RUN_FIELDS) / sizeof(RUN_FIELDS[0])); i++) {
        const char *key = RUN_FIELDS[i].key;
        json_t *v = json_object_get(o, key);
        if (RUN_FIELDS[i].integer_ok && json_is_integer(v) && json_integer_value(v) >= 0) {
            char num[32];
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            json_object_set_new(o, key, json_string(num));
            v = json_object_get(o, key);
        }
        if (!v || json_is_null(v)) {
            if (!RUN_FIELDS[i].required)
                continue;
            bad_field(req, key, "a non-empty string (the Slurm job id)", 1);
            return -1;
        }
        if (!json_is_string(v)) {
            bad_field(req, key, RUN_FIELDS[i].integer_ok ? "a string or a non-negative integer" : "a string", 0);
            return -1;
        }
        const char *t = json_string_value(v);
        size_t len = json_string_length(v);
        char detail[200];
        if (RUN_FIELDS[i].required && len == 0) {
            bad_field(req, key, "a non-empty string", 1);
            return -1;
        }
        if (len > RUN_FIELDS[i].max) {
            snprintf(detail, sizeof(detail), "\"%s\" is %zu bytes; it may be at most %zu", key, len, RUN_FIELDS[i].max);
            http_reply_error(req, 400, "field too long", detail, "see the limits in docs/server.md");
            return -1;
        }
        if (!text_line_valid(t, len)) {
            snprintf(detail, sizeof(detail), "\"%s\" holds a control character (a newline, a tab, ...) or a NUL", key);
            http_reply_error(req, 400, "bad text", detail, "names and ids are one line of UTF-8 text");
            return -1;
        }
        if (!strcmp(key, "mode") && *t && strcmp(t, "off") && strcmp(t, "consensus") && strcmp(t, "fp") &&
            strcmp(t, "det")) {
            bad_field(req, key, "one of \"off\", \"consensus\", \"fp\", \"det\"", 0);
            return -1;
        }
        if (!strcmp(key, "twin_group") && len == 0)
            json_object_del(o, key); /* "" is no group */
    }
    json_t *ranks = json_object_get(o, "ranks");
    if (!ranks)
        json_object_set_new(o, "ranks", json_integer(1));
    else if (!json_is_integer(ranks) || json_integer_value(ranks) < 1 || json_integer_value(ranks) > RUN_MAX_RANKS) {
        char what[80];
        snprintf(what, sizeof(what), "an integer from 1 to %d", RUN_MAX_RANKS);
        bad_field(req, "ranks", what, 0);
        return -1;
    }
    if (!job_only && check_resume_argv(req, o) < 0)
        return -1;
    json_t *start = json_object_get(o, "start_step");
    if (!start)
        json_object_set_new(o, "start_step", json_integer(0));
    else if (!json_is_integer(start) || json_integer_value(start) < 0 ||
             json_integer_value(start) > RUN_MAX_START_STEP) {
        bad_field(req, "start_step", "an integer from 0 to 2^62", 0);
        return -1;
    }
    return 0;
}

static enum MHD_Result ingest_run_create(http_req *req, char **args)
{
    (void)args;
    json_t *o = parse_body(req);
    if (!o)
        return MHD_YES;
    enum MHD_Result res = MHD_YES;
    if (check_run_fields(req, o, 1) < 0 || http_auth_job(req, json_string_value(json_object_get(o, "job_id"))) < 0 ||
        check_run_fields(req, o, 0) < 0)
        goto out_decref;
    /* Who registers: what slurmstepd (its attestation token) or the admin vouches for, else what slurmstepd
     * attested for another step of the same job, else only what the job reports. */
    const char *job_id = json_string_value(json_object_get(o, "job_id"));
    const char *user = json_string_value(json_object_get(o, "user"));
    char known[USER_MAX + 1];
    run_claim who = {user ? user : "", NULL, http_is_admin(req)};
    if ((who.admin || http_token_is_attest(req, job_id)) && user && *user)
        who.attested_user = user;
    else if (!who.admin)
        who.attested_user = store_job_attested_user(job_id, known, sizeof(known));
    if (who.attested_user && strchr(who.attested_user, '/')) { /* OWNER/NAME keys need owners without '/' */
        res = http_reply_error(req, 400, "bad user", "an attested user name holds no '/'",
                               "see docs/server.md, \"Twin groups and owners\"");
        goto out_decref;
    }
    run_info run;
    srv_error e;
    int created = 0;
    group_admission adm;
    if (store_run_create(o, &who, &run, &created, &adm, &e) < 0) {
        res = http_reply_srv_error(req, e.status ? e.status : 503, &e);
        goto out_decref;
    }
    if (adm.set_aside > 0) {
        /* Its owner claimed the group and runs of others left it: compared again from the start without them,
         * and evaluated again (the fleet took back its evidence in the claim's transaction). */
        log_info("twin group %s claimed by %s: %d runs set aside", adm.key, who.attested_user, adm.set_aside);
        for (int r = 0; r < adm.ranks; r++)
            cmp_notify(adm.key, r, 0);
        fleet_notify(adm.key);
        fleet_kick();
    }
    if (created)
        log_info("run %s registered (job %s, group %s, %d ranks)", run.run_id, run.job_id,
                 run.group[0] ? run.group : "-", run.ranks);
    else
        log_info("run %s registered again by its client (job %s): the same run", run.run_id, run.job_id);
    res = http_reply_json(req, created ? 201 : 200, json_pack("{s:s}", "run_id", run.run_id));
out_decref:
    json_decref(o);
    return res;
}

/* rank_of - the "rank" field of `o`, checked against the run; -1 after replying 400. */
static int rank_of(http_req *req, const json_t *o, const run_info *run)
{
    const json_t *v = json_object_get(o, "rank");
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        bad_field(req, "rank", "a non-negative integer", v == NULL);
        return -1;
    }
    if (json_integer_value(v) >= run->ranks) {
        char detail[160];
        snprintf(detail, sizeof(detail), "rank %" JSON_INTEGER_FORMAT " is outside 0..%d of this run",
                 json_integer_value(v), run->ranks - 1);
        http_reply_error(req, 400, "rank out of range", detail, "the run was registered with fewer ranks");
        return -1;
    }
    return (int)json_integer_value(v);
}

/* rank_request - the preamble of a rank's write (manifest, end): the run in the URL, the job's token, the JSON
 * body and its "rank". Returns the body (the caller decrefs) with *rank >= 0; *rank < 0 when a 400 was sent; NULL
 * when a reply was sent before there was a body. */
static json_t *rank_request(http_req *req, const char *run_id, run_info *run, int *rank)
{
    if (api_run_find(req, run_id, run, REGISTER_FIRST) < 0 || http_auth_job(req, run->job_id) < 0)
        return NULL;
    json_t *o = parse_body(req);
    if (o)
        *rank = rank_of(req, o, run);
    return o;
}

static enum MHD_Result ingest_manifest(http_req *req, char **args)
{
    const char *run_id = args[0];
    run_info run;
    int rank = -1;
    json_t *o = rank_request(req, run_id, &run, &rank);
    if (!o)
        return MHD_YES;
    enum MHD_Result res = MHD_YES;
    if (rank >= 0) {
        msecret_scrub(o); /* an older agent's secret-named variables are not kept */
        char *text = json_dumps(o, JSON_COMPACT);
        srv_error e;
        if (!text)
            res = http_reply_error(req, 500, "out of memory", "serializing the manifest", "");
        else if (store_manifest(&run, rank, text, &e) < 0)
            res = http_reply_srv_error(req, 503, &e);
        else
            res = http_reply_json(req, 200, json_pack("{s:s, s:i}", "run_id", run.run_id, "rank", rank));
        free(text);
    }
    json_decref(o);
    return res;
}

static int content_is(const char *ct, const char *want)
{
    size_t n = strlen(want);
    return ct && strncasecmp(ct, want, n) == 0 && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

#define STORE_CHUNK 256 /* batches one transaction stores at most (each holds its rank's lock until the commit) */

/* One batch of a request: to store, or refused before (status, and the reply's error). */
typedef struct store_item {
    srv_batch batch;
    int status;    /* 0: to store; else the status it was refused with */
    srv_error err; /* status != 0: why */
} store_item;

/* A request's batches on their way to a database worker: one (application/x-lockstep or JSON), or a bundle's
 * (application/x-lockstep-bundle: several ranks' batches of one run, as a node's relay posts them; the reply lists
 * each one's). */
typedef struct store_req {
    run_info run;
    int bundle;
    size_t n;
    store_item *items;
} store_req;

/* item_error_json - the error object of a batch that failed, with its status. */
static json_t *item_error_json(int status, const srv_error *e)
{
    return status >= 500 ? http_internal_error_json(e->error, e->detail, e->hint)
                         : http_error_json(e->error, e->detail, e->hint);
}

/* store_reply - the reply to one batch once stored (or not): 200 once committed or for a duplicate, with the steps
 * whose held-back records lockstepd wants (digest streaming); 503 with an error object when the database failed.
 * Counts it and queues its comparison. */
static json_t *store_reply(const run_info *run, const srv_batch *b, int rc, const store_result *res, const srv_error *e,
                           int *status)
{
    if (rc < 0) {
        *status = 503;
        return item_error_json(503, e);
    }
    metrics_batch(b->n, res->duplicate);
    if (!res->duplicate && (b->n || b->n_digests))
        cmp_stored(run->group, run->key, b, res);
    if (!res->duplicate && b->n_cons) { /* a window may be complete: judged from memory */
        cons_comms_stored(run->key, b->cons, b->n_cons);
        cons_digests_stored(run->key, b->rank, b->cons, b->n_cons, res->commit_s);
    }
    if (!res->duplicate && b->held) /* a divergence's records may have come */
        cons_notify(run->key);
    *status = 200;
    json_t *o = json_pack("{s:s, s:i, s:I, s:I, s:b}", "run_id", run->run_id, "rank", (int)b->rank, "batch_seq",
                          (json_int_t)b->batch_seq, "stored", (json_int_t)(res->duplicate ? 0 : b->n), "duplicate",
                          res->duplicate);
    if (res->n_want > 0) { /* digest streaming: the records of these steps, please (docs/agent.md) */
        json_t *want = json_array();
        for (int i = 0; i < res->n_want; i++)
            json_array_append_new(want, json_integer(res->want[i]));
        json_object_set_new(o, "send_steps", want);
    }
    return o;
}

/* bundle_reply - a bundle's reply: each batch's, in the bundle's order, with its status; 200 unless every batch
 * failed in the database (503: nothing was stored, the whole bundle may be sent again). */
static json_t *bundle_reply(const store_req *q, json_t **each, const int *st, int *status)
{
    json_t *arr = json_array();
    int failed = 0;
    for (size_t i = 0; i < q->n; i++) {
        json_object_set_new(each[i], "status", json_integer(st[i]));
        if (!json_object_get(each[i], "rank"))
            json_object_set_new(each[i], "rank", json_integer(q->items[i].batch.rank));
        json_array_append_new(arr, each[i]);
        failed += st[i] == 503;
    }
    *status = failed == (int)q->n ? 503 : 200;
    json_t *o = *status == 503 ? http_internal_error_json("database error", "no batch of the bundle was stored",
                                                          "send the bundle again")
                               : json_object();
    json_object_set_new(o, "run_id", json_string(q->run.run_id));
    json_object_set_new(o, "batches", arr);
    return o;
}

/* store_jobs_run - store the batches of `n` requests in as few transactions as their count allows (STORE_CHUNK a
 * transaction; see store_batches), each request replied to only after the commits of its batches. */
static void store_jobs_run(void **args, size_t n, json_t **replies, int *statuses)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ((store_req *)args[i])->n;
    const run_info **runs = xcalloc(total, sizeof(*runs));
    const srv_batch **batches = xcalloc(total, sizeof(*batches));
    store_result *res = xcalloc(total, sizeof(*res));
    srv_error *e = xcalloc(total, sizeof(*e));
    int *rc = xcalloc(total, sizeof(*rc));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        store_req *q = args[i];
        for (size_t j = 0; j < q->n; j++)
            if (!q->items[j].status) {
                runs[k] = &q->run;
                batches[k++] = &q->items[j].batch;
            }
    }
    for (size_t off = 0; off < k; off += STORE_CHUNK)
        store_batches(runs + off, batches + off, k - off < STORE_CHUNK ? k - off : STORE_CHUNK, res + off, rc + off,
                      e + off);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        store_req *q = args[i];
        json_t **each = xcalloc(q->n, sizeof(*each));
        int *st = xcalloc(q->n, sizeof(*st));
        for (size_t j = 0; j < q->n; j++) {
            const store_item *it = &q->items[j];
            if (it->status) {
                st[j] = it->status;
                each[j] = item_error_json(it->status, &it->err);
            } else {
                each[j] = store_reply(&q->run, &it->batch, rc[k], &res[k], &e[k], &st[j]);
                k++;
            }
        }
        if (q->bundle)
            replies[i] = bundle_reply(q, each, st, &statuses[i]);
        else {
            replies[i] = each[0];
            statuses[i] = st[0];
        }
        free(each);
        free(st);
    }
    for (size_t i = 0; i < k; i++)
        store_result_release(&res[i]);
    free(runs);
    free(batches);
    free(res);
    free(e);
    free(rc);
}

static void store_req_free(void *arg)
{
    store_req *q = arg;
    for (size_t i = 0; i < q->n; i++)
        batch_release(&q->items[i].batch);
    free(q->items);
    free(q);
}

/* check_batch - a decoded batch of `run`, before it is stored: its stream header names this run, its rank is one of
 * the run's, its batch_seq fits, and held records answer their step digests. Returns 0, or the status to refuse it
 * with (`e` filled). */
static int check_batch(const run_info *run, const srv_batch *b, srv_error *e)
{
    char detail[200];
    if (b->run_id[0] && strcasecmp(b->run_id, run->run_id) != 0) {
        snprintf(detail, sizeof(detail), "the stream header names run %.40s, the URL run %s", b->run_id, run->run_id);
        srv_error_set(e, "run id mismatch", detail, "post each batch to its own run's URL");
        return 400;
    }
    if (b->rank >= (uint32_t)run->ranks) {
        snprintf(detail, sizeof(detail), "rank %u is outside 0..%d of this run", b->rank, run->ranks - 1);
        srv_error_set(e, "rank out of range", detail, "the run was registered with fewer ranks");
        return 400;
    }
    if (b->batch_seq > INT64_MAX) {
        srv_error_set(e, "batch_seq out of range", "batch_seq must fit in 63 bits", "");
        return 400;
    }
    int rc;
    if (b->held && (rc = store_held_check(run, b, e)) < 0) /* digest streaming: they must answer the digest */
        return rc == -1 ? (e->status ? e->status : 400) : 503;
    return 0;
}

/* decode_bundle - a bundle's batches into q->items: each a 4-byte little-endian length, then the batch as
 * application/x-lockstep frames it. A batch that does not decode or pass check_batch is refused alone (its item's
 * status); the framing itself must hold. Returns 0, or -1 with `e` filled (400). */
static int decode_bundle(store_req *q, const unsigned char *p, size_t len, srv_error *e)
{
    char detail[200];
    size_t off = 0;
    while (off < len) {
        if (len - off < 4 || q->n == WIRE_BUNDLE_MAX) {
            snprintf(detail, sizeof(detail), "%s at byte %zu",
                     q->n == WIRE_BUNDLE_MAX ? "more than " WIRE_BUNDLE_MAX_TEXT " batches" : "a length cut short",
                     off);
            return srv_error_set(
                e, "bad bundle", detail,
                "each batch is a 4-byte little-endian length, then the batch; at most " WIRE_BUNDLE_MAX_TEXT
                " batches a bundle");
        }
        uint32_t n = wire_bundle_len_get(p + off);
        off += 4;
        if (n == 0 || n > len - off) {
            snprintf(detail, sizeof(detail), "batch %zu of the bundle claims %u bytes at byte %zu, %zu are left", q->n,
                     n, off - 4, len - off);
            return srv_error_set(e, "bad bundle", detail,
                                 "each batch is a 4-byte little-endian length, then the batch");
        }
        q->items = xrealloc(q->items, (q->n + 1) * sizeof(*q->items));
        store_item *it = &q->items[q->n++];
        memset(it, 0, sizeof(*it));
        if (batch_decode_binary(&it->batch, p + off, n, &it->err) < 0)
            it->status = it->err.status ? it->err.status : 400;
        else
            it->status = check_batch(&q->run, &it->batch, &it->err);
        off += n;
    }
    if (q->n == 0)
        return srv_error_set(e, "empty bundle", "the bundle carries no batch", "send at least one batch");
    return 0;
}

static enum MHD_Result ingest_records(http_req *req, char **args)
{
    const char *run_id = args[0];
    store_req *q = xcalloc(1, sizeof(*q));
    run_info *run = &q->run;
    enum MHD_Result res = MHD_YES;
    if (api_run_find(req, run_id, run, REGISTER_FIRST) < 0 || http_auth_job(req, run->job_id) < 0)
        goto out_free;
    const char *ct = http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *body = req->body ? req->body : "";
    srv_error e;
    memset(&e, 0, sizeof(e));
    int rc;
    if (content_is(ct, "application/x-lockstep-bundle")) {
        q->bundle = 1;
        if (decode_bundle(q, (const unsigned char *)body, req->len, &e) < 0) {
            res = http_reply_srv_error(req, 400, &e);
            goto out_free;
        }
        metrics_bundle(q->n);
    } else {
        q->items = xcalloc(1, sizeof(*q->items));
        q->n = 1;
        srv_batch *b = &q->items[0].batch;
        if (content_is(ct, "application/x-lockstep"))
            rc = batch_decode_binary(b, body, req->len, &e);
        else if (content_is(ct, "application/json"))
            rc = batch_decode_json(b, body, req->len, &e);
        else {
            char detail[200];
            snprintf(detail, sizeof(detail), "Content-Type \"%.100s\"", ct ? ct : "(none)");
            res = http_reply_error(req, 415, "unsupported content type", detail,
                                   "send application/x-lockstep (record framing), application/x-lockstep-bundle "
                                   "(several ranks' batches) or application/json");
            goto out_free;
        }
        if (rc < 0 || (rc = check_batch(run, b, &e)) != 0) {
            res = http_reply_srv_error(req, rc < 0 ? 400 : rc, &e);
            goto out_free;
        }
    }
    if (http_defer_grouped(req, store_jobs_run, store_req_free, q) == 0)
        return MHD_YES; /* a database worker replies once the batches are committed */
    int status = 0;
    json_t *reply = NULL;
    void *arg = q;
    store_jobs_run(&arg, 1, &reply, &status);
    res = http_reply_json(req, status, reply);
out_free:
    store_req_free(q);
    return res;
}

static enum MHD_Result ingest_end(http_req *req, char **args)
{
    const char *run_id = args[0];
    run_info run;
    int rank = -1;
    json_t *o = rank_request(req, run_id, &run, &rank);
    if (!o)
        return MHD_YES;
    enum MHD_Result res = MHD_YES;
    if (rank < 0)
        goto out_decref;
    const json_t *code = json_object_get(o, "exit_code");
    if (code &&
        (!json_is_integer(code) || json_integer_value(code) < INT32_MIN || json_integer_value(code) > INT32_MAX)) {
        res = bad_field(req, "exit_code", "an integer", 0);
        goto out_decref;
    }
    const json_t *abort = json_object_get(o, "abort");
    if (abort && !json_is_boolean(abort)) {
        res = bad_field(req, "abort", "true or false", 0);
        goto out_decref;
    }
    /* an agent's word for a rank that used MPI and recorded none of it (agent/mpiseen.h) */
    const json_t *unseen = json_object_get(o, "mpi_unseen");
    const char *uv = json_string_value(unseen);
    if (unseen && !json_is_null(unseen) && !(uv && (!strcmp(uv, "unloaded") || !strcmp(uv, "unseen")))) {
        res = bad_field(req, "mpi_unseen", "\"unloaded\" or \"unseen\"", 0);
        goto out_decref;
    }
    int done = 0;
    srv_error e;
    if (store_rank_end(&run, rank, code ? (int)json_integer_value(code) : 0, json_is_true(abort), uv, &done, &e) < 0) {
        res = http_reply_srv_error(req, 503, &e);
        goto out_decref;
    }
    /* Steps a rank's end completes, and records missing at the end, are found now; this rank is compared at once,
     * so that the reply can ask for held-back records of differing steps while the agent still has them in hand
     * (digest streaming), unless the comparison's memory vouches that no such step differs (cmp_end). */
    if (run.group[0] && cmp_end(run.group, rank, run.key) < 0)
        cmp_notify(run.group, rank, 0);
    /* The same for the run's own consensus: a disagreement its last batches complete is found now, so that the
     * reply asks this rank for the step's held-back records before its agent exits. */
    if (cons_check_run(run.key) < 0)
        cons_notify(run.key);
    if (done) {
        log_info("run %s ended", run.run_id);
        for (int r = 0; r < run.ranks && r < 65536; r++)
            cmp_notify(run.group, r, 0);
    }
    json_t *reply = json_pack("{s:s, s:i, s:b}", "run_id", run.run_id, "rank", rank, "run_ended", done);
    int64_t want[STORE_WANT_MAX];
    int n_want = store_wanted_steps(&run, rank, want, STORE_WANT_MAX, &e);
    if (n_want > 0) {
        json_t *a = json_array();
        for (int i = 0; i < n_want; i++)
            json_array_append_new(a, json_integer(want[i]));
        json_object_set_new(reply, "send_steps", a);
    }
    res = http_reply_json(req, 200, reply);
out_decref:
    json_decref(o);
    return res;
}

/* check_token_present - a registration's check before its body: with a site secret, a request without any
 * token is refused before a byte of its body is read (which job it is for is only in the body). */
static int check_token_present(http_req *req, char **args)
{
    (void)args;
    return http_auth_present(req);
}

/* check_run_writer - a rank write's check before its body: the run in the path exists and the request
 * carries its job's token (or the admin token). */
static int check_run_writer(http_req *req, char **args)
{
    run_info run;
    return api_run_find(req, args[0], &run, REGISTER_FIRST) < 0 || http_auth_job(req, run.job_id) < 0 ? -1 : 0;
}

static const route ROUTES[] = {
    {"POST", "/api/v1/runs", MR_RUNS_CREATE, AUTH_SELF, ingest_run_create, HTTP_BODY_DEFAULT, check_token_present},
    {"POST", "/api/v1/runs/{}/manifest", MR_MANIFEST, AUTH_SELF, ingest_manifest, MANIFEST_BODY_MAX, check_run_writer},
    {"POST", "/api/v1/runs/{}/records", MR_RECORDS, AUTH_SELF, ingest_records, ROUTE_BODY_CONFIG, check_run_writer},
    {"POST", "/api/v1/runs/{}/end", MR_END, AUTH_SELF, ingest_end, HTTP_BODY_DEFAULT, check_run_writer},
};

void api_ingest_register(void)
{
    route_add(ROUTES, sizeof(ROUTES) / sizeof(ROUTES[0]));
}

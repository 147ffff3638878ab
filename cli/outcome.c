/* outcome.c - one job's own outcome in a twin group, in words, from the group's document (GET /api/v1/twins/G): the
 * outcome is lockstepd's (each run's "outcome", server/rules/outcome.h); this file only says it. */
#include "cli/outcome.h"

#include <stdio.h>
#include <string.h>

/* str - a member's text ("" when absent or not a string). */
static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* job_of - the job of the group's run `run_id` ("" when unknown). */
static const char *job_of(json_t *twin, const char *run_id)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(twin, "runs"), i, r)
    {
        if (!strcmp(str(r, "run_id"), run_id))
            return str(r, "job_id");
    }
    return "";
}

/* is_mine - 1 when the group's run `run_id` belongs to job `job`. */
static int is_mine(json_t *twin, const char *run_id, const char *job)
{
    return !strcmp(job_of(twin, run_id), job);
}

/* exit_code_of - the run's exit code (its first failing rank's), -1 when none is known. */
static long long exit_code_of(json_t *run)
{
    json_t *c = json_object_get(run, "exit_code");
    return json_is_integer(c) ? (long long)json_integer_value(c) : -1;
}

/* where - " at step S, rank R (NAME)[: CAUSE][, CLASS]" of the group's first divergence, into `out`. */
static void where(json_t *twin, char *out, size_t cap)
{
    json_t *fd = json_object_get(twin, "first_divergence");
    const char *cause = str(fd, "cause"), *klass = str(json_object_get(twin, "classification"), "class");
    size_t n = (size_t)snprintf(out, cap, " at step %lld, rank %lld (%s)",
                                (long long)json_integer_value(json_object_get(fd, "step")),
                                (long long)json_integer_value(json_object_get(fd, "rank")), str(fd, "name"));
    if (*cause && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ": %s", cause);
    if (*klass && strcmp(klass, "none") && n < cap)
        snprintf(out + n, cap - n, ", %s", klass);
}

/* The most telling outcome first: a job with several runs in the group reads as the most telling of theirs. */
static const char *const BY_WEIGHT[] = {"odd-one-out", "outside-majority", "failed",  "majority",
                                        "diverged",    "incomplete",       "matched", "pending"};

static size_t weight(const char *o)
{
    for (size_t i = 0; i < sizeof(BY_WEIGHT) / sizeof(BY_WEIGHT[0]); i++)
        if (!strcmp(o, BY_WEIGHT[i]))
            return i;
    return sizeof(BY_WEIGHT) / sizeof(BY_WEIGHT[0]);
}

/* What lockstepd says of the group's runs (each run's "outcome", server/rules/outcome.h), for job `job`. */
typedef struct standing {
    const char *kind;       /* the job's most telling outcome; NULL when lockstepd gave its runs none */
    json_t *run;            /* the job's run of that outcome (borrowed) */
    const char *odd_job;    /* the odd run's job when it is another job's */
    char off_jobs[200];     /* the jobs of other runs outside the majority, "4, 5" */
    const char *failed_job; /* another job whose run failed */
    int others;             /* other jobs' runs the first divergence compared */
    const char *other_job;  /* a job of one of them (a pair's twin) */
} standing;

static void stand(json_t *twin, const char *job, standing *s)
{
    memset(s, 0, sizeof(*s));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(twin, "runs"), i, r)
    {
        const char *o = str(r, "outcome"), *j = str(r, "job_id");
        if (!*o)
            continue;
        if (!strcmp(j, job)) {
            if (!s->kind || weight(o) < weight(s->kind)) {
                s->kind = o;
                s->run = r;
            }
            continue;
        }
        if (!strcmp(o, "odd-one-out"))
            s->odd_job = j;
        else if (!strcmp(o, "failed"))
            s->failed_job = j;
        size_t n = strlen(s->off_jobs);
        if ((!strcmp(o, "odd-one-out") || !strcmp(o, "outside-majority")) && n < sizeof(s->off_jobs))
            snprintf(s->off_jobs + n, sizeof(s->off_jobs) - n, "%s%s", n ? ", " : "", j);
    }
    json_array_foreach(json_object_get(json_object_get(twin, "first_divergence"), "runs"), i, r)
    {
        if (is_mine(twin, str(r, "run_id"), job))
            continue;
        s->others++;
        s->other_job = job_of(twin, str(r, "run_id"));
    }
}

/* diverged - the words for the job's outcome `s->kind` in a diverged group. */
static void diverged(json_t *twin, const char *name, const char *node, const standing *s, job_outcome *out)
{
    char at[400];
    where(twin, at, sizeof(at));
    out->needs_look = 1;
    out->kind = s->kind;
    if (!strcmp(s->kind, "odd-one-out")) {
        snprintf(out->text, sizeof(out->text), "%s odd one out%s", name, at);
    } else if (!strcmp(s->kind, "outside-majority")) {
        snprintf(out->text, sizeof(out->text), "%s outside the majority%s", name, at);
    } else if (!strcmp(s->kind, "majority")) {
        if (s->odd_job && *s->odd_job)
            snprintf(out->text, sizeof(out->text), "%s matched the majority (job %s is the odd one out)", name,
                     s->odd_job);
        else
            snprintf(out->text, sizeof(out->text), "%s matched the majority (jobs %s are outside it)", name,
                     s->off_jobs);
    } else {
        out->kind = "diverged";
        int n = snprintf(out->text, sizeof(out->text), "%s diverged ", name);
        if (s->others == 1 && s->other_job && *s->other_job)
            n += snprintf(out->text + n, sizeof(out->text) - (size_t)n, "from its twin, job %s,", s->other_job);
        else
            n += snprintf(out->text + n, sizeof(out->text) - (size_t)n, "with no majority to say which run is off,");
        n += snprintf(out->text + n, sizeof(out->text) - (size_t)n, "%s", at);
        if (node && *node && n > 0 && (size_t)n < sizeof(out->text))
            snprintf(out->text + n, sizeof(out->text) - (size_t)n, " (its rank %lld ran on %s)",
                     (long long)json_integer_value(json_object_get(json_object_get(twin, "first_divergence"), "rank")),
                     node);
    }
}

/* incomplete - the words for the job's outcome in an incomplete group: its run failed, another's did, or nothing
 * in common. */
static void incomplete(const char *name, const standing *s, job_outcome *out)
{
    out->needs_look = 1;
    if (!strcmp(s->kind, "failed")) {
        long long code = exit_code_of(s->run);
        out->kind = "failed";
        if (code > 0)
            snprintf(out->text, sizeof(out->text), "%s incomplete: this job's run failed (exit %lld)", name, code);
        else
            snprintf(out->text, sizeof(out->text), "%s incomplete: this job's run failed", name);
        return;
    }
    out->kind = "incomplete";
    if (s->failed_job)
        snprintf(out->text, sizeof(out->text), "%s incomplete: job %s's run failed", name, s->failed_job);
    else
        snprintf(out->text, sizeof(out->text), "%s incomplete: the runs have nothing in common to compare", name);
}

void outcome_of(json_t *twin, const char *name, const char *job, const char *node, job_outcome *out)
{
    const char *status = str(twin, "status");
    standing s;
    memset(out, 0, sizeof(*out));
    stand(twin, job, &s);
    if (!s.kind) { /* lockstepd named no outcome for this job's runs (none listed, or an older lockstepd) */
        out->kind = !strcmp(status, "match") ? "matched" : *status ? status : "unknown";
        out->needs_look = !strcmp(status, "diverged") || !strcmp(status, "incomplete");
        snprintf(out->text, sizeof(out->text), "%s %s", name, out->kind);
    } else if (!strcmp(status, "diverged")) {
        diverged(twin, name, node, &s, out);
    } else if (!strcmp(status, "incomplete")) {
        incomplete(name, &s, out);
    } else {
        out->kind = s.kind;
        snprintf(out->text, sizeof(out->text), "%s %s", name, s.kind);
    }
}

const char *outcome_run_to_place(json_t *twin, const char *job, int *rank)
{
    standing s;
    json_t *fd = json_object_get(twin, "first_divergence");
    if (strcmp(str(twin, "status"), "diverged") || !json_is_object(fd))
        return NULL;
    stand(twin, job, &s);
    *rank = (int)json_integer_value(json_object_get(fd, "rank"));
    if (!s.kind || strcmp(s.kind, "diverged") || *rank < 0)
        return NULL; /* placed by a majority (or nothing known): the node would tell nothing more */
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(fd, "runs"), i, r)
    {
        if (is_mine(twin, str(r, "run_id"), job))
            return str(r, "run_id");
    }
    return NULL;
}

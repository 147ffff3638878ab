/* outcome.c - one job's own outcome in a twin group, from the group's document (GET /api/v1/twins/G). */
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

/* failed - 1 when the run ended with a nonzero exit, or failed. *code is its exit code (-1 when none). */
static int failed(json_t *run, long long *code)
{
    json_t *c = json_object_get(run, "exit_code");
    *code = json_is_integer(c) ? (long long)json_integer_value(c) : -1;
    return (*code > 0) || !strcmp(str(run, "status"), "failed");
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

/* Where this job's runs stand at the first divergence: in the majority, outside it, the odd one out, or not
 * placed by a majority (a pair, or no content shared by more than half the runs). */
typedef struct standing {
    int odd, outside, inside, unplaced, others;
    const char *odd_job;   /* the odd run's job when it is another job's */
    const char *other_job; /* a job of another run of the group (a pair's twin) */
    char off_jobs[200];    /* the jobs of other runs outside the majority, "4 and 5" */
} standing;

static void stand(json_t *twin, const char *job, standing *s)
{
    memset(s, 0, sizeof(*s));
    json_t *fd = json_object_get(twin, "first_divergence");
    const char *odd = str(fd, "odd_run_id");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(fd, "runs"), i, r)
    {
        const char *id = str(r, "run_id");
        json_t *maj = json_object_get(r, "majority");
        if (!is_mine(twin, id, job)) {
            s->others++;
            s->other_job = job_of(twin, id);
            if (*odd && !strcmp(id, odd))
                s->odd_job = s->other_job;
            size_t n = strlen(s->off_jobs);
            if (json_is_false(maj) && n < sizeof(s->off_jobs))
                snprintf(s->off_jobs + n, sizeof(s->off_jobs) - n, "%s%s", n ? ", " : "", s->other_job);
            continue;
        }
        if (*odd && !strcmp(id, odd))
            s->odd++;
        else if (json_is_false(maj))
            s->outside++;
        else if (json_is_true(maj))
            s->inside++;
        else
            s->unplaced++;
    }
}

/* diverged - the outcome in a diverged group. */
static void diverged(json_t *twin, const char *name, const char *job, const char *node, job_outcome *out)
{
    char at[400];
    standing s;
    where(twin, at, sizeof(at));
    stand(twin, job, &s);
    out->needs_look = 1;
    if (s.odd) {
        out->kind = "odd-one-out";
        snprintf(out->text, sizeof(out->text), "%s odd one out%s", name, at);
    } else if (s.outside) {
        out->kind = "outside-majority";
        snprintf(out->text, sizeof(out->text), "%s outside the majority%s", name, at);
    } else if (s.inside) {
        out->kind = "majority";
        if (s.odd_job && *s.odd_job)
            snprintf(out->text, sizeof(out->text), "%s matched the majority (job %s is the odd one out)", name,
                     s.odd_job);
        else
            snprintf(out->text, sizeof(out->text), "%s matched the majority (jobs %s are outside it)", name,
                     s.off_jobs);
    } else {
        out->kind = "diverged";
        int n = snprintf(out->text, sizeof(out->text), "%s diverged ", name);
        if (s.others == 1 && s.other_job && *s.other_job)
            n += snprintf(out->text + n, sizeof(out->text) - (size_t)n, "from its twin, job %s,", s.other_job);
        else
            n += snprintf(out->text + n, sizeof(out->text) - (size_t)n, "with no majority to say which run is off,");
        n += snprintf(out->text + n, sizeof(out->text) - (size_t)n, "%s", at);
        if (node && *node && n > 0 && (size_t)n < sizeof(out->text))
            snprintf(out->text + n, sizeof(out->text) - (size_t)n, " (its rank %lld ran on %s)",
                     (long long)json_integer_value(json_object_get(json_object_get(twin, "first_divergence"), "rank")),
                     node);
    }
}

/* incomplete - the outcome in an incomplete group: this job's run failed, another's did, or nothing in common. */
static void incomplete(json_t *twin, const char *name, const char *job, job_outcome *out)
{
    size_t i;
    json_t *r;
    long long code;
    const char *other = NULL;
    out->needs_look = 1;
    json_array_foreach(json_object_get(twin, "runs"), i, r)
    {
        if (!failed(r, &code))
            continue;
        if (!strcmp(str(r, "job_id"), job)) {
            out->kind = "failed";
            if (code > 0)
                snprintf(out->text, sizeof(out->text), "%s incomplete: this job's run failed (exit %lld)", name, code);
            else
                snprintf(out->text, sizeof(out->text), "%s incomplete: this job's run failed", name);
            return;
        }
        other = str(r, "job_id");
    }
    out->kind = "incomplete";
    if (other)
        snprintf(out->text, sizeof(out->text), "%s incomplete: job %s's run failed", name, other);
    else
        snprintf(out->text, sizeof(out->text), "%s incomplete: the runs have nothing in common to compare", name);
}

void outcome_of(json_t *twin, const char *name, const char *job, const char *node, job_outcome *out)
{
    const char *status = str(twin, "status");
    memset(out, 0, sizeof(*out));
    if (!strcmp(status, "match")) {
        out->kind = "matched";
        snprintf(out->text, sizeof(out->text), "%s matched", name);
    } else if (!strcmp(status, "diverged")) {
        diverged(twin, name, job, node, out);
    } else if (!strcmp(status, "incomplete")) {
        incomplete(twin, name, job, out);
    } else {
        out->kind = *status ? status : "unknown";
        snprintf(out->text, sizeof(out->text), "%s %s", name, out->kind);
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
    if (s.odd || s.outside || s.inside || *rank < 0)
        return NULL;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(fd, "runs"), i, r)
    {
        if (is_mine(twin, str(r, "run_id"), job))
            return str(r, "run_id");
    }
    return NULL;
}

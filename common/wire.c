/* wire.c - the requests every client sends lockstepd the same way (common/wire.h). */
#include "common/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/text.h"
#include "common/words.h"

char *wire_run_body(const wire_run *r)
{
    jw w;
    jw_init(&w);
    jw_obj_begin(&w);
    jw_kv_str(&w, "job_id", r->job_id ? r->job_id : "");
    jw_kv_str(&w, "step_id", r->step_id ? r->step_id : "");
    /* the command describes the run, it names nothing: one line that fits (`python -c 'PROGRAM'` holds newlines) */
    char *command = r->command ? malloc(WIRE_COMMAND_MAX) : NULL;
    if (command)
        text_one_line(r->command, command, WIRE_COMMAND_MAX);
    char why[200];
    const char *resume =
        r->resume && *r->resume && wire_resume_check(r->resume, why, sizeof(why)) == 0 ? r->resume : NULL;
    const struct {
        const char *key, *value;
    } opt[] = {{"twin_group", r->twin_group}, {"user", r->user}, {"partition", r->partition}, {"nodes", r->nodes},
               {"command", command},          {"mode", r->mode}, {"client_id", r->client_id}, {"resume", resume}};
    jw_kv_int(&w, "ranks", r->ranks > 0 ? r->ranks : 1);
    jw_kv_int(&w, "start_step", r->start_step);
    for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
        if (opt[i].value && *opt[i].value)
            jw_kv_str(&w, opt[i].key, opt[i].value);
    if (wire_argv_valid(r->argv, r->argc)) {
        jw_key(&w, "argv");
        jw_arr_begin(&w);
        for (int i = 0; i < r->argc; i++)
            jw_str(&w, r->argv[i]);
        jw_arr_end(&w);
    }
    jw_obj_end(&w);
    free(command);
    const char *t = jw_text(&w);
    char *out = t ? strdup(t) : NULL;
    jw_release(&w);
    return out;
}

int wire_argv_valid(char *const *argv, int argc)
{
    size_t bytes = 0;
    if (!argv || argc < 1 || argc > WIRE_ARGV_WORDS || !argv[0] || !argv[0][0])
        return 0;
    for (int i = 0; i < argc; i++) {
        if (!argv[i])
            return 0;
        size_t n = strlen(argv[i]);
        bytes += n + 1;
        if (bytes > WIRE_ARGV_MAX || !text_utf8_valid(argv[i], n))
            return 0;
    }
    return 1;
}

int wire_resume_check(const char *tpl, char *why, size_t cap)
{
    static const char *const known[] = {"{step}", "{path}", "{stop}", NULL};
    int names_ckpt = 0;
    if (!tpl || !*tpl) {
        snprintf(why, cap, "the resume template is empty");
        return -1;
    }
    if (strlen(tpl) >= WIRE_RESUME_MAX) {
        snprintf(why, cap, "the resume template is longer than %d bytes", WIRE_RESUME_MAX - 1);
        return -1;
    }
    for (const char *c = strchr(tpl, '{'); c; c = strchr(c + 1, '{')) {
        const char *const *k;
        for (k = known; *k && strncmp(c, *k, strlen(*k)); k++)
            ;
        if (!*k) {
            const char *e = strchr(c, '}');
            snprintf(why, cap, "the resume template names %.*s; it knows {step}, {path} and {stop}",
                     e && e - c < 40 ? (int)(e - c + 1) : 12, c);
            return -1;
        }
        names_ckpt |= strcmp(*k, "{stop}") != 0;
    }
    if (!names_ckpt) {
        snprintf(why, cap,
                 "the resume template names no checkpoint: put {step} (the last step it holds) or {path} "
                 "(where the job said it is) where the program takes it");
        return -1;
    }
    if (!text_line_valid(tpl, strlen(tpl))) {
        snprintf(why, cap, "the resume template holds a control character (a newline, a tab, ...) or is not UTF-8");
        return -1;
    }
    char buf[WIRE_RESUME_MAX], *words[WIRE_RESUME_WORDS], wwhy[120];
    int n = words_split(tpl, buf, sizeof(buf), words, WIRE_RESUME_WORDS, wwhy, sizeof(wwhy));
    if (n < 1) {
        snprintf(why, cap, "the resume template does not split into words: %s", n < 0 ? wwhy : "it is blank");
        return -1;
    }
    return 0;
}

int wire_ckpt_path_check(const char *path, char *why, size_t cap)
{
    size_t n = strlen(path);
    if (n > WIRE_CKPT_PATH_MAX)
        snprintf(why, cap, "the checkpoint's path is %zu bytes; it may be at most %d", n, WIRE_CKPT_PATH_MAX);
    else if (!text_line_valid(path, n))
        snprintf(why, cap,
                 "the checkpoint's path holds a control character (a newline, a tab, ...) or bytes that are not UTF-8");
    else if (path[0] == '-')
        snprintf(why, cap, "the checkpoint's path begins with '-': a program would read it as an option");
    else
        return 0;
    return -1;
}

char *wire_attest_body(const wire_attest *a)
{
    jw w;
    jw_init(&w);
    jw_obj_begin(&w);
    jw_kv_str(&w, "job_id", a->job_id ? a->job_id : "");
    jw_kv_str(&w, "step_id", a->step_id ? a->step_id : "");
    jw_kv_str(&w, "node", a->node ? a->node : "");
    jw_kv_int(&w, "node_index", a->node_index);
    jw_kv_str(&w, "user", a->user ? a->user : "");
    if (a->nodes && *a->nodes)
        jw_kv_str(&w, "nodes", a->nodes);
    if (a->gpus && *a->gpus)
        jw_kv_str(&w, "gpus", a->gpus);
    jw_key(&w, "ranks");
    jw_arr_begin(&w);
    for (size_t i = 0; i < a->nranks; i++)
        jw_int(&w, a->ranks[i]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    const char *t = jw_text(&w);
    char *out = t ? strdup(t) : NULL;
    jw_release(&w);
    return out;
}

int wire_url_escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                    *p == '_' || *p == '.' || *p == '~';
        if (n + (plain ? 1 : 3) >= cap) {
            if (cap)
                out[0] = 0;
            return -1;
        }
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    if (cap)
        out[n] = 0;
    return cap ? 0 : -1;
}

int wire_lookup_path(const char *job_id, const char *step_id, char *out, size_t cap)
{
    char job[768], step[768];
    if (wire_url_escape(job_id, job, sizeof(job)) < 0 || wire_url_escape(step_id, step, sizeof(step)) < 0)
        return -1;
    int n = snprintf(out, cap, "/api/v1/runs?job=%s&step=%s&limit=1000", job, step);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* skip_string - past the JSON string starting at p ('"'), or NULL when it does not end. */
static const char *skip_string(const char *p)
{
    for (p++; *p; p++) {
        if (*p == '\\') {
            if (!p[1])
                return NULL;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* skip_value - past the JSON value at p (strings, objects and arrays balanced), or NULL. */
static const char *skip_value(const char *p)
{
    p = skip_ws(p);
    if (*p == '"')
        return skip_string(p);
    if (*p != '{' && *p != '[') {
        while (*p && *p != ',' && *p != '}' && *p != ']')
            p++;
        return *p ? p : NULL;
    }
    int depth = 0;
    while (*p) {
        if (*p == '"') {
            p = skip_string(p);
            if (!p)
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* copy_string - the JSON string at p ('"') unescaped into out. Returns 0 or -1. */
static int copy_string(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\') {
            p++;
            switch (*p) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u':
                c = '?';
                for (int k = 0; k < 4 && p[1]; k++)
                    p++;
                break;
            case 0: return -1;
            default: c = *p; break;
            }
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = c;
    }
    if (*p != '"')
        return -1;
    out[n] = 0;
    return 0;
}

/* member - the value of top-level member `key` of the object at p ('{'), or NULL. */
static const char *member(const char *p, const char *key)
{
    p = skip_ws(p);
    if (*p != '{')
        return NULL;
    p = skip_ws(p + 1);
    size_t kl = strlen(key);
    while (*p == '"') {
        const char *k = p + 1, *end = skip_string(p);
        if (!end)
            return NULL;
        int hit = (size_t)(end - 1 - k) == kl && strncmp(k, key, kl) == 0;
        p = skip_ws(end);
        if (*p != ':')
            return NULL;
        p = skip_ws(p + 1);
        if (hit)
            return p;
        p = skip_value(p);
        if (!p)
            return NULL;
        p = skip_ws(p);
        if (*p != ',')
            return NULL;
        p = skip_ws(p + 1);
    }
    return NULL;
}

int wire_obj_string(const char *obj, const char *key, char *out, size_t cap)
{
    const char *v = member(obj, key);
    if (!v || *v != '"')
        return -1;
    return copy_string(v, out, cap);
}

/* lookup_scan - wire_lookup_pick, or with `want` only the run of that id. */
static int lookup_scan(const char *reply, const char *job_id, const char *step_id, const char *want, char *run_id,
                       size_t cap)
{
    const char *p = member(reply, "items");
    if (!p || *p != '[')
        return -1;
    p = skip_ws(p + 1);
    while (*p == '{') {
        char job[256], step[256], id[64];
        if (wire_obj_string(p, "job_id", job, sizeof(job)) == 0 && !strcmp(job, job_id) &&
            wire_obj_string(p, "step_id", step, sizeof(step)) == 0 && !strcmp(step, step_id) &&
            wire_obj_string(p, "run_id", id, sizeof(id)) == 0 && strlen(id) < cap && (!want || !strcmp(id, want))) {
            memcpy(run_id, id, strlen(id) + 1);
            return 0;
        }
        p = skip_value(p);
        if (!p)
            return -1;
        p = skip_ws(p);
        if (*p == ',')
            p = skip_ws(p + 1);
    }
    return *p == ']' ? 1 : -1;
}

int wire_lookup_pick(const char *reply, const char *job_id, const char *step_id, char *run_id, size_t cap)
{
    return lookup_scan(reply, job_id, step_id, NULL, run_id, cap);
}

int wire_lookup_has(const char *reply, const char *job_id, const char *step_id, const char *run_id)
{
    char id[64];
    return lookup_scan(reply, job_id, step_id, run_id, id, sizeof(id));
}

int wire_obj_int_array(const char *obj, const char *key, long long *out, int cap)
{
    const char *p = member(obj, key);
    if (!p || *p != '[')
        return -1;
    p = skip_ws(p + 1);
    int n = 0;
    while (*p != ']') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            return -1;
        if (n < cap)
            out[n++] = v;
        p = skip_ws(end);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != ']')
            return -1;
    }
    return n;
}

int wire_obj_int(const char *obj, const char *key, long long *out)
{
    const char *p = member(obj, key);
    if (!p)
        return -1;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || (*skip_ws(end) != ',' && *skip_ws(end) != '}'))
        return -1;
    *out = v;
    return 0;
}

int wire_obj_items(const char *obj, const char *key, const char **at, size_t *len, int cap)
{
    const char *p = member(obj, key);
    if (!p || *p != '[')
        return -1;
    p = skip_ws(p + 1);
    int n = 0;
    while (*p != ']') {
        const char *end = skip_value(p);
        if (!end || end == p)
            return -1;
        if (n < cap) {
            at[n] = p;
            len[n] = (size_t)(end - p);
        }
        n++;
        p = skip_ws(end);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != ']')
            return -1;
    }
    return n;
}

void wire_bundle_len_put(unsigned char out[4], uint32_t n)
{
    out[0] = (unsigned char)n;
    out[1] = (unsigned char)(n >> 8);
    out[2] = (unsigned char)(n >> 16);
    out[3] = (unsigned char)(n >> 24);
}

uint32_t wire_bundle_len_get(const unsigned char in[4])
{
    return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}

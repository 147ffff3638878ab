/* remote.c - a run's records fetched from lockstepd into the same form as a trace directory. */
#include "cli/remote.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/recjson.h"
#include "common/dtype.h"

#define PAGE 100000

static uint64_t hex_u64(json_t *v)
{
    const char *s = json_string_value(v);
    return s ? strtoull(s, NULL, 16) : 0;
}

/* Growable arrays of one rank, with names and words kept as offsets until
 * the arrays stop moving. */
typedef struct build {
    rec_record *recs;
    size_t n, cap;
    char *names;
    size_t names_len, names_cap;
    uint64_t *words;
    size_t n_words, words_cap;
} build;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* add_record - append one JSON record; -1 when malformed or out of memory. */
static int add_record(build *b, json_t *o, uint32_t rank)
{
    rec_record r;
    memset(&r, 0, sizeof(r));
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *level = json_string_value(json_object_get(o, "level"));
    const char *dtype = json_string_value(json_object_get(o, "dtype"));
    if (!name || !level || !dtype || level_parse(level) < 0 || dtype_parse(dtype) < 0)
        return -1;
    r.rank = rank;
    r.seq = (uint64_t)json_integer_value(json_object_get(o, "seq"));
    r.step = json_integer_value(json_object_get(o, "step"));
    r.t_ns = json_integer_value(json_object_get(o, "t_ns"));
    r.nbytes = (uint64_t)json_integer_value(json_object_get(o, "nbytes"));
    r.occurrence = (uint32_t)json_integer_value(json_object_get(o, "occurrence"));
    r.level = (uint8_t)level_parse(level);
    r.dtype = (uint8_t)dtype_parse(dtype);
    r.fp = hex_u64(json_object_get(o, "fp"));
    json_t *bits = json_object_get(o, "value_bits");
    if (json_is_string(bits)) {
        r.value = hex_u64(bits);
        r.flags |= REC_HAS_VALUE;
    }
    json_t *shape = json_object_get(o, "shape");
    r.ndim = (uint8_t)(json_array_size(shape) > LS_MAX_DIMS ? LS_MAX_DIMS : json_array_size(shape));
    for (unsigned i = 0; i < r.ndim; i++)
        r.shape[i] = json_integer_value(json_array_get(shape, i));
    json_t *in = json_object_get(o, "inputs"), *ch = json_object_get(o, "chunks");
    r.n_inputs = (uint16_t)json_array_size(in);
    r.n_chunks = (uint32_t)json_array_size(ch);
    rec_ext x;
    unsigned char ext[REC_EXT_ENCODED_MAX];
    if (rec_ext_from_json(o, &r.flags, &x) < 0)
        return -1;
    size_t ext_len = rec_ext_encode(&x, ext);

    size_t len = strlen(name);
    if (len == 0 || len > LS_NAME_MAX)
        return -1;
    /* The call site's strings follow the name in the arena. */
    json_t *site = json_object_get(o, "site");
    const char *parts[3] = {json_string_value(json_object_get(site, "module")),
                            json_string_value(json_object_get(site, "function")),
                            json_string_value(json_object_get(site, "caller"))};
    size_t lens[3], max[3] = {REC_SITE_MODULE_MAX, REC_SITE_NAME_MAX, REC_SITE_NAME_MAX}, site_len = 0;
    for (int k = 0; k < 3; k++) {
        lens[k] = parts[k] ? strnlen(parts[k], max[k]) : 0;
        site_len += lens[k];
    }
    if (grow((void **)&b->recs, &b->cap, b->n + 1, sizeof(rec_record)) < 0 ||
        grow((void **)&b->names, &b->names_cap, b->names_len + len + site_len + ext_len, 1) < 0 ||
        grow((void **)&b->words, &b->words_cap, b->n_words + r.n_inputs + r.n_chunks, sizeof(uint64_t)) < 0)
        return -1;
    memcpy(b->names + b->names_len, name, len);
    r.name = (const char *)(uintptr_t)b->names_len;
    r.name_len = (uint16_t)len;
    b->names_len += len;
    if (json_is_object(site)) {
        r.site.offset = (uint64_t)json_integer_value(json_object_get(site, "offset"));
        r.site.function_offset = (uint64_t)json_integer_value(json_object_get(site, "function_offset"));
        r.site.module_len = (uint16_t)lens[0];
        r.site.function_len = (uint16_t)lens[1];
        r.site.caller_len = (uint16_t)lens[2];
        for (int k = 0; k < 3; k++) {
            if (lens[k])
                memcpy(b->names + b->names_len, parts[k], lens[k]);
            b->names_len += lens[k];
        }
    }
    memcpy(b->names + b->names_len, ext, ext_len); /* the other extension bytes follow the site's strings */
    r.ext_len = (uint16_t)ext_len;
    b->names_len += ext_len;
    r.inputs = (const uint64_t *)(uintptr_t)b->n_words;
    for (unsigned i = 0; i < r.n_inputs; i++)
        b->words[b->n_words++] = hex_u64(json_array_get(in, i));
    r.chunks = (const uint64_t *)(uintptr_t)b->n_words;
    for (unsigned i = 0; i < r.n_chunks; i++)
        b->words[b->n_words++] = hex_u64(json_array_get(ch, i));
    b->recs[b->n++] = r;
    return 0;
}

/* load_rank - page through one rank's records (the list envelope's cursor). */
static int load_rank(const client_conf *c, const char *esc_id, uint32_t rank, td_rank *out)
{
    build b = {0};
    char cursor[32] = "0";
    int rc = 0;
    for (;;) {
        char path[900];
        snprintf(path, sizeof(path), "/api/v1/runs/%s/records?rank=%u&limit=%d&cursor=%s", esc_id, rank, PAGE, cursor);
        json_t *reply;
        if ((rc = client_get(c, path, &reply, "cannot fetch the run's records")))
            goto out_free;
        json_t *recs = json_object_get(reply, "items");
        for (size_t i = 0; i < json_array_size(recs); i++) {
            if (add_record(&b, json_array_get(recs, i), rank) < 0) {
                cli_error("the server sent a record this command cannot read", NULL, "are both at one version?");
                json_decref(reply);
                rc = CLI_SERVER_ERROR;
                goto out_free;
            }
        }
        const char *next = json_string_value(json_object_get(reply, "next_cursor"));
        int more = next && strlen(next) < sizeof(cursor);
        if (more)
            snprintf(cursor, sizeof(cursor), "%s", next);
        json_decref(reply);
        if (!more)
            break;
    }
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < b.n; i++) {
        rec_record *x = &b.recs[i];
        x->name = b.names + (uintptr_t)x->name;
        x->site.module = x->name + x->name_len;
        x->site.function = x->site.module + x->site.module_len;
        x->site.caller = x->site.function + x->site.function_len;
        x->ext = x->ext_len ? (const unsigned char *)x->site.caller + x->site.caller_len : NULL;
        x->inputs = x->n_inputs ? b.words + (uintptr_t)x->inputs : NULL;
        x->chunks = x->n_chunks ? b.words + (uintptr_t)x->chunks : NULL;
    }
    out->recs = b.recs;
    out->n = b.n;
    out->words = b.words;
    out->blob.data = b.names; /* td_release frees it */
    out->hdr.rank = rank;
    out->status = REC_OK;
    return 0;

out_free:
    free(b.recs);
    free(b.names);
    free(b.words);
    return rc;
}

static int by_rank(const void *a, const void *b)
{
    const td_rank *x = a, *y = b;
    return x->hdr.rank < y->hdr.rank ? -1 : x->hdr.rank > y->hdr.rank;
}

int remote_load_run(const client_conf *c, const char *run_id, td_run *run, json_t **info_out)
{
    char esc[600], path[700];
    client_escape(run_id, esc, sizeof(esc));
    snprintf(path, sizeof(path), "/api/v1/runs/%s", esc);
    json_t *info;
    int rc = client_get(c, path, &info, "cannot fetch the run");
    if (rc)
        return rc;
    memset(run, 0, sizeof(*run));
    snprintf(run->path, sizeof(run->path), "%s/runs/%s", c->servers.url[0], run_id);
    json_t *ranks = json_object_get(info, "rank_status");
    size_t n = json_array_size(ranks);
    run->ranks = calloc(n ? n : 1, sizeof(td_rank));
    if (!run->ranks) {
        json_decref(info);
        cli_error("out of memory", NULL, NULL);
        return CLI_BAD_INPUT;
    }
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r)
    {
        uint32_t rank = (uint32_t)json_integer_value(json_object_get(r, "rank"));
        td_rank *tr = &run->ranks[run->n_ranks];
        if ((rc = load_rank(c, esc, rank, tr))) {
            json_decref(info);
            td_release(run);
            return rc;
        }
        const char *fields[][2] = {
            {"run_id", tr->hdr.run_id}, {"job_id", tr->hdr.job_id}, {"twin_group", tr->hdr.twin_group}};
        for (size_t k = 0; k < 3; k++) {
            const char *v = json_string_value(json_object_get(info, fields[k][0]));
            snprintf((char *)fields[k][1], REC_STR_MAX + 1, "%s", v ? v : "");
        }
        run->n_records += tr->n;
        run->n_ranks++;
    }
    if (info_out)
        *info_out = info;
    else
        json_decref(info);
    qsort(run->ranks, run->n_ranks, sizeof(td_rank), by_rank);
    return 0;
}

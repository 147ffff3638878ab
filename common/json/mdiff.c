/* mdiff.c - the manifest diff of twin runs (common/json/mdiff.h): flatten, compare by class, collapse identical rank
 * entries. */
#include "common/json/mdiff.h"

#include "common/elide.h"
#include "common/envrule.h"
#include "common/json/node_of.h"
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return 1;
    return 0;
}

static const char *const IDENTITY_TOP[] = {"host", "hostname", "slurm_node", "node", "exe", "pid", "cwd", NULL};
static const char *const CONFIG_TOP[] = {"exe_xxh3",    "cuda_runtime", "cuda_driver", "nccl_version",
                                         "mpi_version", "nccl_graph",   "argv",        "command",
                                         "ranks",       "nodes",        NULL};

const char *md_key_class(const char *key)
{
    if (has_prefix(key, "env.")) {
        static const char *const names[] = {"other", "configuration", "identity"};
        return names[env_classify(key + 4, strlen(key + 4))];
    }
    if (has_prefix(key, "library:") || has_prefix(key, "file:") || has_prefix(key, "job.") || has_prefix(key, "used."))
        return "configuration";
    if (in_list(key, IDENTITY_TOP))
        return "identity";
    if (in_list(key, CONFIG_TOP))
        return "configuration";
    if (has_prefix(key, "gpus.") || has_prefix(key, "gpu.")) {
        const char *last = strrchr(key, '.');
        if (!strcmp(last, ".uuid") || !strcmp(last, ".pci_bus_id") || !strcmp(last, ".index"))
            return "identity";
        if (!strcmp(last, ".name") || !strcmp(last, ".sm_count"))
            return "configuration";
    }
    return "other";
}

/* flatten - every leaf of `v` under `path` into `out`, but the parts compared apart. */
static void flatten(json_t *out, const char *path, json_t *v)
{
    static const char *const apart[] = {"rank",      "libraries",         "files", "arg_files", "argv",
                                        "hash_algo", "hashes_incomplete", NULL};
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if (!*path && in_list(k, apart))
                continue;
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
            flatten(out, sub, x);
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s.%zu", path, i);
            flatten(out, sub, x);
        }
    } else if (*path) {
        json_object_set(out, path, v);
    }
}

/* argv_text - a rank's arguments as one string ("" when the manifest has none). */
static json_t *argv_text(json_t *m)
{
    json_t *a = json_object_get(m, "argv");
    if (!json_is_array(a))
        return NULL;
    size_t cap = 64, len = 0, i;
    char *s = malloc(cap);
    json_t *x;
    if (!s)
        return NULL;
    s[0] = 0;
    json_array_foreach(a, i, x)
    {
        const char *w = json_string_value(x);
        size_t wl = w ? strlen(w) : 0;
        while (len + wl + 2 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        if (i)
            s[len++] = ' ';
        memcpy(s + len, w ? w : "", wl);
        len += wl;
        s[len] = 0;
    }
    json_t *r = json_string(s);
    free(s);
    return r;
}

/* The accumulated entries: grouping key -> {"entry": {...}, "ranks": [...]}, in first-seen order. */
typedef struct acc {
    json_t *index; /* grouping key -> position in list */
    json_t *list;  /* [{"entry", "ranks"}] */
} acc;

static void acc_add(acc *a, const char *key, const char *cls, const char *change, int rank, json_t *values)
{
    char *vt = json_dumps(values, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    size_t gl = strlen(key) + (vt ? strlen(vt) : 0) + 32;
    char *g = malloc(gl);
    if (!g) {
        free(vt);
        json_decref(values);
        return;
    }
    snprintf(g, gl, "%s\x1f%s\x1f%s", key, change ? change : "", vt ? vt : "");
    free(vt);
    json_t *pos = json_object_get(a->index, g);
    if (pos) {
        json_t *slot = json_array_get(a->list, (size_t)json_integer_value(pos));
        if (rank >= 0)
            json_array_append_new(json_object_get(slot, "ranks"), json_integer(rank));
        json_decref(values);
    } else {
        json_t *e = json_pack("{s:s, s:s, s:o, s:o}", "key", key, "class", cls, "rank",
                              rank >= 0 ? json_integer(rank) : json_null(), "values", values);
        if (change)
            json_object_set_new(e, "change", json_string(change));
        json_t *ranks = rank >= 0 ? json_pack("[i]", rank) : json_null();
        json_object_set_new(a->index, g, json_integer((json_int_t)json_array_size(a->list)));
        json_array_append_new(a->list, json_pack("{s:o, s:o}", "entry", e, "ranks", ranks));
    }
    free(g);
}

/* values_of - [{"run_id", "value"}] for `n` values (each borrowed, NULL: absent). */
static json_t *values_of(const md_run *runs, int n, json_t *const *v)
{
    json_t *out = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(out, json_pack("{s:s, s:O}", "run_id", runs[k].run_id ? runs[k].run_id : "", "value",
                                             v[k] ? v[k] : json_null()));
    return out;
}

/* compare - add an entry when the runs' values of `key` differ. `absent_counts`: a value some runs lack is
 * a difference (environment variables, libraries); else it was not captured there and is not compared. */
static void compare(acc *a, const md_run *runs, int n, const char *key, const char *cls, int rank, json_t *const *v,
                    int absent_counts, const char *change_hint)
{
    int present = 0, same = 1;
    for (int k = 0; k < n; k++)
        present += v[k] != NULL;
    if (present == 0 || (!absent_counts && present < n))
        return;
    for (int k = 1; k < n && same; k++)
        same = (v[k] && v[0]) ? json_equal(v[k], v[0]) : (!v[k] && !v[0]);
    if (same)
        return;
    const char *change = change_hint;
    if (absent_counts && present < n)
        change = v[0] ? "removed" : "added";
    acc_add(a, key, cls, change, rank, values_of(runs, n, v));
}

/* manifest_of - run `r`'s manifest of `rank`, or NULL. */
static json_t *manifest_of(const md_run *r, int rank)
{
    size_t i;
    json_t *e;
    json_array_foreach(r->manifests, i, e)
    {
        json_t *rk = json_object_get(e, "rank");
        if (json_is_integer(rk) && json_integer_value(rk) == rank)
            return json_object_get(e, "manifest");
    }
    return NULL;
}

/* by_field - the array `arr` of objects as {obj[key] -> obj}. */
static json_t *by_field(json_t *arr, const char *key)
{
    json_t *out = json_object(), *x;
    size_t i;
    json_array_foreach(arr, i, x)
    {
        const char *k = json_string_value(json_object_get(x, key));
        if (k)
            json_object_set(out, k, x);
    }
    return out;
}

/* digests_apart - 1 when the values are keyed digests of a secret (common/envrule.h) under different keys (runs of
 * different users): unequal whatever the values were, so their difference explains nothing. */
static int digests_apart(json_t *const *v, int n)
{
    char first[ENV_KEY_ID_LEN + 1] = "", id[ENV_KEY_ID_LEN + 1];
    for (int k = 0; k < n; k++) {
        if (!v[k])
            continue;
        if (env_digest_key_id(json_string_value(v[k]), id) < 0)
            return 0;
        if (first[0] && strcmp(first, id))
            return 1;
        memcpy(first, id, sizeof(id));
    }
    return 0;
}

/* compare_files - the files of `by` (each run's {name -> {"xxh3"}}) compared by content, as "file:NAME". */
static void compare_files(acc *a, const md_run *runs, int n, int rank, json_t *const *by)
{
    json_t *names = json_object(), *v[n], *unused;
    for (int k = 0; k < n; k++) {
        const char *f;
        json_t *x;
        json_object_foreach(by[k], f, x) json_object_set_new(names, f, json_true());
    }
    const char *f;
    json_object_foreach(names, f, unused)
    {
        char fk[600];
        snprintf(fk, sizeof(fk), "file:%s", f);
        for (int k = 0; k < n; k++)
            v[k] = json_object_get(json_object_get(by[k], f), "xxh3");
        compare(a, runs, n, fk, "configuration", rank, v, 0, "changed");
    }
    json_decref(names);
}

/* compare_rank - every difference of one rank whose manifest each run holds. */
static void compare_rank(acc *a, acc *ids, const md_run *runs, int n, int rank, json_t *const *m)
{
    json_t *flat[n], *libs[n], *files[n], *args[n], *v[n];
    json_t *keys = json_object();
    for (int k = 0; k < n; k++) {
        flat[k] = json_object();
        flatten(flat[k], "", m[k]);
        libs[k] = by_field(json_object_get(m[k], "libraries"), "path");
        files[k] = by_field(json_object_get(m[k], "files"), "env");
        args[k] = by_field(json_object_get(m[k], "arg_files"), "arg");
        const char *key;
        json_t *x;
        json_object_foreach(flat[k], key, x) json_object_set_new(keys, key, json_true());
    }
    /* Scalars, environment, versions, GPU models, job shape. */
    const char *key;
    json_t *unused;
    json_object_foreach(keys, key, unused)
    {
        const char *cls = md_key_class(key);
        /* A path whose file every run hashed: the content is compared (file:X), the path is an identity. */
        if (has_prefix(key, "env.")) {
            int hashed = 1;
            for (int k = 0; k < n; k++)
                hashed &= json_object_get(files[k], key + 4) != NULL;
            if (hashed)
                cls = "identity";
        }
        for (int k = 0; k < n; k++)
            v[k] = json_object_get(flat[k], key);
        if (has_prefix(key, "env.") && digests_apart(v, n))
            cls = "other";
        compare(!strcmp(cls, "identity") ? ids : a, runs, n, key, cls, rank, v, has_prefix(key, "env."), NULL);
    }
    /* Each rank's own arguments. */
    for (int k = 0; k < n; k++)
        v[k] = argv_text(m[k]);
    compare(a, runs, n, "argv", "configuration", rank, v, 0, NULL);
    for (int k = 0; k < n; k++)
        json_decref(v[k]);
    /* Files named by the environment, and on the command line, by content. */
    compare_files(a, runs, n, rank, files);
    compare_files(a, runs, n, rank, args);
    /* Libraries, as a set by path. */
    json_t *paths = json_object();
    for (int k = 0; k < n; k++) {
        const char *p;
        json_t *x;
        json_object_foreach(libs[k], p, x) json_object_set_new(paths, p, json_true());
    }
    const char *p;
    json_object_foreach(paths, p, unused)
    {
        char lk[1100];
        snprintf(lk, sizeof(lk), "library:%s", p);
        json_t *hv[n];
        int all_hashed = 1, present = 0;
        for (int k = 0; k < n; k++) {
            json_t *lib = json_object_get(libs[k], p);
            present += lib != NULL;
            hv[k] = lib ? json_object_get(lib, "xxh3") : NULL;
            if (lib && !hv[k])
                all_hashed = 0;
        }
        if (present < n) { /* added or removed: the presence is the value */
            for (int k = 0; k < n; k++)
                v[k] = json_object_get(libs[k], p) ? (hv[k] ? hv[k] : json_true()) : NULL;
            compare(a, runs, n, lk, "configuration", rank, v, 1, NULL);
        } else if (all_hashed) {
            compare(a, runs, n, lk, "configuration", rank, hv, 0, "changed");
        }
    }
    json_decref(paths);
    json_decref(keys);
    for (int k = 0; k < n; k++) {
        json_decref(flat[k]);
        json_decref(libs[k]);
        json_decref(files[k]);
        json_decref(args[k]);
    }
}

/* node_count - how many distinct nodes a run's manifests name (each its host, common/json/node_of.h); 0 (unknown)
 * when the run has fewer manifests than ranks: ranks killed before they sent one (a failed run) would make the count
 * a guess. */
static json_int_t node_count(const md_run *r)
{
    if (r->ranks > 0 && (long)json_array_size(r->manifests) < r->ranks)
        return 0;
    json_t *seen = json_object(), *e;
    size_t i;
    json_array_foreach(r->manifests, i, e)
    {
        const char *node = node_of_reported(json_object_get(e, "manifest")); /* the manifest's own host */
        if (*node)
            json_object_set_new(seen, node, json_true());
    }
    json_int_t n = (json_int_t)json_object_size(seen);
    json_decref(seen);
    return n;
}

/* finish - the accumulated entries as the output array: "ranks" filled in (null for run-level ones). */
static json_t *finish(acc *a)
{
    json_t *out = json_array(), *slot;
    size_t i;
    json_array_foreach(a->list, i, slot)
    {
        json_t *e = json_object_get(slot, "entry");
        json_object_set(e, "ranks", json_object_get(slot, "ranks"));
        json_array_append(out, e);
    }
    return out;
}

/* value_text - a short text of one entry's values, for the summary: the part where they differ
 * (common/elide.h). */
static void value_text(json_t *values, char *out, size_t cap)
{
    size_t n = json_array_size(values), i;
    char *t[n ? n : 1];
    json_t *x;
    json_array_foreach(values, i, x)
    {
        json_t *v = json_object_get(x, "value");
        t[i] = json_is_string(v) ? strdup(json_string_value(v))
               : json_is_null(v) ? strdup("(unset)")
                                 : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    }
    elide_values((const char *const *)t, (int)n, out, cap);
    for (i = 0; i < n; i++)
        free(t[i]);
}

/* ranks_text - " (rank 3)", " (ranks 0 and 1)", " (ranks 0, 1 and 2)", " (ranks 0, 1, 2 and 5 more)": the ranks a
 * configuration difference is on, named up to three of them. */
static void ranks_text(json_t *rk, char *out, size_t cap)
{
    size_t n = json_array_size(rk), shown = n <= 4 ? n : 3, len = 0;
    len += (size_t)snprintf(out, cap, " (rank%s ", n > 1 ? "s" : "");
    for (size_t i = 0; i < shown && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%lld",
                                !i                             ? ""
                                : i + 1 == shown && shown == n ? " and "
                                                               : ", ",
                                (long long)json_integer_value(json_array_get(rk, i)));
    if (len < cap)
        snprintf(out + len, cap - len, shown < n ? " and %zu more)" : ")", n - shown);
}

/* summary_of - the first few configuration differences of `diffs` named into `out` (cap bytes), or what it means
 * that there is none; cut at a character's start. Returns how many configuration differences there are. */
static int summary_of(json_t *diffs, int n, char *summary, size_t cap)
{
    size_t len = 0, i;
    int explains = 0;
    json_t *d;
    summary[0] = 0;
    json_array_foreach(diffs, i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "class")), "configuration"))
            continue;
        if (explains++ >= 3)
            continue;
        char vals[400];
        value_text(json_object_get(d, "values"), vals, sizeof(vals));
        const char *change = json_string_value(json_object_get(d, "change"));
        json_t *rk = json_object_get(d, "ranks");
        char where[96] = "";
        if (json_is_array(rk) && json_array_size(rk))
            ranks_text(rk, where, sizeof(where));
        if (len < cap)
            len += (size_t)snprintf(summary + len, cap - len, "%s%s %s%s: %s", len ? "; " : "",
                                    json_string_value(json_object_get(d, "key")), change ? change : "differs", where,
                                    vals);
    }
    if (explains > 3 && len < cap)
        len += (size_t)snprintf(summary + len, cap - len, "; and %d more", explains - 3);
    if (!explains)
        snprintf(summary, cap, "%s",
                 n < 2 ? "a single run: nothing to compare"
                       : "nothing that can change results differs between the runs' configurations");
    if (len >= cap) { /* cut: never inside a character */
        size_t end = cap - 1;
        while (end > 0 && !text_utf8_valid(summary, end))
            end--;
        summary[end] = 0;
    }
    return explains;
}

json_t *md_diff(const md_run *runs, int n)
{
    acc a = {json_object(), json_array()}, ids = {json_object(), json_array()};
    if (n >= 2) {
        json_t *v[n], *owned[n];
        /* Run-level: the command line and the shape; identities. */
        for (int k = 0; k < n; k++)
            v[k] = runs[k].command && *runs[k].command ? json_string(runs[k].command) : NULL;
        compare(&a, runs, n, "command", "configuration", -1, v, 0, NULL);
        for (int k = 0; k < n; k++) {
            json_decref(v[k]);
            v[k] = runs[k].ranks > 0 ? json_integer(runs[k].ranks) : NULL;
        }
        compare(&a, runs, n, "ranks", "configuration", -1, v, 0, NULL);
        for (int k = 0; k < n; k++) {
            json_decref(v[k]);
            json_int_t nodes = node_count(&runs[k]);
            v[k] = nodes > 0 ? json_integer(nodes) : NULL;
        }
        compare(&a, runs, n, "nodes", "configuration", -1, v, 0, NULL);
        for (int k = 0; k < n; k++)
            json_decref(v[k]);
        static const char *const id_keys[] = {"job_id", "step_id", "user", "node_list"};
        for (size_t i = 0; i < sizeof(id_keys) / sizeof(id_keys[0]); i++) {
            for (int k = 0; k < n; k++) {
                const char *s = i == 0   ? runs[k].job_id
                                : i == 1 ? runs[k].step_id
                                : i == 2 ? runs[k].user
                                         : runs[k].nodes;
                owned[k] = s ? json_string(s) : NULL;
            }
            compare(&ids, runs, n, id_keys[i], "identity", -1, owned, 0, NULL);
            for (int k = 0; k < n; k++)
                json_decref(owned[k]);
        }
        /* Rank by rank, over the ranks every run holds a manifest of. */
        json_t *ranks = json_object();
        for (int k = 0; k < n; k++) {
            size_t i;
            json_t *e;
            json_array_foreach(runs[k].manifests, i, e)
            {
                json_t *rk = json_object_get(e, "rank");
                if (json_is_integer(rk)) {
                    char s[24];
                    snprintf(s, sizeof(s), "%012lld", (long long)json_integer_value(rk));
                    json_object_set_new(ranks, s, json_true());
                }
            }
        }
        const char *rs;
        json_t *unused;
        /* object keys are iterated in insertion order; sort the zero-padded ranks */
        size_t nr = json_object_size(ranks), at = 0;
        long long *order = calloc(nr + 1, sizeof(long long));
        json_object_foreach(ranks, rs, unused) if (order) order[at++] = atoll(rs);
        for (size_t i = 1; order && i < nr; i++)
            for (size_t j = i; j > 0 && order[j - 1] > order[j]; j--) {
                long long t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (size_t i = 0; order && i < nr; i++) {
            int all = 1;
            for (int k = 0; k < n; k++)
                all &= (v[k] = manifest_of(&runs[k], (int)order[i])) != NULL;
            if (all)
                compare_rank(&a, &ids, runs, n, (int)order[i], v);
        }
        free(order);
        json_decref(ranks);
    }
    json_t *diffs = finish(&a), *idents = finish(&ids);
    json_decref(a.index);
    json_decref(a.list);
    json_decref(ids.index);
    json_decref(ids.list);

    char summary[4096];
    int explains = summary_of(diffs, n, summary, sizeof(summary));
    return json_pack("{s:b, s:s, s:o, s:o}", "explains", explains > 0, "summary", summary, "diffs", diffs, "identities",
                     idents);
}

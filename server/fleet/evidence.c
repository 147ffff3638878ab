/* evidence.c - the pure rules of the suspects part: determinism-relevant manifest differences, the spread of one record's divergences, blame shares. */
#include "server/fleet/evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/xalloc.h"

static int has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

int ev_det_relevant(const char *key)
{
    static const char *const env_pre[] = {"NCCL_",
                                          "CUBLAS",
                                          "OMP_",
                                          "MKL_",
                                          "NVTE_",
                                          "OMPI_MCA_coll",
                                          "PYTHONHASHSEED",
                                          "TORCH_DETERMINISTIC",
                                          "CUDA_LAUNCH_BLOCKING"};
    if (has_prefix(key, "env.")) {
        const char *v = key + 4;
        if (!strcmp(v, "NCCL_GRAPH_DUMP_FILE") || !strcmp(v, "NCCL_DEBUG") || !strcmp(v, "NCCL_DEBUG_FILE"))
            return 0;
        if (!strcmp(v, "LOCKSTEP_MODE"))
            return 1;
        for (size_t i = 0; i < sizeof(env_pre) / sizeof(env_pre[0]); i++)
            if (has_prefix(v, env_pre[i]))
                return 1;
        return 0;
    }
    static const char *const top[] = {"exe_xxh3", "cuda_runtime", "cuda_driver", "nccl_version", "mpi_version"};
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        if (!strcmp(key, top[i]))
            return 1;
    if (has_prefix(key, "gpus.") || has_prefix(key, "gpu.")) {
        const char *last = strrchr(key, '.');
        return last && (!strcmp(last, ".name") || !strcmp(last, ".sm_count"));
    }
    return 0;
}

static void scalar_text(json_t *v, char *out, size_t cap)
{
    if (json_is_string(v))
        snprintf(out, cap, "%s", json_string_value(v));
    else if (!v)
        snprintf(out, cap, "(unset)");
    else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(out, cap, "%s", s ? s : "?");
        free(s);
    }
}

/* flatten - relevant scalar keys of `v` under `prefix` into object `out`. */
static void flatten(json_t *v, const char *prefix, json_t *out)
{
    char key[512];
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if (!*prefix && !strcmp(k, "libraries"))
                continue;
            snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", k);
            flatten(x, key, out);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            snprintf(key, sizeof(key), "%s.%zu", prefix, i);
            flatten(x, key, out);
        }
    } else if (*prefix && ev_det_relevant(prefix)) {
        json_object_set(out, prefix, v);
    }
}

static int lib_diff(json_t *a, json_t *b, char *why, size_t cap)
{
    json_t *la = json_object_get(a, "libraries"), *lb = json_object_get(b, "libraries");
    size_t i, j;
    json_t *x, *y;
    json_array_foreach(la, i, x)
    {
        const char *p = json_string_value(json_object_get(x, "path"));
        const char *h = json_string_value(json_object_get(x, "xxh3"));
        if (!p || !h)
            continue;
        json_array_foreach(lb, j, y)
        {
            const char *q = json_string_value(json_object_get(y, "path"));
            const char *g = json_string_value(json_object_get(y, "xxh3"));
            if (q && g && !strcmp(p, q) && strcmp(h, g)) {
                snprintf(why, cap, "library %s: %s vs %s", p, h, g);
                return 1;
            }
        }
    }
    return 0;
}

int ev_det_diff(json_t *a, json_t *b, char *why, size_t cap)
{
    json_t *fa = json_object(), *fb = json_object();
    flatten(a, "", fa);
    flatten(b, "", fb);
    int differs = 0;
    const char *k;
    json_t *v;
    for (int pass = 0; pass < 2 && !differs; pass++) {
        json_t *x = pass ? fb : fa, *y = pass ? fa : fb;
        json_object_foreach(x, k, v)
        {
            json_t *w = json_object_get(y, k);
            /* An environment variable set in one run only is a difference; a
             * version or hash missing from one manifest was not captured there
             * (the agent saw no CUDA or MPI yet) and is not compared. */
            if (!w && strncmp(k, "env.", 4) != 0)
                continue;
            if (!w || !json_equal(v, w)) {
                char va[160], vb[160];
                scalar_text(pass ? w : v, va, sizeof(va));
                scalar_text(pass ? v : w, vb, sizeof(vb));
                snprintf(why, cap, "%s: %s vs %s", k, va, vb);
                differs = 1;
                break;
            }
        }
    }
    json_decref(fa);
    json_decref(fb);
    return differs || lib_diff(a, b, why, cap);
}

/* in_set - 1 when `name` is one of the ','-separated names in `set`. */
static int in_set(const char *set, const char *name, size_t len)
{
    for (const char *p = set; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, name, len))
            return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

int ev_cover_size(const char *const *sets, int n)
{
    if (n <= 0)
        return 0;
    char *covered = xcalloc((size_t)n, 1);
    int picks = 0;
    for (;;) {
        /* the node in the most uncovered sets */
        const char *best = NULL;
        size_t best_len = 0;
        int best_count = 0;
        for (int i = 0; i < n; i++) {
            if (covered[i])
                continue;
            for (const char *p = sets[i]; *p;) {
                const char *e = strchr(p, ',');
                size_t l = e ? (size_t)(e - p) : strlen(p);
                int count = 0;
                for (int j = 0; j < n && l; j++)
                    if (!covered[j] && in_set(sets[j], p, l))
                        count++;
                if (count > best_count) {
                    best = p;
                    best_len = l;
                    best_count = count;
                }
                p += l + (e ? 1 : 0);
            }
        }
        if (!best)
            break;
        for (int j = 0; j < n; j++)
            if (!covered[j] && in_set(sets[j], best, best_len))
                covered[j] = 1;
        picks++;
    }
    free(covered);
    return picks;
}

void ev_share_blame(const ev_weak *w, int nw, const double *strong, const double *expo, int nnodes, double *k)
{
    double *rate = xmalloc(((size_t)nnodes + 1) * sizeof(double));
    for (int i = 0; i < nnodes; i++)
        rate[i] = 0.5;
    for (int iter = 0; iter < 50; iter++) {
        for (int i = 0; i < nnodes; i++)
            k[i] = strong[i];
        for (int g = 0; g < nw; g++) {
            double total = 0;
            for (int c = 0; c < w[g].ncand; c++)
                total += rate[w[g].cand[c]];
            for (int c = 0; c < w[g].ncand; c++) {
                double share = total > 0 ? w[g].mass * rate[w[g].cand[c]] / total : w[g].mass / w[g].ncand;
                k[w[g].cand[c]] += share > 1.0 ? 1.0 : share;
            }
        }
        for (int i = 0; i < nnodes; i++)
            rate[i] = (k[i] + 0.5) / (expo[i] + 1.0);
    }
    free(rate);
}

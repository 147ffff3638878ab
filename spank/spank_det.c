/* spank_det.c - the deterministic runtime table and its fail-closed validation of user settings. */
#include "spank/spank_det.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How a user's own value is judged. */
typedef enum det_check {
    CHECK_EXACT,    /* equal to one of `ok` (case-insensitive) */
    CHECK_RING,     /* NCCL_ALGO: only Ring named */
    CHECK_POS_INT,  /* a positive decimal integer */
    CHECK_UINT,     /* a decimal integer >= 0 */
    CHECK_NOT_AUTO, /* MKL_CBWR: a fixed code path, not AUTO */
} det_check;

typedef struct det_rule {
    const char *name;
    const char *value; /* what det sets when absent (NULL: computed) */
    det_check check;
    const char *ok[3];
    const char *why;
} det_rule;

static const det_rule rules[] = {
    {"CUBLAS_WORKSPACE_CONFIG",
     ":4096:8",
     CHECK_EXACT,
     {":4096:8", ":16:8"},
     "cuBLAS picks nondeterministic split-K reductions without a fixed workspace; "
     "unset it (lockstep sets :4096:8) or set :4096:8 or :16:8"},
    {"NCCL_ALGO",
     "Ring",
     CHECK_RING,
     {0},
     "NCCL Tree, NVLS and CollNet sum in a topology-dependent order, which changes low bits between runs; "
     "unset it (lockstep sets Ring) or set NCCL_ALGO=Ring"},
    {"NCCL_NVLS_ENABLE",
     "0",
     CHECK_EXACT,
     {"0"},
     "NVLink SHARP reduces in switch hardware in no fixed order; unset it or set 0"},
    {"NCCL_COLLNET_ENABLE",
     "0",
     CHECK_EXACT,
     {"0"},
     "CollNet reduces in the network in no fixed order; unset it or set 0"},
    {"NCCL_PROTO",
     "Simple",
     CHECK_EXACT,
     {"Simple"},
     "LL and LL128 change how reductions are split; unset it (lockstep sets Simple) or set Simple"},
    {"NVTE_ALLOW_NONDETERMINISTIC_ALGO",
     "0",
     CHECK_EXACT,
     {"0"},
     "Transformer Engine may pick nondeterministic kernels; unset it or set 0"},
    {"MKL_CBWR",
     "COMPATIBLE",
     CHECK_NOT_AUTO,
     {0},
     "MKL picks a code path per CPU, so results differ across nodes; unset it (lockstep sets COMPATIBLE) "
     "or name a fixed path such as COMPATIBLE"},
    {"PYTHONHASHSEED",
     "0",
     CHECK_UINT,
     {0},
     "a random hash seed changes iteration order of sets and dicts of str; unset it (lockstep sets 0) "
     "or set a fixed number"},
    {"OMP_NUM_THREADS",
     NULL,
     CHECK_POS_INT,
     {0},
     "OpenMP reductions depend on the thread count; unset it (lockstep pins it to the CPUs per task the job asked for, "
     "1 by default) "
     "or set one positive number"},
    {"OMPI_MCA_coll_tuned_use_dynamic_rules",
     "1",
     CHECK_EXACT,
     {"1", "true"},
     "without dynamic rules Open MPI ignores the pinned collective algorithms; unset it or set 1"},
    {"OMPI_MCA_coll_tuned_allreduce_algorithm",
     "4",
     CHECK_POS_INT,
     {0},
     "0 lets Open MPI choose an allreduce algorithm by message size; unset it (lockstep pins ring, 4) "
     "or set a fixed algorithm number"},
    {"OMPI_MCA_coll_tuned_reduce_algorithm",
     "1",
     CHECK_POS_INT,
     {0},
     "0 lets Open MPI choose a reduce algorithm by message size; unset it (lockstep pins linear, 1) "
     "or set a fixed algorithm number"},
};

static const char *const why_channels =
    "NCCL splits reductions over a varying number of channels unless the count is fixed; unset both "
    "(lockstep sets " LSP_DET_NCHANNELS ") or set NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS equal";

/* parse_num - a decimal integer; -1 when `s` is not one. */
static long long parse_num(const char *s)
{
    if (!*s || !isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v > 0xffffffffLL)
        return -1;
    return v;
}

/* ring_only - 1 when an NCCL_ALGO value names Ring and nothing else
 * ("Ring", "ring", "allreduce:ring"). */
static int ring_only(const char *v)
{
    char low[160];
    size_t n = strlen(v);
    if (n >= sizeof(low))
        return 0;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)v[i]);
    if (!strstr(low, "ring"))
        return 0;
    static const char *const bad[] = {"tree", "nvls", "collnet", "pat", "^"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (strstr(low, bad[i]))
            return 0;
    return 1;
}

/* rule_ok - 1 when the user's value `v` keeps determinism under rule `r`. */
static int rule_ok(const det_rule *r, const char *v)
{
    switch (r->check) {
    case CHECK_EXACT:
        for (int i = 0; i < 3 && r->ok[i]; i++)
            if (!strcasecmp(v, r->ok[i]))
                return 1;
        return 0;
    case CHECK_RING: return ring_only(v);
    case CHECK_POS_INT: return parse_num(v) > 0;
    case CHECK_UINT: return parse_num(v) >= 0;
    case CHECK_NOT_AUTO: return *v && strncasecmp(v, "AUTO", 4) != 0;
    }
    return 0;
}

/* add - append a setting to one of the plan's lists. */
static void add(int *n, lsp_setting *list, const char *name, const char *value, const char *why)
{
    if (*n >= LSP_DET_MAX)
        return;
    lsp_setting *s = &list[(*n)++];
    s->name = name;
    snprintf(s->value, sizeof(s->value), "%s", value);
    s->why = why;
}

void lsp_det_plan_make(lsp_getenv_fn get, void *ctx, long omp_threads, lsp_det_plan *p)
{
    memset(p, 0, sizeof(*p));
    char threads[24];
    snprintf(threads, sizeof(threads), "%ld", omp_threads < 1 ? 1L : omp_threads);

    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        const det_rule *r = &rules[i];
        const char *v = get(ctx, r->name);
        if (!v)
            add(&p->n_set, p->set, r->name, r->value ? r->value : threads, NULL);
        else if (!rule_ok(r, v))
            add(&p->n_conflict, p->conflict, r->name, v, r->why);
    }

    /* Channels: a fixed count means MIN == MAX. */
    const char *lo = get(ctx, "NCCL_MIN_NCHANNELS");
    const char *hi = get(ctx, "NCCL_MAX_NCHANNELS");
    if (lo && parse_num(lo) <= 0)
        add(&p->n_conflict, p->conflict, "NCCL_MIN_NCHANNELS", lo, why_channels);
    else if (hi && parse_num(hi) <= 0)
        add(&p->n_conflict, p->conflict, "NCCL_MAX_NCHANNELS", hi, why_channels);
    else if (lo && hi && parse_num(lo) != parse_num(hi))
        add(&p->n_conflict, p->conflict, "NCCL_MIN_NCHANNELS", lo, why_channels);
    else if (lo && !hi)
        add(&p->n_set, p->set, "NCCL_MAX_NCHANNELS", lo, NULL);
    else if (hi && !lo)
        add(&p->n_set, p->set, "NCCL_MIN_NCHANNELS", hi, NULL);
    else if (!lo && !hi) {
        add(&p->n_set, p->set, "NCCL_MIN_NCHANNELS", LSP_DET_NCHANNELS, NULL);
        add(&p->n_set, p->set, "NCCL_MAX_NCHANNELS", LSP_DET_NCHANNELS, NULL);
    }
}

/* append - snprintf at the end of buf; keeps `*len` at most cap-1. */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, const char *a, const char *b, const char *c)
{
    if (*len + 1 >= cap)
        return;
    int n = snprintf(buf + *len, cap - *len, fmt, a, b, c);
    if (n < 0)
        return;
    *len += (size_t)n;
    if (*len > cap - 1)
        *len = cap - 1;
}

size_t lsp_det_message(const lsp_det_plan *p, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = 0;
    for (int i = 0; i < p->n_conflict; i++) {
        const lsp_setting *s = &p->conflict[i];
        append(buf, cap, &len, "%s%s=%s breaks --lockstep=det", i ? "\n" : "", s->name, s->value);
        append(buf, cap, &len, ": %s%s%s", s->why,
               "; or run with --lockstep=fp to fingerprint without the deterministic runtime", "");
    }
    return len;
}

size_t lsp_det_conflicts(const lsp_det_plan *p, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = 0;
    for (int i = 0; i < p->n_conflict; i++)
        append(buf, cap, &len, "%s%s=%s", i ? ";" : "", p->conflict[i].name, p->conflict[i].value);
    return len;
}

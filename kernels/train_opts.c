/* train_opts.c - lockstep-train's command line and LOCKSTEP_FAULT. */
#include "kernels/train_opts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *train_usage(void)
{
    return "usage: lockstep-train [OPTIONS]   (under mpirun: one process per rank)\n"
           "  --steps N              training steps (default 20)\n"
           "  --seed S               data, initialisation and noise seed (default 1)\n"
           "  --hidden H             width of the hidden layers (default 64)\n"
           "  --batch B              samples per rank per step (default 32)\n"
           "  --dataset N            synthetic data set size (default 65536)\n"
           "  --lr X                 Adam learning rate (default 0.001)\n"
           "  --nondeterministic     sum gradients in arrival order (CPU: MPI_ANY_SOURCE with\n"
           "                         run-varying send delays; GPU: atomics)\n"
           "  --reduce det|atomic    GPU path: the reduction kernels (default det, atomic with\n"
           "                         --nondeterministic)\n"
           "  --inject-fault=STEP:RANK[:BIT]\n"
           "                         flip bit BIT (default 12) of RANK's gradient at STEP;\n"
           "                         LOCKSTEP_FAULT=node=n3,step=20[,rank=R][,bit=12] does the\n"
           "                         same for the ranks on one node\n"
           "  --checkpoint-every K   write a checkpoint after every K-th step\n"
           "  --checkpoint-dir D     where checkpoints go (D/step-NNNNNNNN/rank-NNNNN.ckpt)\n"
           "  --resume D             continue from the newest complete checkpoint in D, or from D\n"
           "                         itself when it is one step directory (D/step-NNNNNNNN)\n"
           "  --resume-step N        with --resume D: from the checkpoint of step N exactly\n"
           "  --resume-fault WHAT    load the checkpoint as a buggy loader would: forget the Adam\n"
           "                         moments (moments), the whole optimizer, never named as restored\n"
           "                         (optimizer), the noise stream (rng) or the data position\n"
           "                         (data); the restored state block shows it\n"
           "  --order-log FILE       rank 0 writes the gradient summation order of each step\n"
           "  --json                 print a JSON summary line at the end\n"
           "  --record-timing        record the closing reduction of step times (timing.step_ms,\n"
           "                         after the last step): it differs from run to run, as a real\n"
           "                         program's timing report does; --lockstep-ignore='timing.*'\n"
           "  --quiet                no per-step lines\n";
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int train_fault_parse_flag(const char *s, train_fault *f, char *why, size_t cap)
{
    char buf[128];
    int64_t step, rank, bit = TRAIN_DEFAULT_BIT;
    snprintf(buf, sizeof(buf), "%s", s);
    char *a = buf, *b = strchr(a, ':');
    if (!b)
        goto out_bad;
    *b++ = 0;
    char *c = strchr(b, ':');
    if (c)
        *c++ = 0;
    if (parse_i64(a, 0, INT64_MAX, &step) < 0 || parse_i64(b, 0, 1 << 30, &rank) < 0 ||
        (c && parse_i64(c, 0, 31, &bit) < 0))
        goto out_bad;
    memset(f, 0, sizeof(*f));
    f->set = 1;
    f->step = step;
    f->rank = (int)rank;
    f->bit = (int)bit;
    return 0;

out_bad:
    snprintf(why, cap, "--inject-fault takes STEP:RANK[:BIT] (BIT 0..31), not '%s'", s);
    return -1;
}

int train_fault_parse_env(const char *s, train_fault *f, char *why, size_t cap)
{
    char buf[512];
    int have_step = 0;
    train_fault r = {.set = 1, .rank = -1, .bit = TRAIN_DEFAULT_BIT};
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        int64_t n;
        if (!v) {
            snprintf(why, cap, "LOCKSTEP_FAULT: '%s' is not KEY=VALUE (keys: node, rank, step, bit)", kv);
            return -1;
        }
        *v++ = 0;
        if (strcmp(kv, "node") == 0 && *v && strlen(v) < sizeof(r.node)) {
            snprintf(r.node, sizeof(r.node), "%s", v);
        } else if (strcmp(kv, "step") == 0 && parse_i64(v, 0, INT64_MAX, &n) == 0) {
            r.step = n;
            have_step = 1;
        } else if (strcmp(kv, "rank") == 0 && parse_i64(v, 0, 1 << 30, &n) == 0) {
            r.rank = (int)n;
        } else if (strcmp(kv, "bit") == 0 && parse_i64(v, 0, 31, &n) == 0) {
            r.bit = (int)n;
        } else {
            snprintf(why, cap, "LOCKSTEP_FAULT: bad %s='%s' (node=NAME, rank=N, step=N, bit=0..31)", kv, v);
            return -1;
        }
    }
    if (!have_step) {
        snprintf(why, cap, "LOCKSTEP_FAULT: step=N is required, e.g. node=n3,step=20,bit=12");
        return -1;
    }
    if (r.rank < 0 && !r.node[0]) {
        snprintf(why, cap, "LOCKSTEP_FAULT: name a node=NAME or a rank=N");
        return -1;
    }
    *f = r;
    return 0;
}

int train_fault_applies(const train_fault *f, int64_t step, int rank, const char *node)
{
    if (!f->set || f->step != step)
        return 0;
    if (f->rank >= 0 && f->rank != rank)
        return 0;
    if (f->node[0] && strcmp(f->node, node) != 0)
        return 0;
    return 1;
}

void train_node_name(char *out, size_t cap)
{
    const char *n = getenv("SLURMD_NODENAME");
    if (n && *n) {
        snprintf(out, cap, "%s", n);
        return;
    }
    if (gethostname(out, cap) < 0 && cap)
        out[0] = 0;
    if (cap)
        out[cap - 1] = 0;
}

/* opt_value - the value of `--name=V` or `--name V`; NULL when argv[*i] is
 * not this option. Sets *missing when the value is absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != 0)
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

int train_opts_parse(int argc, char **argv, train_opts *o, char *why, size_t cap)
{
    memset(o, 0, sizeof(*o));
    o->steps = 20;
    o->resume_step = -1;
    o->seed = 1;
    o->dims = (mlp_dims){.d_in = 16, .vocab = 64, .d_emb = 8, .hidden = 64, .d_out = 4};
    o->batch = 32;
    o->dataset = 65536;
    o->adam = (mlp_adam){.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};

    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        int64_t n;
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(train_usage(), stdout);
            return 1;
        } else if (strcmp(a, "--nondeterministic") == 0) {
            o->nondet = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--record-timing") == 0) {
            o->record_timing = 1;
        } else if ((v = opt_value(argc, argv, &i, "--steps", &missing))) {
            if (parse_i64(v, 1, INT32_MAX, &n) < 0)
                goto out_bad;
            o->steps = n;
        } else if ((v = opt_value(argc, argv, &i, "--seed", &missing))) {
            if (parse_i64(v, 0, INT64_MAX, &n) < 0)
                goto out_bad;
            o->seed = (uint64_t)n;
        } else if ((v = opt_value(argc, argv, &i, "--hidden", &missing))) {
            if (parse_i64(v, 1, 16384, &n) < 0)
                goto out_bad;
            o->dims.hidden = (int)n;
        } else if ((v = opt_value(argc, argv, &i, "--batch", &missing))) {
            if (parse_i64(v, 2, 1 << 20, &n) < 0)
                goto out_bad;
            o->batch = (int)n;
        } else if ((v = opt_value(argc, argv, &i, "--dataset", &missing))) {
            if (parse_i64(v, 1, INT64_MAX, &n) < 0)
                goto out_bad;
            o->dataset = (uint64_t)n;
        } else if ((v = opt_value(argc, argv, &i, "--lr", &missing))) {
            char *end;
            double lr = strtod(v, &end);
            if (*end || end == v || !(lr > 0 && lr < 1))
                goto out_bad;
            o->adam.lr = (float)lr;
        } else if ((v = opt_value(argc, argv, &i, "--inject-fault", &missing))) {
            if (train_fault_parse_flag(v, &o->fault, why, cap) < 0)
                return -1;
        } else if ((v = opt_value(argc, argv, &i, "--checkpoint-every", &missing))) {
            if (parse_i64(v, 1, INT32_MAX, &n) < 0)
                goto out_bad;
            o->ckpt_every = n;
        } else if ((v = opt_value(argc, argv, &i, "--checkpoint-dir", &missing))) {
            o->ckpt_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--resume-step", &missing))) {
            if (parse_i64(v, 0, INT64_MAX, &n) < 0)
                goto out_bad;
            o->resume_step = n;
        } else if ((v = opt_value(argc, argv, &i, "--resume", &missing))) {
            o->resume_dir = v;
        } else if ((v = opt_value(argc, argv, &i, "--resume-fault", &missing))) {
            if (strcmp(v, "moments") != 0 && strcmp(v, "optimizer") != 0 && strcmp(v, "rng") != 0 &&
                strcmp(v, "data") != 0)
                goto out_bad;
            o->resume_fault = v;
        } else if ((v = opt_value(argc, argv, &i, "--order-log", &missing))) {
            o->order_log = v;
        } else if ((v = opt_value(argc, argv, &i, "--reduce", &missing))) {
            if (strcmp(v, "det") != 0 && strcmp(v, "atomic") != 0)
                goto out_bad;
            o->reduce = v;
        } else if (missing) {
            snprintf(why, cap, "option %s needs a value; see --help", a);
            return -1;
        } else {
            snprintf(why, cap, "unknown option '%s'; see --help", a);
            return -1;
        }
        continue;
    out_bad:
        snprintf(why, cap, "bad value for %s; see --help", a);
        return -1;
    }
    if (o->resume_fault && !o->resume_dir) {
        snprintf(why, cap, "--resume-fault needs --resume");
        return -1;
    }
    if (o->resume_step >= 0 && !o->resume_dir) {
        snprintf(why, cap, "--resume-step needs --resume D");
        return -1;
    }
    if (o->ckpt_every && !o->ckpt_dir)
        o->ckpt_dir = o->resume_dir;
    if (o->ckpt_every && !o->ckpt_dir) {
        snprintf(why, cap, "--checkpoint-every needs --checkpoint-dir (or --resume)");
        return -1;
    }
    if (!o->fault.set) {
        const char *env = getenv("LOCKSTEP_FAULT");
        if (env && *env && train_fault_parse_env(env, &o->fault, why, cap) < 0)
            return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void train_timing(double *step_ns, int64_t n_timed, double step_total, double rec_total, int64_t done, double out[3])
{
    out[0] = out[1] = out[2] = 0;
    if (done <= 0 || n_timed <= 0)
        return;
    qsort(step_ns, (size_t)n_timed, sizeof(double), cmp_double);
    out[0] = step_total / (double)done / 1e6;
    out[1] = step_ns[n_timed / 2] / 1e6;
    out[2] = rec_total / (double)done / 1e6;
}

/* train_cpu.c - lockstep-train, CPU path: a data-parallel MLP over MPI ranks, fingerprinted through lockstep.h. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "include/lockstep.h"
#include "kernels/ckpt.h"
#include "kernels/mlp.h"
#include "kernels/reduce_mpi.h"
#include "kernels/train_opts.h"

/* Everything one rank holds. */
typedef struct trainer {
    train_opts o;
    mlp_layout L;
    int rank, world;
    char node[256];
    float *p, *m, *v;          /* parameters and Adam moments */
    float *pieces[RED_PIECES]; /* gradients of the two halves of the batch */
    float *g_local, *g_sum, *tmp, *work;
    mlp_batch b;
    int *order;
    int64_t step;      /* steps done */
    uint64_t data_pos; /* first sample id of this step's rank-0 share */
    uint64_t rng_ctr;
    int64_t adam_t;
    uint64_t run_seed; /* --nondeterministic: differs between runs */
    FILE *order_log;
    double step_ns_total;
    double rec_ns_total; /* time spent inside ls_* recording calls */
    double *step_ns;     /* per step, for the median */
    int64_t n_timed;
} trainer;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const trainer *t, const char *fact, const char *detail, const char *hint)
{
    fprintf(stderr, "lockstep-train: rank %d: %s%s%s%s%s\n", t ? t->rank : -1, fact, detail ? ": " : "",
            detail ? detail : "", hint ? "\n  hint: " : "", hint ? hint : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static float *alloc_floats(const trainer *t, size_t n)
{
    float *a = calloc(n ? n : 1, sizeof(float));
    if (!a)
        die(t, "out of memory", NULL, "lower --hidden or --batch");
    return a;
}

static void trainer_alloc(trainer *t)
{
    size_t n = t->L.n_params, B = (size_t)t->o.batch;
    t->p = alloc_floats(t, n);
    t->m = alloc_floats(t, n);
    t->v = alloc_floats(t, n);
    for (int k = 0; k < RED_PIECES; k++)
        t->pieces[k] = alloc_floats(t, n);
    t->g_local = alloc_floats(t, n);
    t->g_sum = alloc_floats(t, n);
    t->tmp = alloc_floats(t, n);
    t->work = alloc_floats(t, mlp_work_floats(&t->L));
    t->b.n = t->o.batch;
    t->b.x = alloc_floats(t, B * (size_t)t->L.d.d_in);
    t->b.y = alloc_floats(t, B * (size_t)t->L.d.d_out);
    t->b.tok = calloc(B, sizeof(uint32_t));
    t->order = calloc((size_t)t->world * RED_PIECES, sizeof(int));
    t->step_ns = calloc((size_t)t->o.steps + 1, sizeof(double));
    if (!t->b.tok || !t->order || !t->step_ns)
        die(t, "out of memory", NULL, NULL);
}

static void trainer_free(trainer *t)
{
    free(t->p);
    free(t->m);
    free(t->v);
    for (int k = 0; k < RED_PIECES; k++)
        free(t->pieces[k]);
    free(t->g_local);
    free(t->g_sum);
    free(t->tmp);
    free(t->work);
    free(t->b.x);
    free(t->b.y);
    free(t->b.tok);
    free(t->order);
    free(t->step_ns);
}

/* report - rank 0 prints the --json summary: mean and median step time and
 * the time spent recording, each the largest over the ranks. */
static void report(trainer *t, int64_t done)
{
    double mine[3], worst[3] = {0, 0, 0};
    train_timing(t->step_ns, t->n_timed, t->step_ns_total, t->rec_ns_total, done, mine);
    MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (t->o.record_timing) /* the reduced step times: as real programs report them at the end, never the same */
        ls_metric("timing.step_ms", t->rank == 0 ? worst[0] : mine[0]);
    if (t->rank == 0 && t->o.json)
        printf("{\"trainer\":\"cpu\",\"ranks\":%d,\"steps\":%" PRId64 ",\"hidden\":%d,\"batch\":%d,"
               "\"params\":%zu,\"step_ms\":%.6f,\"step_ms_median\":%.6f,\"record_ms\":%.6f,"
               "\"nondeterministic\":%s}\n",
               t->world, done, t->o.dims.hidden, t->o.batch, t->L.n_params, worst[0], worst[1], worst[2],
               t->o.nondet ? "true" : "false");
}

/* resume - load the checkpoint --resume (and --resume-step) names. */
static void resume(trainer *t)
{
    char why[512];
    static char dir[4096];
    int64_t step = ckpt_resolve(t->o.resume_dir, t->o.resume_step, dir, sizeof(dir), why, sizeof(why));
    if (t->rank == 0 && step < 0)
        die(t, "cannot resume", why, "pass the --checkpoint-dir of an earlier run, or one of its step directories");
    MPI_Bcast(&step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (t->o.ckpt_dir == t->o.resume_dir)
        t->o.ckpt_dir = dir; /* checkpoints continue beside the one resumed from */
    ckpt_state s;
    if (ckpt_load(dir, step, t->rank, &s, why, sizeof(why)) < 0)
        die(t, "cannot resume", why, "the checkpoint is unreadable; resume from an older one or start over");
    if (s.world != t->world || memcmp(&s.dims, &t->o.dims, sizeof(s.dims)) != 0 || s.seed != t->o.seed ||
        s.batch != t->o.batch || s.dataset != t->o.dataset || s.n_params != t->L.n_params) {
        char d[512];
        snprintf(d, sizeof(d),
                 "checkpoint: %d ranks, seed %" PRIu64 ", hidden %d, batch %d, dataset %" PRIu64
                 "; this run: %d ranks, seed %" PRIu64 ", hidden %d, batch %d, dataset %" PRIu64,
                 s.world, s.seed, s.dims.hidden, s.batch, s.dataset, t->world, t->o.seed, t->o.dims.hidden, t->o.batch,
                 t->o.dataset);
        die(t, "the checkpoint was written by a different configuration", d,
            "resume with the same -np, --seed, --hidden, --batch and --dataset");
    }
    ckpt_resume_fault(&s, t->o.resume_fault);
    /* what this run now holds, in a restored state block: the twins' saved block of this step checks it */
    if (ckpt_record_state(&s, LS_STATE_RESTORED, !t->o.resume_fault || strcmp(t->o.resume_fault, "optimizer")) < 0)
        fprintf(stderr, "lockstep-train: rank %d: the restored state block is incomplete: %s\n", t->rank,
                ls_last_error());
    size_t n = t->L.n_params * sizeof(float);
    memcpy(t->p, s.params, n);
    memcpy(t->m, s.m, n);
    memcpy(t->v, s.v, n);
    free(s.params);
    free(s.m);
    free(s.v);
    t->step = s.step;
    t->data_pos = s.data_pos;
    t->rng_ctr = s.rng_ctr;
    t->adam_t = s.adam_t;
    if (t->rank == 0 && !t->o.quiet)
        printf("resumed from %s at step %" PRId64 "\n", t->o.resume_dir, s.step);
}

static void checkpoint(trainer *t)
{
    char why[512];
    ckpt_state s = {.step = t->step,
                    .rank = t->rank,
                    .world = t->world,
                    .seed = t->o.seed,
                    .dims = t->o.dims,
                    .batch = t->o.batch,
                    .dataset = t->o.dataset,
                    .data_pos = t->data_pos,
                    .rng_ctr = t->rng_ctr,
                    .adam_t = t->adam_t,
                    .n_params = t->L.n_params,
                    .params = t->p,
                    .m = t->m,
                    .v = t->v};
    if (ckpt_save(t->o.ckpt_dir, &s, why, sizeof(why)) < 0)
        die(t, "cannot write a checkpoint", why, "check the space and permissions of --checkpoint-dir");
    if (ckpt_record_state(&s, LS_STATE_SAVED, 1) < 0)
        fprintf(stderr, "lockstep-train: rank %d: the saved state block is incomplete: %s\n", t->rank, ls_last_error());
    MPI_Barrier(MPI_COMM_WORLD);
    if (t->rank == 0 && ckpt_mark_complete(t->o.ckpt_dir, t->step, why, sizeof(why)) < 0)
        die(t, "cannot write a checkpoint", why, NULL);
    /* Declare it to lockstepd (through the agent), by its absolute path: a replay of a later step starts here. */
    char sdir[4096], real[PATH_MAX];
    if (t->rank == 0 && ckpt_step_dir(t->o.ckpt_dir, t->step, sdir, sizeof(sdir)) == 0 &&
        ls_checkpoint(t->step, realpath(sdir, real) ? real : sdir) < 0)
        fprintf(stderr, "lockstep-train: the checkpoint of step %" PRId64 " is not declared: %s\n", t->step,
                ls_last_error());
}

static void record_tensors(const trainer *t, const float *base, const char *suffix)
{
    char name[LS_NAME_MAX + 1];
    for (int i = 0; i < MLP_NTENSORS; i++) {
        const mlp_tensor *x = &t->L.t[i];
        snprintf(name, sizeof(name), "%s%s", x->name, suffix);
        ls_tensor(name, base + x->off, x->n * sizeof(float), LS_F32, x->ndim, x->shape);
    }
}

/* inject_fault - flip the configured bit of one element of layer1.weight's
 * gradient (the element moves with step and rank). */
static void inject_fault(const trainer *t, float *g, int64_t step)
{
    const mlp_tensor *x = &t->L.t[MLP_W1];
    size_t e = x->off + ((size_t)step * 131 + (size_t)t->rank * 7) % x->n;
    uint32_t w;
    memcpy(&w, &g[e], 4);
    w ^= 1u << t->o.fault.bit;
    memcpy(&g[e], &w, 4);
    fprintf(stderr, "lockstep-train: injected fault: rank %d node %s step %" PRId64 " bit %d of %s[%zu]\n", t->rank,
            t->node, step, t->o.fault.bit, x->name, e - x->off);
}

/* train_step - one step: data, gradient, reduction, update, records. */
static void train_step(trainer *t, int64_t step)
{
    const size_t n = t->L.n_params;
    const int B = t->o.batch, world = t->world;
    int64_t t0 = mono_ns();

    ls_step_begin(step);
    mlp_make_batch(&t->L, t->o.seed, t->data_pos + (uint64_t)t->rank * (uint64_t)B, t->o.dataset, t->rank, &t->rng_ctr,
                   &t->b);
    t->data_pos += (uint64_t)world * (uint64_t)B;

    float scale = 1.0f / ((float)world * (float)B * (float)t->L.d.d_out);
    double sse = 0.0;
    for (int k = 0; k < RED_PIECES; k++) {
        memset(t->pieces[k], 0, n * sizeof(float));
        sse += mlp_grad(&t->L, t->p, &t->b, k * B / RED_PIECES, (k + 1) * B / RED_PIECES, scale, t->pieces[k], t->work);
    }
    if (train_fault_applies(&t->o.fault, step, t->rank, t->node))
        inject_fault(t, t->pieces[0], step);
    for (size_t i = 0; i < n; i++)
        t->g_local[i] = t->pieces[0][i] + t->pieces[1][i];

    /* The loss: every rank adds the ranks' sums in rank order. */
    double all[world];
    MPI_Allgather(&sse, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    double loss = 0.0;
    for (int r = 0; r < world; r++)
        loss += all[r];
    loss /= (double)world * B * t->L.d.d_out;
    int64_t r0 = mono_ns();
    ls_metric("loss", loss);
    int64_t shape[1] = {(int64_t)n};
    ls_tensor_at(LS_LEVEL_COLLECTIVE, "allreduce.in", t->g_local, n * sizeof(float), LS_F32, 1, shape);
    t->rec_ns_total += (double)(mono_ns() - r0);
    /* Every rank learns every rank's input fingerprint (8 bytes each, on every step whatever the trace
     * window, since all ranks must make the same collectives), so that allreduce.out carries its
     * inputs: an output that differs while all inputs matched is the reduction's own doing
     * (nondeterministic order), not a rank's bad gradient. */
    uint64_t in_fp = ls_fingerprint(t->g_local, n * sizeof(float)), in_fps[world];
    MPI_Allgather(&in_fp, 1, MPI_UINT64_T, in_fps, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    int n_inputs = world <= LS_MAX_INPUTS ? world : 1;
    if (world > LS_MAX_INPUTS) /* too many to list: one fingerprint of them all, in rank order */
        in_fps[0] = ls_fingerprint(in_fps, sizeof(in_fps));
    int rc;
    if (t->o.nondet) {
        rc = red_sum_arrival(t->pieces, n, t->g_sum, t->tmp, t->run_seed, step, t->order, MPI_COMM_WORLD);
        if (rc == 0 && t->order_log) {
            fprintf(t->order_log, "%" PRId64, step);
            for (int i = 0; i < world * RED_PIECES; i++)
                fprintf(t->order_log, " %d", t->order[i]);
            fprintf(t->order_log, "\n");
        }
    } else {
        memcpy(t->g_sum, t->g_local, n * sizeof(float));
        rc = red_sum_fixed(t->g_sum, n, t->tmp, MPI_COMM_WORLD);
    }
    if (rc < 0)
        die(t, "the gradient reduction failed", NULL, NULL);
    double sq = 0.0;
    for (size_t i = 0; i < n; i++)
        sq += (double)t->g_sum[i] * t->g_sum[i];
    double gnorm = sqrt(sq);
    r0 = mono_ns();
    if (ls_enabled(LS_LEVEL_COLLECTIVE))
        ls_record_fp(LS_LEVEL_COLLECTIVE, "allreduce.out", ls_fingerprint(t->g_sum, n * sizeof(float)),
                     n * sizeof(float), LS_F32, 1, shape, n_inputs, in_fps);
    ls_metric("grad_norm", gnorm);
    record_tensors(t, t->g_sum, ".grad");
    t->rec_ns_total += (double)(mono_ns() - r0);

    mlp_adam_step(&t->o.adam, ++t->adam_t, n, t->p, t->m, t->v, t->g_sum);
    r0 = mono_ns();
    record_tensors(t, t->p, "");
    ls_step_end();
    int64_t t1 = mono_ns();
    t->rec_ns_total += (double)(t1 - r0);
    t->step = step;
    t->step_ns_total += (double)(t1 - t0);
    t->step_ns[t->n_timed++] = (double)(t1 - t0);

    if (t->rank == 0 && !t->o.quiet)
        printf("step %" PRId64 " loss %.9g grad_norm %.9g\n", step, loss, gnorm);
}

int main(int argc, char **argv)
{
    static trainer T;
    trainer *t = &T;
    char why[512];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->world);
    int prc = train_opts_parse(argc, argv, &t->o, why, sizeof(why));
    if (prc != 0) {
        if (prc < 0 && t->rank == 0)
            fprintf(stderr, "lockstep-train: %s\n", why);
        MPI_Finalize();
        return prc < 0 ? 2 : 0;
    }
    if (mlp_layout_init(&t->L, &t->o.dims) < 0)
        die(t, "the model does not fit", NULL, "lower --hidden");
    if (t->o.batch < RED_PIECES)
        die(t, "--batch is too small", NULL, "use at least 2");
    train_node_name(t->node, sizeof(t->node));
    if (ls_init() < 0)
        die(t, "lockstep did not start", ls_last_error(), "check LOCKSTEP_TRACE_DIR and LOCKSTEP_TRACE");

    trainer_alloc(t);
    if (t->o.resume_dir)
        resume(t);
    else
        mlp_init_params(&t->L, t->o.seed, t->p);
    if (t->o.nondet)
        t->run_seed = red_run_seed(MPI_COMM_WORLD);
    if (t->rank == 0 && t->o.order_log && !(t->order_log = fopen(t->o.order_log, "w")))
        die(t, "cannot write the order log", t->o.order_log, NULL);

    int64_t first = t->step + 1;
    for (int64_t s = first; s <= t->o.steps; s++) {
        train_step(t, s);
        if (t->o.ckpt_every && s % t->o.ckpt_every == 0)
            checkpoint(t);
    }
    report(t, t->o.steps >= first ? t->o.steps - first + 1 : 0);
    if (t->order_log)
        fclose(t->order_log);
    ls_shutdown();
    trainer_free(t);
    MPI_Finalize();
    return 0;
}

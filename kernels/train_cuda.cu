/* train_cuda.cu - lockstep-train, GPU path: the same MLP on CUDA, gradients summed with NCCL, reductions
 * deterministic or atomic, every record fingerprinted on the device. One GPU per MPI rank. */
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <nccl.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <climits>
#include <unistd.h>

#include <cuda_runtime.h>

#include "kernels/tensor_device.h"
extern "C" {
#include "kernels/ckpt.h"
#include "kernels/mlp.h"
#include "kernels/train_opts.h"
}
#include "common/lsfp1.h"
#include "kernels/lsfp1_cuda.h"
#include "kernels/reduce_cuda.h"

namespace
{

constexpr int kT = 256;

void die(int rank, const char *fact, const char *detail, const char *hint)
{
    fprintf(stderr, "lockstep-train-cuda: rank %d: %s%s%s%s%s\n", rank, fact, detail ? ": " : "", detail ? detail : "",
            hint ? "\n  hint: " : "", hint ? hint : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

int g_rank;

void ck(cudaError_t rc, const char *what)
{
    if (rc != cudaSuccess)
        die(g_rank, what, cudaGetErrorString(rc), "check the GPU (nvidia-smi) and CUDA_VISIBLE_DEVICES");
}

void nk(ncclResult_t rc, const char *what)
{
    if (rc != ncclSuccess)
        die(g_rank, what, ncclGetErrorString(rc), "check NCCL_* settings; one GPU per rank");
}

unsigned blocks(size_t n)
{
    return (unsigned)((n + kT - 1) / kT);
}

/* gather_kernel - a0[s] = [x[s], E[tok[s]]]. */
__global__ void gather_kernel(const float *x, const int32_t *tok, const float *E, int B, int din, int de, float *a0)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int d0 = din + de;
    if (t >= (size_t)B * d0)
        return;
    int s = (int)(t / d0), c = (int)(t % d0);
    a0[t] = c < din ? x[(size_t)s * din + c] : E[(size_t)tok[s] * de + (c - din)];
}

/* linear_kernel - Y[s][r] = b[r] + sum_c W[r][c] X[s][c] (c ascending), tanh'd when asked. */
__global__ void linear_kernel(const float *W, const float *b, const float *X, int B, int rows, int cols, int act,
                              float *Y)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)B * rows)
        return;
    int s = (int)(t / rows), r = (int)(t % rows);
    const float *w = W + (size_t)r * cols, *x = X + (size_t)s * cols;
    float acc = b[r];
    for (int c = 0; c < cols; c++)
        acc += w[c] * x[c];
    Y[t] = act ? tanhf(acc) : acc;
}

/* backin_kernel - dX[s][c] = (sum_r W[r][c] D[s][r]) * (1 - H[s][c]^2), or without the tanh factor when H is NULL. */
__global__ void backin_kernel(const float *W, const float *D, const float *H, int B, int rows, int cols, float *dX)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)B * cols)
        return;
    int s = (int)(t / cols), c = (int)(t % cols);
    float acc = 0.0f;
    for (int r = 0; r < rows; r++)
        acc += W[(size_t)r * cols + c] * D[(size_t)s * rows + r];
    dX[t] = H ? acc * (1.0f - H[t] * H[t]) : acc;
}

/* loss_kernel - dO = 2 (out - y) scale; sq = (out - y)^2. */
__global__ void loss_kernel(const float *out, const float *y, size_t n, float scale, float *dO, float *sq)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float e = out[t] - y[t];
    sq[t] = e * e;
    dO[t] = 2.0f * e * scale;
}

__global__ void square_kernel(const float *g, size_t n, float *sq)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n)
        sq[t] = g[t] * g[t];
}

__global__ void adam_kernel(size_t n, float lr, float b1, float b2, float eps, float c1, float c2, float *p, float *m,
                            float *v, const float *g)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    p[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
}

__global__ void flip_kernel(float *g, size_t e, int bit)
{
    unsigned *w = reinterpret_cast<unsigned *>(g + e);
    *w ^= 1u << bit;
}

/* Everything one rank holds on its GPU. */
struct gpu_trainer {
    train_opts o;
    mlp_layout L;
    int rank, world;
    char node[256];
    lsk_mode mode;
    uint64_t run_seed;
    cudaStream_t st;
    ncclComm_t comm;
    float *p, *m, *v, *g, *sq, *scalar;
    float *x, *y, *a0, *h1, *h2, *out, *dO, *dz2, *dz1, *da0;
    int32_t *tok;
    void *sum_ws, *scatter_ws;
    mlp_batch hb; /* host batch */
    int64_t step, adam_t;
    uint64_t data_pos, rng_ctr;
    double step_ns, rec_ns; /* all steps; inside ls_* recording calls */
    double *step_each;
    int64_t n_timed;
};

float *dalloc(size_t n)
{
    float *p = nullptr;
    ck(cudaMalloc(reinterpret_cast<void **>(&p), (n ? n : 1) * sizeof(float)), "cudaMalloc");
    ck(cudaMemset(p, 0, (n ? n : 1) * sizeof(float)), "cudaMemset");
    return p;
}

void setup(gpu_trainer *t)
{
    size_t n = t->L.n_params, B = (size_t)t->o.batch, H = (size_t)t->L.d.hidden, d0 = (size_t)t->L.d0,
           dout = (size_t)t->L.d.d_out;
    size_t big = n > B * d0 ? n : B * d0;
    t->p = dalloc(n);
    t->m = dalloc(n);
    t->v = dalloc(n);
    t->g = dalloc(n);
    t->sq = dalloc(big);
    t->scalar = dalloc(1);
    t->x = dalloc(B * t->L.d.d_in);
    t->y = dalloc(B * dout);
    t->a0 = dalloc(B * d0);
    t->h1 = dalloc(B * H);
    t->h2 = dalloc(B * H);
    t->out = dalloc(B * dout);
    t->dO = dalloc(B * dout);
    t->dz2 = dalloc(B * H);
    t->dz1 = dalloc(B * H);
    t->da0 = dalloc(B * d0);
    ck(cudaMalloc(reinterpret_cast<void **>(&t->tok), B * sizeof(int32_t)), "cudaMalloc");
    ck(cudaMalloc(&t->sum_ws, lsk_sum_ws_bytes(big)), "cudaMalloc");
    ck(cudaMalloc(&t->scatter_ws, lsk_scatter_ws_bytes((int)B, t->L.d.vocab)), "cudaMalloc");
    t->hb.n = (int)B;
    t->hb.x = static_cast<float *>(calloc(B * t->L.d.d_in, sizeof(float)));
    t->hb.y = static_cast<float *>(calloc(B * dout, sizeof(float)));
    t->hb.tok = static_cast<uint32_t *>(calloc(B, sizeof(uint32_t)));
    t->step_each = static_cast<double *>(calloc((size_t)t->o.steps + 1, sizeof(double)));
    if (!t->hb.x || !t->hb.y || !t->hb.tok || !t->step_each)
        die(t->rank, "out of memory", nullptr, nullptr);
}

/* dsum - the deterministic sum of n device floats, on the host. */
double dsum(gpu_trainer *t, const float *d, size_t n)
{
    float h = 0.0f;
    ck(lsk_sum_f32(LSK_DET, d, n, t->scalar, t->sum_ws, t->st), "sum");
    ck(cudaMemcpyAsync(&h, t->scalar, sizeof(float), cudaMemcpyDeviceToHost, t->st), "cudaMemcpy");
    ck(cudaStreamSynchronize(t->st), "cudaStreamSynchronize");
    return h;
}

void record_tensors(gpu_trainer *t, const float *base, const char *suffix)
{
    char name[LS_NAME_MAX + 1];
    for (int i = 0; i < MLP_NTENSORS; i++) {
        const mlp_tensor *x = &t->L.t[i];
        snprintf(name, sizeof(name), "%s%s", x->name, suffix);
        ls_tensor_device(name, base + x->off, x->n * sizeof(float), LS_F32, x->ndim, x->shape, t->st);
    }
}

/* backward - the gradient of this rank's batch into t->g (zeroed first). */
void backward(gpu_trainer *t, uint32_t rot)
{
    const mlp_tensor *T = t->L.t;
    const int B = t->o.batch, H = t->L.d.hidden, d0 = t->L.d0, dout = t->L.d.d_out;
    float *g = t->g;
    const float *p = t->p;
    ck(cudaMemsetAsync(g, 0, t->L.n_params * sizeof(float), t->st), "cudaMemset");
    ck(lsk_outer_f32(t->mode, t->dO, t->h2, B, dout, H, g + T[MLP_W2].off, rot, t->st), "outer");
    ck(lsk_colsum_f32(t->mode, t->dO, B, dout, g + T[MLP_B2].off, rot, t->st), "colsum");
    backin_kernel<<<blocks((size_t)B * H), kT, 0, t->st>>>(p + T[MLP_W2].off, t->dO, t->h2, B, dout, H, t->dz2);
    ck(lsk_outer_f32(t->mode, t->dz2, t->h1, B, H, H, g + T[MLP_W1].off, rot, t->st), "outer");
    ck(lsk_colsum_f32(t->mode, t->dz2, B, H, g + T[MLP_B1].off, rot, t->st), "colsum");
    backin_kernel<<<blocks((size_t)B * H), kT, 0, t->st>>>(p + T[MLP_W1].off, t->dz2, t->h1, B, H, H, t->dz1);
    ck(lsk_outer_f32(t->mode, t->dz1, t->a0, B, H, d0, g + T[MLP_W0].off, rot, t->st), "outer");
    ck(lsk_colsum_f32(t->mode, t->dz1, B, H, g + T[MLP_B0].off, rot, t->st), "colsum");
    backin_kernel<<<blocks((size_t)B * d0), kT, 0, t->st>>>(p + T[MLP_W0].off, t->dz1, nullptr, B, H, d0, t->da0);
    ck(lsk_scatter_add_f32(t->mode, t->da0 + t->L.d.d_in, d0, t->tok, B, t->L.d.d_emb, g + T[MLP_EMB].off, t->L.d.vocab,
                           t->scatter_ws, rot, t->st),
       "scatter_add");
}

int64_t mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void train_step(gpu_trainer *t, int64_t step)
{
    const mlp_tensor *T = t->L.t;
    const int B = t->o.batch, H = t->L.d.hidden, d0 = t->L.d0, dout = t->L.d.d_out, din = t->L.d.d_in;
    const size_t n = t->L.n_params;
    int64_t t0 = mono_ns();

    ls_step_begin(step);
    mlp_make_batch(&t->L, t->o.seed, t->data_pos + (uint64_t)t->rank * (uint64_t)B, t->o.dataset, t->rank, &t->rng_ctr,
                   &t->hb);
    t->data_pos += (uint64_t)t->world * (uint64_t)B;
    ck(cudaMemcpyAsync(t->x, t->hb.x, (size_t)B * din * sizeof(float), cudaMemcpyHostToDevice, t->st), "copy");
    ck(cudaMemcpyAsync(t->y, t->hb.y, (size_t)B * dout * sizeof(float), cudaMemcpyHostToDevice, t->st), "copy");
    ck(cudaMemcpyAsync(t->tok, t->hb.tok, (size_t)B * sizeof(int32_t), cudaMemcpyHostToDevice, t->st), "copy");

    gather_kernel<<<blocks((size_t)B * d0), kT, 0, t->st>>>(t->x, t->tok, t->p + T[MLP_EMB].off, B, din, t->L.d.d_emb,
                                                            t->a0);
    linear_kernel<<<blocks((size_t)B * H), kT, 0, t->st>>>(t->p + T[MLP_W0].off, t->p + T[MLP_B0].off, t->a0, B, H, d0,
                                                           1, t->h1);
    linear_kernel<<<blocks((size_t)B * H), kT, 0, t->st>>>(t->p + T[MLP_W1].off, t->p + T[MLP_B1].off, t->h1, B, H, H,
                                                           1, t->h2);
    linear_kernel<<<blocks((size_t)B * dout), kT, 0, t->st>>>(t->p + T[MLP_W2].off, t->p + T[MLP_B2].off, t->h2, B,
                                                              dout, H, 0, t->out);
    float scale = 1.0f / ((float)t->world * (float)B * (float)dout);
    loss_kernel<<<blocks((size_t)B * dout), kT, 0, t->st>>>(t->out, t->y, (size_t)B * dout, scale, t->dO, t->sq);
    double sse = dsum(t, t->sq, (size_t)B * dout);

    uint32_t rot = (uint32_t)fp_fmix64(t->run_seed ^ (uint64_t)step * 0x9e3779b97f4a7c15ULL);
    backward(t, rot);
    if (train_fault_applies(&t->o.fault, step, t->rank, t->node)) {
        size_t e = T[MLP_W1].off + ((size_t)step * 131 + (size_t)t->rank * 7) % T[MLP_W1].n;
        flip_kernel<<<1, 1, 0, t->st>>>(t->g, e, t->o.fault.bit);
        fprintf(stderr, "lockstep-train-cuda: injected fault: rank %d node %s step %" PRId64 " bit %d of %s[%zu]\n",
                t->rank, t->node, step, t->o.fault.bit, T[MLP_W1].name, e - T[MLP_W1].off);
    }

    double all[1024];
    MPI_Allgather(&sse, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    double loss = 0.0;
    for (int r = 0; r < t->world; r++)
        loss += all[r];
    loss /= (double)t->world * B * dout;
    int64_t r0 = mono_ns();
    ls_metric("loss", loss);
    int64_t shape[1] = {(int64_t)n};
    /* As the CPU trainer: every rank learns every rank's input fingerprint on every step (all ranks make the
     * same collectives whatever the trace window), so that allreduce.out carries its inputs. The one device
     * hash is also the allreduce.in record (what lsk_tensor_device_at would compute and record). */
    uint64_t in_fp = 0, in_fps[1024];
    ck(lsk_lsfp1_sync(t->g, n * sizeof(float), &in_fp, NULL, t->st), "the gradient's fingerprint");
    if (ls_enabled(LS_LEVEL_COLLECTIVE))
        ls_record_fp(LS_LEVEL_COLLECTIVE, "allreduce.in", in_fp, n * sizeof(float), LS_F32, 1, shape, 0, NULL);
    MPI_Allgather(&in_fp, 1, MPI_UINT64_T, in_fps, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    int n_inputs = t->world <= LS_MAX_INPUTS ? t->world : 1;
    if (t->world > LS_MAX_INPUTS) /* too many to list: one fingerprint of them all, in rank order */
        in_fps[0] = fp_lsfp1(in_fps, (size_t)t->world * sizeof(uint64_t));
    t->rec_ns += (double)(mono_ns() - r0);
    nk(ncclAllReduce(t->g, t->g, n, ncclFloat, ncclSum, t->comm, t->st), "ncclAllReduce");
    square_kernel<<<blocks(n), kT, 0, t->st>>>(t->g, n, t->sq);
    double gnorm = std::sqrt(dsum(t, t->sq, n));
    r0 = mono_ns();
    if (ls_enabled(LS_LEVEL_COLLECTIVE)) {
        uint64_t out_fp = 0;
        ck(lsk_lsfp1_sync(t->g, n * sizeof(float), &out_fp, NULL, t->st), "the reduced gradient's fingerprint");
        ls_record_fp(LS_LEVEL_COLLECTIVE, "allreduce.out", out_fp, n * sizeof(float), LS_F32, 1, shape, n_inputs,
                     in_fps);
    }
    ls_metric("grad_norm", gnorm);
    record_tensors(t, t->g, ".grad");
    t->rec_ns += (double)(mono_ns() - r0);

    t->adam_t++;
    const mlp_adam *a = &t->o.adam;
    float c1 = (float)(1.0 / (1.0 - pow(a->beta1, (double)t->adam_t)));
    float c2 = (float)(1.0 / (1.0 - pow(a->beta2, (double)t->adam_t)));
    adam_kernel<<<blocks(n), kT, 0, t->st>>>(n, a->lr, a->beta1, a->beta2, a->eps, c1, c2, t->p, t->m, t->v, t->g);
    r0 = mono_ns();
    record_tensors(t, t->p, "");
    t->rec_ns += (double)(mono_ns() - r0);
    ck(cudaStreamSynchronize(t->st), "step");
    r0 = mono_ns();
    ls_step_end();
    int64_t t1 = mono_ns();
    t->rec_ns += (double)(t1 - r0);
    t->step = step;
    t->step_ns += (double)(t1 - t0);
    t->step_each[t->n_timed++] = (double)(t1 - t0);
    if (t->rank == 0 && !t->o.quiet)
        printf("step %" PRId64 " loss %.9g grad_norm %.9g\n", step, loss, gnorm);
}

/* record_state_device - the trainer's state as a state block of its step, the arrays fingerprinted where they
 * live (ls_state_device), so that a restored block checks what reached the GPU. */
void record_state_device(gpu_trainer *t, int kind)
{
    size_t n = t->L.n_params * sizeof(float);
    int64_t shape[1] = {static_cast<int64_t>(t->L.n_params)};
    int rc = ls_state_begin(t->step, kind);
    if (rc == 0) {
        rc |= ls_state_device("params", t->p, n, LS_F32, 1, shape, t->st);
        rc |= ls_state_device("adam.m", t->m, n, LS_F32, 1, shape, t->st);
        rc |= ls_state_device("adam.v", t->v, n, LS_F32, 1, shape, t->st);
        rc |= ls_state("adam_t", &t->adam_t, sizeof(t->adam_t), LS_I64, 0, nullptr);
        rc |= ls_state("data_pos", &t->data_pos, sizeof(t->data_pos), LS_U64, 0, nullptr);
        rc |= ls_state("rng_ctr", &t->rng_ctr, sizeof(t->rng_ctr), LS_U64, 0, nullptr);
        rc |= ls_state_end();
    }
    if (rc)
        fprintf(stderr, "lockstep-train-cuda: rank %d: the %s state block is incomplete: %s\n", t->rank,
                kind == LS_STATE_SAVED ? "saved" : "restored", ls_last_error());
}

/* save - the device state copied into host arrays, written as a checkpoint, and recorded as a saved block. */
void save(gpu_trainer *t)
{
    size_t n = t->L.n_params * sizeof(float);
    float *hp = static_cast<float *>(malloc(n ? n : 1)), *hm = static_cast<float *>(malloc(n ? n : 1)),
          *hv = static_cast<float *>(malloc(n ? n : 1));
    char why[512];
    if (!hp || !hm || !hv)
        die(t->rank, "out of memory", nullptr, nullptr);
    ck(cudaMemcpy(hp, t->p, n, cudaMemcpyDeviceToHost), "copy");
    ck(cudaMemcpy(hm, t->m, n, cudaMemcpyDeviceToHost), "copy");
    ck(cudaMemcpy(hv, t->v, n, cudaMemcpyDeviceToHost), "copy");
    ckpt_state s = {};
    s.step = t->step;
    s.rank = t->rank;
    s.world = t->world;
    s.seed = t->o.seed;
    s.dims = t->o.dims;
    s.batch = t->o.batch;
    s.dataset = t->o.dataset;
    s.data_pos = t->data_pos;
    s.rng_ctr = t->rng_ctr;
    s.adam_t = t->adam_t;
    s.n_params = t->L.n_params;
    s.params = hp;
    s.m = hm;
    s.v = hv;
    if (ckpt_save(t->o.ckpt_dir, &s, why, sizeof(why)) < 0)
        die(t->rank, "cannot write a checkpoint", why, "check --checkpoint-dir");
    record_state_device(t, LS_STATE_SAVED);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t->rank == 0 && ckpt_mark_complete(t->o.ckpt_dir, t->step, why, sizeof(why)) < 0)
        die(t->rank, "cannot write a checkpoint", why, nullptr);
    /* Declare it to lockstepd (through the agent), by its absolute path: a replay of a later step starts here. */
    char sdir[4096], real[PATH_MAX];
    if (t->rank == 0 && ckpt_step_dir(t->o.ckpt_dir, t->step, sdir, sizeof(sdir)) == 0 &&
        ls_checkpoint(t->step, realpath(sdir, real) ? real : sdir) < 0)
        fprintf(stderr, "lockstep-train-cuda: the checkpoint of step %" PRId64 " is not declared: %s\n", t->step,
                ls_last_error());
    free(hp);
    free(hm);
    free(hv);
}

void resume(gpu_trainer *t)
{
    char why[512];
    static char dir[4096];
    int64_t step = ckpt_resolve(t->o.resume_dir, t->o.resume_step, dir, sizeof(dir), why, sizeof(why));
    if (t->rank == 0 && step < 0)
        die(t->rank, "cannot resume", why,
            "pass the --checkpoint-dir of an earlier run, or one of its step directories");
    MPI_Bcast(&step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (t->o.ckpt_dir == t->o.resume_dir)
        t->o.ckpt_dir = dir; /* checkpoints continue beside the one resumed from */
    ckpt_state s;
    if (ckpt_load(dir, step, t->rank, &s, why, sizeof(why)) < 0)
        die(t->rank, "cannot resume", why, "resume from an older checkpoint or start over");
    if (s.world != t->world || memcmp(&s.dims, &t->o.dims, sizeof(s.dims)) != 0 || s.seed != t->o.seed ||
        s.batch != t->o.batch || s.dataset != t->o.dataset || s.n_params != t->L.n_params)
        die(t->rank, "the checkpoint was written by a different configuration", t->o.resume_dir,
            "resume with the same -np, --seed, --hidden, --batch and --dataset");
    ckpt_resume_fault(&s, t->o.resume_fault);
    size_t n = t->L.n_params * sizeof(float);
    ck(cudaMemcpy(t->p, s.params, n, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(t->m, s.m, n, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(t->v, s.v, n, cudaMemcpyHostToDevice), "copy");
    free(s.params);
    free(s.m);
    free(s.v);
    t->step = s.step;
    t->data_pos = s.data_pos;
    t->rng_ctr = s.rng_ctr;
    t->adam_t = s.adam_t;
    record_state_device(t, LS_STATE_RESTORED);
}

} // namespace

int main(int argc, char **argv)
{
    static gpu_trainer T;
    gpu_trainer *t = &T;
    char why[512];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->world);
    g_rank = t->rank;
    int prc = train_opts_parse(argc, argv, &t->o, why, sizeof(why));
    if (prc != 0) {
        if (prc < 0 && t->rank == 0)
            fprintf(stderr, "lockstep-train-cuda: %s\n", why);
        MPI_Finalize();
        return prc < 0 ? 2 : 0;
    }
    if (t->world > 1024 || mlp_layout_init(&t->L, &t->o.dims) < 0)
        die(t->rank, "the model or the world does not fit", nullptr, "lower --hidden; at most 1024 ranks");
    t->mode = t->o.reduce ? (strcmp(t->o.reduce, "atomic") == 0 ? LSK_ATOMIC : LSK_DET)
                          : (t->o.nondet ? LSK_ATOMIC : LSK_DET);
    train_node_name(t->node, sizeof(t->node));

    int ndev = 0;
    ck(cudaGetDeviceCount(&ndev), "no CUDA device");
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int local = lr ? atoi(lr) : t->rank;
    ck(cudaSetDevice(local % (ndev > 0 ? ndev : 1)), "cudaSetDevice");
    ck(cudaStreamCreateWithFlags(&t->st, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclUniqueId id;
    if (t->rank == 0)
        nk(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    nk(ncclCommInitRank(&t->comm, t->world, id, t->rank), "ncclCommInitRank");
    if (ls_init() < 0)
        die(t->rank, "lockstep did not start", ls_last_error(), "check LOCKSTEP_TRACE_DIR and LOCKSTEP_TRACE");

    setup(t);
    if (t->o.resume_dir) {
        resume(t);
    } else {
        float *hp = static_cast<float *>(calloc(t->L.n_params, sizeof(float)));
        if (!hp)
            die(t->rank, "out of memory", nullptr, nullptr);
        mlp_init_params(&t->L, t->o.seed, hp);
        ck(cudaMemcpy(t->p, hp, t->L.n_params * sizeof(float), cudaMemcpyHostToDevice), "copy");
        free(hp);
    }
    if (t->mode == LSK_ATOMIC && t->rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t->run_seed = fp_fmix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 12);
    }
    MPI_Bcast(&t->run_seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    int64_t first = t->step + 1;
    for (int64_t s = first; s <= t->o.steps; s++) {
        train_step(t, s);
        if (t->o.ckpt_every && s % t->o.ckpt_every == 0)
            save(t);
    }
    int64_t done = t->o.steps >= first ? t->o.steps - first + 1 : 0;
    double mine[3], worst[3] = {0, 0, 0};
    train_timing(t->step_each, t->n_timed, t->step_ns, t->rec_ns, done, mine);
    MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (t->rank == 0 && t->o.json)
        printf("{\"trainer\":\"cuda\",\"ranks\":%d,\"steps\":%" PRId64 ",\"hidden\":%d,\"batch\":%d,"
               "\"params\":%zu,\"step_ms\":%.6f,\"step_ms_median\":%.6f,\"record_ms\":%.6f,"
               "\"reduce\":\"%s\"}\n",
               t->world, done, t->o.dims.hidden, t->o.batch, t->L.n_params, worst[0], worst[1], worst[2],
               t->mode == LSK_ATOMIC ? "atomic" : "det");
    ls_shutdown();
    ncclCommDestroy(t->comm);
    MPI_Finalize();
    return 0;
}

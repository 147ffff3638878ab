/* mlp.c - lockstep-train's model on the CPU: layout, initialisation, synthetic data, gradient, Adam. */
#include "kernels/mlp.h"

#include <math.h>
#include <string.h>

#include "kernels/ctr_rng.h"

#define NOISE_SCALE 0.01f

int mlp_layout_init(mlp_layout *L, const mlp_dims *d)
{
    const int dims[] = {d->d_in, d->vocab, d->d_emb, d->hidden, d->d_out};
    for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
        if (dims[i] < 1 || dims[i] > 65536)
            return -1;
    memset(L, 0, sizeof(*L));
    L->d = *d;
    L->d0 = d->d_in + d->d_emb;
    static const char *const names[MLP_NTENSORS] = {"embedding.weight", "layer0.weight", "layer0.bias", "layer1.weight",
                                                    "layer1.bias",      "layer2.weight", "layer2.bias"};
    const int64_t shapes[MLP_NTENSORS][2] = {{d->vocab, d->d_emb},   {d->hidden, L->d0}, {d->hidden, 0},
                                             {d->hidden, d->hidden}, {d->hidden, 0},     {d->d_out, d->hidden},
                                             {d->d_out, 0}};
    size_t off = 0;
    for (int i = 0; i < MLP_NTENSORS; i++) {
        mlp_tensor *t = &L->t[i];
        t->name = names[i];
        t->ndim = shapes[i][1] ? 2 : 1;
        t->shape[0] = shapes[i][0];
        t->shape[1] = shapes[i][1];
        t->n = (size_t)shapes[i][0] * (size_t)(shapes[i][1] ? shapes[i][1] : 1);
        t->off = off;
        off += t->n;
    }
    if (off > ((size_t)1 << 31))
        return -1;
    L->n_params = off;
    return 0;
}

void mlp_init_params(const mlp_layout *L, uint64_t seed, float *p)
{
    const int fan_in[MLP_NTENSORS] = {1, L->d0, 0, L->d.hidden, 0, L->d.hidden, 0};
    for (int i = 0; i < MLP_NTENSORS; i++) {
        const mlp_tensor *t = &L->t[i];
        float scale = fan_in[i] ? 1.0f / sqrtf((float)fan_in[i]) : 0.0f;
        for (size_t k = 0; k < t->n; k++)
            p[t->off + k] = scale * crng_uniform(seed, CRNG_INIT, (uint64_t)i << 40 | k, 0);
    }
}

/* teacher - the target function: y_k = tanh(0.5 * sum_j T_kj x_j + U[tok]_k). */
static void teacher(const mlp_layout *L, uint64_t seed, const float *x, uint32_t tok, float *y)
{
    for (int k = 0; k < L->d.d_out; k++) {
        float s = crng_uniform(seed, CRNG_TEACHER, (uint64_t)1 << 40 | (uint64_t)tok << 8, (uint32_t)k);
        for (int j = 0; j < L->d.d_in; j++)
            s += 0.5f * crng_uniform(seed, CRNG_TEACHER, (uint64_t)k, (uint32_t)j) * x[j];
        y[k] = tanhf(s);
    }
}

void mlp_make_batch(const mlp_layout *L, uint64_t seed, uint64_t first_id, uint64_t dataset, int rank,
                    uint64_t *rng_ctr, mlp_batch *b)
{
    const int din = L->d.d_in;
    for (int s = 0; s < b->n; s++) {
        uint64_t id = (first_id + (uint64_t)s) % dataset;
        float *x = b->x + (size_t)s * din;
        for (int j = 0; j < din; j++)
            x[j] = crng_uniform(seed, CRNG_DATA, id, (uint32_t)j);
        b->tok[s] = crng_u32(seed, CRNG_DATA + 16, id, 0, 0) % (uint32_t)L->d.vocab;
        teacher(L, seed, x, b->tok[s], b->y + (size_t)s * L->d.d_out);
        /* The noise is the RNG state a resume must restore. */
        uint64_t c = (*rng_ctr)++;
        for (int j = 0; j < din; j++)
            x[j] += NOISE_SCALE * crng_uniform(seed, CRNG_NOISE | (uint32_t)rank << 8, c, (uint32_t)j);
    }
}

size_t mlp_work_floats(const mlp_layout *L)
{
    /* a0, h1, h2, out, dout, dz2, dz1, da0 */
    return 2 * (size_t)L->d0 + 4 * (size_t)L->d.hidden + 2 * (size_t)L->d.d_out;
}

/* matvec - out[r] = b[r] + sum_c W[r][c] in[c], c ascending. */
static void matvec(const float *W, const float *b, const float *in, int rows, int cols, float *out)
{
    for (int r = 0; r < rows; r++) {
        const float *w = W + (size_t)r * cols;
        float s = b[r];
        for (int c = 0; c < cols; c++)
            s += w[c] * in[c];
        out[r] = s;
    }
}

/* backprop_layer - dW += d (x) in, db += d, and (if dx) dx = W^T d. */
static void backprop_layer(const float *W, const float *d, const float *in, int rows, int cols, float *dW, float *db,
                           float *dx)
{
    for (int r = 0; r < rows; r++) {
        float *gw = dW + (size_t)r * cols;
        for (int c = 0; c < cols; c++)
            gw[c] += d[r] * in[c];
        db[r] += d[r];
    }
    if (!dx)
        return;
    for (int c = 0; c < cols; c++)
        dx[c] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *w = W + (size_t)r * cols;
        for (int c = 0; c < cols; c++)
            dx[c] += w[c] * d[r];
    }
}

double mlp_grad(const mlp_layout *L, const float *p, const mlp_batch *b, int lo, int hi, float scale, float *g,
                float *work)
{
    const int din = L->d.d_in, de = L->d.d_emb, H = L->d.hidden, dout = L->d.d_out, d0 = L->d0;
    const mlp_tensor *t = L->t;
    float *a0 = work, *h1 = a0 + d0, *h2 = h1 + H, *out = h2 + H, *dO = out + dout, *dz2 = dO + dout, *dz1 = dz2 + H,
          *da0 = dz1 + H;
    double sse = 0.0;

    for (int s = lo; s < hi; s++) {
        const float *x = b->x + (size_t)s * din;
        const float *y = b->y + (size_t)s * dout;
        uint32_t tok = b->tok[s];
        memcpy(a0, x, (size_t)din * sizeof(float));
        memcpy(a0 + din, p + t[MLP_EMB].off + (size_t)tok * de, (size_t)de * sizeof(float));
        matvec(p + t[MLP_W0].off, p + t[MLP_B0].off, a0, H, d0, h1);
        for (int i = 0; i < H; i++)
            h1[i] = tanhf(h1[i]);
        matvec(p + t[MLP_W1].off, p + t[MLP_B1].off, h1, H, H, h2);
        for (int i = 0; i < H; i++)
            h2[i] = tanhf(h2[i]);
        matvec(p + t[MLP_W2].off, p + t[MLP_B2].off, h2, dout, H, out);
        for (int k = 0; k < dout; k++) {
            float e = out[k] - y[k];
            sse += (double)e * e;
            dO[k] = 2.0f * e * scale;
        }
        backprop_layer(p + t[MLP_W2].off, dO, h2, dout, H, g + t[MLP_W2].off, g + t[MLP_B2].off, dz2);
        for (int i = 0; i < H; i++)
            dz2[i] *= 1.0f - h2[i] * h2[i];
        backprop_layer(p + t[MLP_W1].off, dz2, h1, H, H, g + t[MLP_W1].off, g + t[MLP_B1].off, dz1);
        for (int i = 0; i < H; i++)
            dz1[i] *= 1.0f - h1[i] * h1[i];
        backprop_layer(p + t[MLP_W0].off, dz1, a0, H, d0, g + t[MLP_W0].off, g + t[MLP_B0].off, da0);
        /* The embedding gradient: a scatter-add of rows, in sample order. */
        float *ge = g + t[MLP_EMB].off + (size_t)tok * de;
        for (int k = 0; k < de; k++)
            ge[k] += da0[din + k];
    }
    return sse;
}

void mlp_adam_step(const mlp_adam *a, int64_t t, size_t n, float *p, float *m, float *v, const float *g)
{
    const float c1 = (float)(1.0 / (1.0 - pow(a->beta1, (double)t)));
    const float c2 = (float)(1.0 / (1.0 - pow(a->beta2, (double)t)));
    for (size_t i = 0; i < n; i++) {
        m[i] = a->beta1 * m[i] + (1.0f - a->beta1) * g[i];
        v[i] = a->beta2 * v[i] + (1.0f - a->beta2) * g[i] * g[i];
        p[i] -= a->lr * (m[i] * c1) / (sqrtf(v[i] * c2) + a->eps);
    }
}

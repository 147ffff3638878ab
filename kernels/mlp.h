/* mlp.h - lockstep-train's model: an embedding plus a three-layer MLP, its parameter layout and synthetic data. */
#ifndef KERNELS_MLP_H
#define KERNELS_MLP_H

#include <stddef.h>
#include <stdint.h>

/* The parameters live in one flat float array (one buffer to reduce, one
 * loop to update); these are its tensors, in order. */
enum mlp_tensor_id { MLP_EMB = 0, MLP_W0, MLP_B0, MLP_W1, MLP_B1, MLP_W2, MLP_B2, MLP_NTENSORS };

typedef struct mlp_dims {
    int d_in;   /* dense input features */
    int vocab;  /* embedding rows (one categorical feature per sample) */
    int d_emb;  /* embedding width */
    int hidden; /* width of the two hidden layers */
    int d_out;  /* regression targets */
} mlp_dims;

typedef struct mlp_tensor {
    const char *name; /* "embedding.weight", "layer0.weight", ... */
    size_t off, n;    /* in floats, within the flat array */
    int ndim;
    int64_t shape[2];
} mlp_tensor;

typedef struct mlp_layout {
    mlp_dims d;
    int d0; /* layer 0's input width: d_in + d_emb */
    mlp_tensor t[MLP_NTENSORS];
    size_t n_params;
} mlp_layout;

/* One batch of synthetic samples. Arrays are owned by the caller. */
typedef struct mlp_batch {
    int n;
    float *x;      /* n * d_in */
    uint32_t *tok; /* n */
    float *y;      /* n * d_out */
} mlp_batch;

/* mlp_layout_init - lay out the tensors for `d`. Returns 0, or -1 when a
 * dimension is outside 1..65536 or the total passes 2^31 floats. */
int mlp_layout_init(mlp_layout *L, const mlp_dims *d);

/* mlp_init_params - deterministic initial parameters from `seed` (uniform,
 * scaled by 1/sqrt(fan-in); biases zero) into p[L->n_params]. */
void mlp_init_params(const mlp_layout *L, uint64_t seed, float *p);

/* mlp_make_batch - samples `first_id`.. `first_id + b->n - 1` (modulo
 * `dataset`) of the synthetic data set, each input perturbed by noise drawn
 * from the rank's RNG stream at `*rng_ctr`, which advances by one per sample. */
void mlp_make_batch(const mlp_layout *L, uint64_t seed, uint64_t first_id, uint64_t dataset, int rank,
                    uint64_t *rng_ctr, mlp_batch *b);

/* mlp_grad - forward and backward over samples [lo, hi) of `b` with
 * parameters `p`, adding the gradient of (sum of squared errors * scale) to
 * g[L->n_params] in a fixed order. `work` holds mlp_work_floats(L) floats.
 * Returns the plain sum of squared errors (double). */
double mlp_grad(const mlp_layout *L, const float *p, const mlp_batch *b, int lo, int hi, float scale, float *g,
                float *work);

/* mlp_work_floats - scratch floats mlp_grad needs for one sample. */
size_t mlp_work_floats(const mlp_layout *L);

/* Adam hyper-parameters. */
typedef struct mlp_adam {
    float lr, beta1, beta2, eps;
} mlp_adam;

/* mlp_adam_step - one Adam update of p with gradient g and moments m, v (all
 * n floats); `t` is the 1-based update count. */
void mlp_adam_step(const mlp_adam *a, int64_t t, size_t n, float *p, float *m, float *v, const float *g);

#endif /* KERNELS_MLP_H */

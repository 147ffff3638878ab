/* tensor.c - the public functions that fingerprint buffers: tensors, chunked tensors, shards of logical tensors, scaled
 * low-precision tensors, state entries and fingerprints computed elsewhere. */
#include "include/lockstep.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "common/dtype.h"
#include "common/lsfp1.h"
#include "common/record.h"

/* What one call asks to record. */
typedef struct tensor_req {
    const char *fn; /* the public function, for errors */
    ls_level level;
    int state; /* an entry of the open state block */
    const char *name;
    const void *data;
    size_t nbytes;
    ls_dtype dtype;
    int ndim;
    const int64_t *shape;
    uint64_t chunk_bytes; /* 0: 1 MiB */
    int shard;
    uint64_t offset, total; /* with shard */
    int scaled;
    const void *scales;
    size_t scales_nbytes;
    ls_dtype scales_dtype;
    int scales_ndim;
    const int64_t *scales_shape;
} tensor_req;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* check_shape - 0 when ndim and shape are usable, else -1 with the error set. */
static int check_shape(const char *fn, const char *what, int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > LS_MAX_DIMS || (ndim > 0 && !shape)) {
        agent_set_error("%s: %s ndim %d is outside 0..%d or its shape is NULL", fn, what, ndim, LS_MAX_DIMS);
        return -1;
    }
    return 0;
}

/* check_req - the arguments' rules, before anything is hashed. */
static int check_req(const tensor_req *t, size_t *len)
{
    if (agent_check_name(t->name, len) < 0)
        return -1;
    if ((unsigned)t->level >= LS_LEVEL_COUNT) {
        agent_set_error("%s: %s: level %d is unknown", t->fn, t->name, (int)t->level);
        return -1;
    }
    if ((unsigned)t->dtype >= LS_DTYPE_COUNT) {
        agent_set_error("%s: %s: dtype %d is unknown", t->fn, t->name, (int)t->dtype);
        return -1;
    }
    if (check_shape(t->fn, "", t->ndim, t->shape) < 0)
        return -1;
    if (!t->data && t->nbytes) {
        agent_set_error("%s: %s: data is NULL but nbytes is %zu", t->fn, t->name, t->nbytes);
        return -1;
    }
    if (t->chunk_bytes) {
        uint64_t cb = t->chunk_bytes;
        if (cb % 8 || cb < REC_CHUNK_MIN || cb > REC_CHUNK_MAX) {
            agent_set_error("%s: %s: chunk size %llu is not a multiple of 8 between %d and %llu bytes", t->fn, t->name,
                            (unsigned long long)cb, REC_CHUNK_MIN, (unsigned long long)REC_CHUNK_MAX);
            return -1;
        }
        if ((t->nbytes + cb - 1) / cb > REC_MAX_CHUNKS) {
            agent_set_error("%s: %s: %zu bytes in chunks of %llu bytes are more than %u chunks; use larger chunks",
                            t->fn, t->name, t->nbytes, (unsigned long long)cb, REC_MAX_CHUNKS);
            return -1;
        }
    }
    if (t->shard) {
        uint64_t end = t->offset + t->nbytes;
        if (t->offset % 8) {
            agent_set_error("%s: %s: offset %llu is not a multiple of 8 bytes; shards must start on a 64-bit word "
                            "of the logical tensor",
                            t->fn, t->name, (unsigned long long)t->offset);
            return -1;
        }
        if (end < t->offset || end > t->total) {
            agent_set_error("%s: %s: the shard [%llu, %llu) does not fit in the tensor's total of %llu bytes", t->fn,
                            t->name, (unsigned long long)t->offset, (unsigned long long)end,
                            (unsigned long long)t->total);
            return -1;
        }
        if (end % 8 && end != t->total) {
            agent_set_error("%s: %s: the shard ends at byte %llu, inside a 64-bit word, before the tensor's end; "
                            "only the last shard may end off a multiple of 8",
                            t->fn, t->name, (unsigned long long)end);
            return -1;
        }
    }
    if (t->scaled) {
        if ((unsigned)t->scales_dtype >= LS_DTYPE_COUNT) {
            agent_set_error("%s: %s: scales dtype %d is unknown", t->fn, t->name, (int)t->scales_dtype);
            return -1;
        }
        if (check_shape(t->fn, "scales", t->scales_ndim, t->scales_shape) < 0)
            return -1;
        if (!t->scales && t->scales_nbytes) {
            agent_set_error("%s: %s: scales is NULL but scales_nbytes is %zu", t->fn, t->name, t->scales_nbytes);
            return -1;
        }
    }
    return 0;
}

/* record_req - hash and record what `t` asks for. Returns 0 when recorded or
 * filtered out, -1 with the error set. */
static int record_req(const tensor_req *t)
{
    size_t len;
    if (check_req(t, &len) < 0)
        return -1;
    /* Skip the hashing when the window filters the record out, or LOCKSTEP_IGNORE does. */
    int rc = agent_admits(t->level, t->state, t->name, len, t->fn);
    if (rc <= 0)
        return rc;

    rec_record r;
    rec_ext x;
    unsigned char ext[REC_EXT_ENCODED_MAX];
    memset(&r, 0, sizeof(r));
    memset(&x, 0, sizeof(x));
    r.name = t->name;
    r.name_len = (uint16_t)len;
    r.level = (uint8_t)t->level;
    r.dtype = (uint8_t)t->dtype;
    r.ndim = (uint8_t)t->ndim;
    for (int i = 0; i < t->ndim; i++)
        r.shape[i] = t->shape[i];
    r.nbytes = t->nbytes;

    uint64_t cb = t->chunk_bytes ? t->chunk_bytes : FP_CHUNK_BYTES;
    uint64_t offset = t->shard ? t->offset : 0;
    uint64_t first;
    size_t nchunks = fp_chunk_span(offset, t->nbytes, cb, &first);
    /* A shard carries partials wherever its tensor has more than one chunk, so that the whole's are known. */
    int want = t->shard ? (t->total + cb - 1) / cb > 1 : nchunks > 1;
    uint64_t *chunks = NULL;
    if (want && nchunks && nchunks <= REC_MAX_CHUNKS)
        chunks = malloc(nchunks * sizeof(uint64_t)); /* without them the record is still whole */
    uint64_t acc;
    if (chunks && !t->shard && cb == FP_CHUNK_BYTES) {
        r.fp = fp_lsfp1_chunks(t->data, t->nbytes, chunks);
    } else {
        acc = chunks ? fp_acc_chunked(t->data, t->nbytes, offset, cb, chunks) : fp_acc(t->data, t->nbytes, offset / 8);
        r.fp = fp_finish(acc, t->nbytes);
        if (t->shard) {
            x.has_shard = 1;
            x.shard_offset = t->offset;
            x.shard_total = t->total;
            x.shard_acc = acc;
        }
    }
    if (chunks) {
        r.chunks = chunks;
        r.n_chunks = (uint32_t)nchunks;
        x.chunk_bytes = cb;
    }
    size_t esz = dtype_size(t->dtype);
    int whole = !t->shard || (t->offset == 0 && t->nbytes == t->total);
    if (t->dtype != LS_BYTES && dtype_bits(t->dtype) >= 8 && t->nbytes == esz && esz <= 8 && whole) {
        memcpy(&r.value, t->data, esz); /* a scalar: keep its exact bits */
        r.flags |= REC_HAS_VALUE;
    }
    if (t->scaled) {
        x.has_scales = 1;
        x.scales_dtype = (uint8_t)t->scales_dtype;
        x.scales_ndim = (uint8_t)t->scales_ndim;
        for (int i = 0; i < t->scales_ndim; i++)
            x.scales_shape[i] = t->scales_shape[i];
        x.scales_nbytes = t->scales_nbytes;
        x.scales_fp = fp_lsfp1(t->scales, t->scales_nbytes);
    }
    r.ext_len = (uint16_t)rec_ext_encode(&x, ext);
    r.ext = r.ext_len ? ext : NULL;
    r.t_ns = now_ns();
    rc = agent_record(&r, t->state, t->fn); /* the state may have changed meanwhile */
    free(chunks);
    return rc;
}

int ls_tensor_at(ls_level level, const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, int ndim,
                 const int64_t *shape)
{
    tensor_req t = {.fn = "ls_tensor",
                    .level = level,
                    .name = name,
                    .data = host_data,
                    .nbytes = nbytes,
                    .dtype = dtype,
                    .ndim = ndim,
                    .shape = shape};
    return record_req(&t);
}

int ls_tensor(const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, int ndim, const int64_t *shape)
{
    return ls_tensor_at(LS_LEVEL_MODULE, name, host_data, nbytes, dtype, ndim, shape);
}

int ls_tensor_chunked(ls_level level, const char *name, const void *host_data, size_t nbytes, size_t chunk_bytes,
                      ls_dtype dtype, int ndim, const int64_t *shape)
{
    if (!chunk_bytes) {
        agent_set_error("ls_tensor_chunked: %s: chunk size 0; pass a multiple of 8 from %d bytes", name ? name : "?",
                        REC_CHUNK_MIN);
        return -1;
    }
    tensor_req t = {.fn = "ls_tensor_chunked",
                    .level = level,
                    .name = name,
                    .data = host_data,
                    .nbytes = nbytes,
                    .dtype = dtype,
                    .ndim = ndim,
                    .shape = shape,
                    .chunk_bytes = chunk_bytes};
    return record_req(&t);
}

int ls_tensor_shard(const char *name, const void *host_data, size_t nbytes, uint64_t offset, uint64_t total_nbytes,
                    ls_dtype dtype, int ndim, const int64_t *full_shape)
{
    tensor_req t = {.fn = "ls_tensor_shard",
                    .level = LS_LEVEL_MODULE,
                    .name = name,
                    .data = host_data,
                    .nbytes = nbytes,
                    .dtype = dtype,
                    .ndim = ndim,
                    .shape = full_shape,
                    .shard = 1,
                    .offset = offset,
                    .total = total_nbytes};
    return record_req(&t);
}

int ls_tensor_scaled(const char *name, const void *values, size_t values_nbytes, ls_dtype dtype, int ndim,
                     const int64_t *shape, const void *scales, size_t scales_nbytes, ls_dtype scales_dtype,
                     int scales_ndim, const int64_t *scales_shape)
{
    tensor_req t = {.fn = "ls_tensor_scaled",
                    .level = LS_LEVEL_MODULE,
                    .name = name,
                    .data = values,
                    .nbytes = values_nbytes,
                    .dtype = dtype,
                    .ndim = ndim,
                    .shape = shape,
                    .scaled = 1,
                    .scales = scales,
                    .scales_nbytes = scales_nbytes,
                    .scales_dtype = scales_dtype,
                    .scales_ndim = scales_ndim,
                    .scales_shape = scales_shape};
    return record_req(&t);
}

int ls_state(const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, int ndim, const int64_t *shape)
{
    tensor_req t = {.fn = "ls_state",
                    .level = LS_LEVEL_METRIC,
                    .state = 1,
                    .name = name,
                    .data = host_data,
                    .nbytes = nbytes,
                    .dtype = dtype,
                    .ndim = ndim,
                    .shape = shape};
    return record_req(&t);
}

/* record_given - a record whose fingerprint was computed elsewhere (ls_record_fp_at, with its call site, is in
 * agent/api.c). */
static int record_given(const char *fn, ls_level level, int state, const char *name, uint64_t fp, uint64_t nbytes,
                        ls_dtype dtype, int ndim, const int64_t *shape, int n_inputs, const uint64_t *inputs)
{
    size_t len;
    if (agent_check_name(name, &len) < 0)
        return -1;
    if ((unsigned)level >= LS_LEVEL_COUNT || (unsigned)dtype >= LS_DTYPE_COUNT) {
        agent_set_error("%s: %s: level %d or dtype %d is unknown", fn, name, (int)level, (int)dtype);
        return -1;
    }
    if (check_shape(fn, "", ndim, shape) < 0)
        return -1;
    if (n_inputs < 0 || n_inputs > LS_MAX_INPUTS || (n_inputs > 0 && !inputs)) {
        agent_set_error("%s: n_inputs %d is outside 0..%d or inputs is NULL", fn, n_inputs, LS_MAX_INPUTS);
        return -1;
    }
    rec_record r;
    memset(&r, 0, sizeof(r));
    r.name = name;
    r.name_len = (uint16_t)len;
    r.level = (uint8_t)level;
    r.dtype = (uint8_t)dtype;
    r.ndim = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++)
        r.shape[i] = shape[i];
    r.nbytes = nbytes;
    r.fp = fp;
    r.n_inputs = (uint16_t)n_inputs;
    r.inputs = inputs;
    r.t_ns = now_ns();
    return agent_record(&r, state, fn);
}

int ls_state_fp(const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim, const int64_t *shape)
{
    return record_given("ls_state_fp", LS_LEVEL_METRIC, 1, name, fp, nbytes, dtype, ndim, shape, 0, NULL);
}

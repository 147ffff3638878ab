/* record_fp.c - the public ls_record_fp* functions: fingerprints computed by the caller (the MPI and NCCL wrappers,
 * bindings), recorded with a call site, a communicator and, for outputs every member holds alike, a consensus place. */
#include "include/lockstep.h"

#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/callsite.h"
#include "common/record.h"

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* site_from - a caller's own site into `out` (strings borrowed, cut to the framing's limits). */
static void site_from(const ls_site *s, rec_site *out)
{
    memset(out, 0, sizeof(*out));
    out->offset = s->offset;
    out->function_offset = s->function_offset;
    out->module = s->module;
    out->module_len = (uint16_t)(s->module ? strnlen(s->module, REC_SITE_MODULE_MAX) : 0);
    out->function = s->function;
    out->function_len = (uint16_t)(s->function ? strnlen(s->function, REC_SITE_NAME_MAX) : 0);
    out->caller = s->caller;
    out->caller_len = (uint16_t)(s->caller ? strnlen(s->caller, REC_SITE_NAME_MAX) : 0);
}

/* comm_ext - the comm extension field of `comm` into `x` and, encoded, into `ext` (REC_EXT_ENCODED_MAX bytes); its
 * length, 0 for none. */
static size_t comm_ext(const ls_comm *comm, rec_ext *x, unsigned char *ext)
{
    memset(x, 0, sizeof(*x));
    if (!comm || comm->size <= 0)
        return 0;
    x->has_comm = 1;
    x->comm_size = (uint32_t)comm->size;
    if (comm->world_ranks && comm->size <= REC_COMM_LIST_MAX) {
        x->comm_nlisted = (uint32_t)comm->size;
        for (int i = 0; i < comm->size; i++)
            x->comm_ranks[i] = (uint32_t)comm->world_ranks[i];
        x->comm_id = rec_comm_id(x->comm_ranks, x->comm_nlisted);
    } else if (comm->world_ranks) {
        uint64_t h = 0; /* the id alone, over every rank */
        for (int i = 0; i < comm->size; i++) {
            uint32_t w = (uint32_t)comm->world_ranks[i];
            h = i ? rec_comm_id(&w, 1) ^ (h * 0x9e3779b97f4a7c15ULL) : rec_comm_id(&w, 1);
        }
        x->comm_id = h ^ (uint64_t)comm->size;
    }
    return rec_ext_encode(x, ext);
}

/* record_fp - ls_record_fp_at with an optional communicator, whose output is the same on all its members when
 * `cons_key` is not NULL (the group's consensus key: the communicator's world ranks, when listed, name its members).
 */
static int record_fp(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                     const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                     const ls_site *site, const ls_comm *comm, const uint64_t *cons_key)
{
    size_t len;
    if (agent_check_name(name, &len) < 0)
        return -1;
    if ((unsigned)level >= LS_LEVEL_COUNT || (unsigned)dtype >= LS_DTYPE_COUNT) {
        agent_set_error("%s: level %d or dtype %d is unknown", name, (int)level, (int)dtype);
        return -1;
    }
    if (ndim < 0 || ndim > LS_MAX_DIMS || (ndim > 0 && !shape)) {
        agent_set_error("ndim %d is outside 0..%d or shape is NULL", ndim, LS_MAX_DIMS);
        return -1;
    }
    if (n_inputs < 0 || n_inputs > LS_MAX_INPUTS || (n_inputs > 0 && !inputs)) {
        agent_set_error("n_inputs %d is outside 0..%d or inputs is NULL", n_inputs, LS_MAX_INPUTS);
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
    r.t_ns = wall_ns();
    unsigned char ext[REC_EXT_ENCODED_MAX];
    rec_ext x;
    r.ext_len = (uint16_t)comm_ext(comm, &x, ext);
    r.ext = r.ext_len ? ext : NULL;
    agent_cons cons = {.key = cons_key ? *cons_key : 0, .size = comm && comm->size > 0 ? (uint32_t)comm->size : 1,
                       .x = &x, .ext = ext};
    if (cons_key && comm && comm->world_ranks && comm->size > 0 && comm->size <= REC_COMM_LIST_MAX) {
        cons.ranks = x.comm_ranks; /* comm_ext put them there */
        cons.n_ranks = (size_t)comm->size;
    }
    cs_entry *e = NULL;
    if (site)
        site_from(site, &r.site);
    else if (return_address && (e = callsite_get(return_address)))
        r.site = e->site;

    return agent_record_cons(&r, cons_key ? &cons : NULL, e, "ls_record_fp");
}

int ls_record_fp_at(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                    const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                    const ls_site *site)
{
    return record_fp(level, name, fp, nbytes, dtype, ndim, shape, n_inputs, inputs, return_address, site, NULL, NULL);
}

int ls_record_fp_comm(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                      const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                      const ls_comm *comm)
{
    return record_fp(level, name, fp, nbytes, dtype, ndim, shape, n_inputs, inputs, return_address, NULL, comm, NULL);
}

int ls_record_fp_consensus(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                           const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                           const ls_comm *comm, uint64_t key)
{
    return record_fp(level, name, fp, nbytes, dtype, ndim, shape, n_inputs, inputs, return_address, NULL, comm, &key);
}

int ls_record_fp(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                 const int64_t *shape, int n_inputs, const uint64_t *inputs)
{
    return ls_record_fp_at(level, name, fp, nbytes, dtype, ndim, shape, n_inputs, inputs, NULL, NULL);
}


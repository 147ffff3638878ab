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

/* A record as record_fp and ls_fill make it, with its extension buffers and consensus request. */
typedef struct built {
    rec_record r;
    unsigned char ext[REC_EXT_ENCODED_MAX];
    rec_ext x;
    agent_cons cons;
    cs_entry *e;
} built;

/* build - check the arguments and fill `b`: the record (its site from `site`, else from `return_address`), its comm
 * field and a consensus request for `cons_key` (NULL: none). 0, or -1 with the error set. */
static int build(built *b, ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
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
    rec_record *r = &b->r;
    memset(r, 0, sizeof(*r));
    r->name = name;
    r->name_len = (uint16_t)len;
    r->level = (uint8_t)level;
    r->dtype = (uint8_t)dtype;
    r->ndim = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++)
        r->shape[i] = shape[i];
    r->nbytes = nbytes;
    r->fp = fp;
    r->n_inputs = (uint16_t)n_inputs;
    r->inputs = inputs;
    r->t_ns = wall_ns();
    r->ext_len = (uint16_t)comm_ext(comm, &b->x, b->ext);
    r->ext = r->ext_len ? b->ext : NULL;
    b->cons = (agent_cons){.key = cons_key ? *cons_key : 0,
                           .size = comm && comm->size > 0 ? (uint32_t)comm->size : 1,
                           .x = &b->x,
                           .ext = b->ext};
    if (cons_key && comm && comm->world_ranks && comm->size > 0 && comm->size <= REC_COMM_LIST_MAX) {
        b->cons.ranks = b->x.comm_ranks; /* comm_ext put them there */
        b->cons.n_ranks = (size_t)comm->size;
    }
    b->e = NULL;
    if (site)
        site_from(site, &r->site);
    else if (return_address && (b->e = callsite_get(return_address)))
        r->site = b->e->site;
    return 0;
}

/* record_fp - ls_record_fp_at with an optional communicator, whose output is the same on all its members when
 * `cons_key` is not NULL (the group's consensus key: the communicator's world ranks, when listed, name its members).
 */
static int record_fp(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
                     const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address,
                     const ls_site *site, const ls_comm *comm, const uint64_t *cons_key)
{
    built b;
    if (build(&b, level, name, fp, nbytes, dtype, ndim, shape, n_inputs, inputs, return_address, site, comm, cons_key) <
        0)
        return -1;
    return agent_record_cons(&b.r, cons_key ? &b.cons : NULL, b.e, "ls_record_fp");
}

_Static_assert(sizeof(agent_ticket) <= sizeof(ls_ticket), "ls_ticket must hold an agent_ticket");

int ls_reserve(ls_level level, const char *name, const void *return_address, const ls_comm *comm, const uint64_t *key,
               ls_ticket *ticket)
{
    agent_ticket *t = (agent_ticket *)ticket->opaque;
    memset(ticket, 0, sizeof(*ticket));
    built b;
    if (build(&b, level, name, 0, 0, LS_BYTES, 0, NULL, 0, NULL, return_address, NULL, comm, key) < 0)
        return -1;
    return agent_reserve(name, b.r.name_len, level, rec_has_site(&b.r) ? &b.r.site : NULL, b.e, key ? &b.cons : NULL, t,
                         "ls_reserve");
}

int ls_fill(ls_ticket *ticket, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int ndim,
            const int64_t *shape, int n_inputs, const uint64_t *inputs, const void *return_address, const ls_comm *comm)
{
    agent_ticket *t = (agent_ticket *)ticket->opaque;
    if (!t->live)
        return 0;
    built b;
    if (build(&b, (ls_level)t->level, name, fp, nbytes, dtype, ndim, shape, n_inputs, inputs, return_address, NULL,
              comm, NULL) < 0) {
        agent_drop(t);
        return -1;
    }
    return agent_fill(t, &b.r, &b.cons);
}

void ls_drop(ls_ticket *ticket)
{
    agent_drop((agent_ticket *)ticket->opaque);
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

/* consensus.c - ls_replica: tensors every rank of a group must hold bit-identical, recorded with their consensus
 * place (common/consensus.h) so that lockstepd compares the copies within the run. */
#include "include/lockstep.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "common/consensus.h"
#include "common/dtype.h"
#include "common/lsfp1.h"
#include "common/record.h"

/* The key of every rank of the job, computed once (the rank count does not change within a process). */
static pthread_once_t world_once = PTHREAD_ONCE_INIT;
static uint64_t world_key;
static uint32_t world_size;

static void world_setup(void)
{
    long n = agent_env_ranks();
    uint32_t *ranks = malloc((size_t)n * sizeof(uint32_t));
    if (!ranks)
        return; /* world_size stays 0: ls_replica says it is out of memory */
    for (long i = 0; i < n; i++)
        ranks[i] = (uint32_t)i;
    world_key = cons_key(ranks, (size_t)n);
    world_size = (uint32_t)n;
    free(ranks);
}

/* group_key - the key and members of `group` (NULL: the world) into `c`, the listed ranks into `buf`
 * (REC_COMM_LIST_MAX words). Returns 0, or -1 with the error set when the group is not a list of world ranks. */
static int group_key(const ls_comm *group, agent_cons *c, uint32_t *buf)
{
    if (!group) {
        pthread_once(&world_once, world_setup);
        if (!world_size) {
            agent_set_error("ls_replica: out of memory listing the job's ranks");
            return -1;
        }
        c->key = world_key;
        c->size = world_size;
        if (world_size <= REC_COMM_LIST_MAX) {
            for (uint32_t i = 0; i < world_size; i++)
                buf[i] = i;
            c->ranks = buf;
            c->n_ranks = world_size;
        }
        return 0;
    }
    if (group->size <= 0 || !group->world_ranks) {
        agent_set_error("ls_replica: the group lists no world ranks (size %d); pass NULL for every rank of the job",
                        group->size);
        return -1;
    }
    uint32_t *ranks = group->size <= REC_COMM_LIST_MAX ? buf : malloc((size_t)group->size * sizeof(uint32_t));
    if (!ranks) {
        agent_set_error("ls_replica: out of memory listing a group of %d ranks", group->size);
        return -1;
    }
    for (int i = 0; i < group->size; i++) {
        if (group->world_ranks[i] < 0) {
            agent_set_error("ls_replica: world rank %d of the group is negative", group->world_ranks[i]);
            if (ranks != buf)
                free(ranks);
            return -1;
        }
        ranks[i] = (uint32_t)group->world_ranks[i];
    }
    c->key = cons_key(ranks, (size_t)group->size);
    c->size = (uint32_t)group->size;
    if (ranks == buf) {
        c->ranks = buf;
        c->n_ranks = (size_t)group->size;
    } else {
        free(ranks);
    }
    return 0;
}

/* replica - the body of ls_replica (`host_data` hashed here, once admitted) and ls_replica_fp (`fp` given). */
static int replica(const char *who, const char *name, const void *host_data, const uint64_t *fp, size_t nbytes,
                   ls_dtype dtype, const ls_comm *group)
{
    size_t len;
    if (agent_check_name(name, &len) < 0)
        return -1;
    if ((unsigned)dtype >= LS_DTYPE_COUNT) {
        agent_set_error("%s: %s: dtype %d is unknown", who, name, (int)dtype);
        return -1;
    }
    /* Hash only what will be kept. */
    int admit = agent_admits(LS_LEVEL_COLLECTIVE, 0, name, len, who);
    if (admit <= 0)
        return admit < 0 ? -1 : 0;
    uint32_t buf[REC_COMM_LIST_MAX];
    agent_cons c;
    memset(&c, 0, sizeof(c));
    if (group_key(group, &c, buf) < 0)
        return -1;
    rec_ext x;
    memset(&x, 0, sizeof(x));
    unsigned char ext[REC_EXT_ENCODED_MAX];
    c.x = &x;
    c.ext = ext;

    rec_record r;
    memset(&r, 0, sizeof(r));
    r.name = name;
    r.name_len = (uint16_t)len;
    r.level = LS_LEVEL_COLLECTIVE;
    r.dtype = (uint8_t)dtype;
    unsigned bits = dtype_bits(dtype);
    r.ndim = 1;
    r.shape[0] = (int64_t)(bits ? nbytes * 8 / bits : nbytes); /* elements */
    r.nbytes = nbytes;
    r.fp = fp ? *fp : fp_lsfp1(host_data, nbytes);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r.t_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return agent_record_cons(&r, &c, NULL, who);
}

int ls_replica(const char *name, const void *host_data, size_t nbytes, ls_dtype dtype, const ls_comm *group)
{
    if (!host_data && nbytes) {
        agent_set_error("ls_replica: %s: host_data is NULL", name ? name : "(null)");
        return -1;
    }
    return replica("ls_replica", name, host_data, NULL, nbytes, dtype, group);
}

int ls_replica_fp(const char *name, uint64_t fp, size_t nbytes, ls_dtype dtype, const ls_comm *group)
{
    return replica("ls_replica_fp", name, NULL, &fp, nbytes, dtype, group);
}

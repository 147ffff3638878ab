/* cons_batch.c - a batch's consensus digests (REC_CONSENSUS_DIGEST) checked as they are decoded. */
#include "server/store/cons_batch.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/consensus.h"
#include "server/core/limits.h"
#include "server/core/xalloc.h"

/* refuse - fill `e` for digest `i` of the stream; -1. */
static int refuse(srv_error *e, size_t i, const char *why)
{
    char detail[256];
    snprintf(detail, sizeof(detail), "record %zu: a consensus digest %s", i, why);
    return srv_error_set(e, "bad consensus digest", detail,
                         "a consensus digest names its group in a comm field (common/record.h) and folds 1 to 64 "
                         "records of its window");
}

/* listed_ok - the listed ranks are sorted, each once, their cons_key is `key`, and `rank` is one of them. */
static int listed_ok(const rec_ext *x, uint64_t key, uint32_t rank, const char **why)
{
    int member = 0;
    for (uint32_t k = 0; k < x->comm_nlisted; k++) {
        if (k && x->comm_ranks[k] <= x->comm_ranks[k - 1]) {
            *why = "lists its group's world ranks out of order or twice";
            return 0;
        }
        member |= x->comm_ranks[k] == rank;
    }
    if (cons_key(x->comm_ranks, x->comm_nlisted) != key) {
        *why = "has a key that is not its listed ranks' key";
        return 0;
    }
    if (!member) {
        *why = "comes from a rank outside its group";
        return 0;
    }
    return 1;
}

int cons_batch_add(srv_cons_digest **d, size_t *n, size_t *cap, const rec_record *r, uint32_t rank, int held, size_t i,
                   srv_error *e)
{
    rec_ext x;
    const char *why = NULL;
    if (held)
        return refuse(e, i, "in a batch of held records (a batch sent on demand carries the held records only)");
    rec_ext_of(r, &x);
    if (r->step < -REC_STEP_LIMIT || r->step > REC_STEP_LIMIT)
        return refuse(e, i, "has a step out of range");
    if (!x.has_comm)
        return refuse(e, i, "has no comm field");
    if (x.comm_size < 1 || x.comm_size > CONS_MEMBERS_MAX)
        return refuse(e, i, "names a group of 0 or more than 4194304 members");
    if (x.comm_id != r->value)
        return refuse(e, i, "has a comm id other than its key");
    if (r->nbytes < 1 || r->nbytes > CONS_WINDOW)
        return refuse(e, i, "folds no records, or more than a window holds");
    if (x.comm_size <= REC_COMM_LIST_MAX ? x.comm_nlisted != x.comm_size : x.comm_nlisted != 0)
        return refuse(e, i, "does not list exactly its group's ranks (listed when at most 64)");
    if (x.comm_nlisted && !listed_ok(&x, r->value, rank, &why))
        return refuse(e, i, why);
    if (x.comm_nlisted == 0 && x.comm_size <= REC_COMM_LIST_MAX)
        return refuse(e, i, "lists no ranks");
    for (size_t k = 0; k < *n; k++)
        if ((*d)[k].step == r->step && (*d)[k].key == r->value && (*d)[k].win == r->occurrence)
            return 0; /* a repeat: the first counts, as in the database */
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *d = xrealloc(*d, *cap * sizeof(**d));
    }
    srv_cons_digest *c = &(*d)[(*n)++];
    *c = (srv_cons_digest){.step = r->step,
                           .key = r->value,
                           .win = r->occurrence,
                           .n = (uint32_t)r->nbytes,
                           .fold = r->fp,
                           .size = x.comm_size,
                           .n_listed = x.comm_nlisted};
    memcpy(c->ranks, x.comm_ranks, x.comm_nlisted * sizeof(uint32_t));
    return 0;
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

void cons_pack(unsigned char *out, const srv_cons_digest *d)
{
    put_be(out, d->key, 8);
    put_be(out + 8, d->win, 4);
    put_be(out + 12, d->n, 4);
    put_be(out + 16, d->fold, 8);
}

void cons_unpack(const unsigned char *p, uint64_t *key, uint32_t *win, uint32_t *n, uint64_t *fold)
{
    *key = get_be(p, 8);
    *win = (uint32_t)get_be(p + 8, 4);
    *n = (uint32_t)get_be(p + 12, 4);
    *fold = get_be(p + 16, 8);
}

#define KNOWN_SLOTS 65536 /* (run, group) pairs remembered; a power of two */

static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int64_t run; /* 0: empty (run keys start at 1) */
    uint64_t key;
} known[KNOWN_SLOTS];
static size_t n_known;

static size_t known_slot(int64_t run, uint64_t key)
{
    uint64_t h = ((uint64_t)run * 0x9E3779B97F4A7C15ULL) ^ (key * 0xC2B2AE3D27D4EB4FULL);
    return (size_t)((h ^ (h >> 31)) & (KNOWN_SLOTS - 1));
}

int cons_comms_known(int64_t run_key, uint64_t key)
{
    int found = 0;
    pthread_mutex_lock(&known_lock);
    for (size_t s = known_slot(run_key, key); known[s].run; s = (s + 1) & (KNOWN_SLOTS - 1))
        if (known[s].run == run_key && known[s].key == key) {
            found = 1;
            break;
        }
    pthread_mutex_unlock(&known_lock);
    return found;
}

void cons_comms_stored(int64_t run_key, const srv_cons_digest *d, size_t n)
{
    if (run_key <= 0)
        return;
    pthread_mutex_lock(&known_lock);
    for (size_t i = 0; i < n; i++) {
        if (n_known >= KNOWN_SLOTS / 2) { /* start over: the next batch of each group sends its ranks again */
            memset(known, 0, sizeof(known));
            n_known = 0;
        }
        size_t s = known_slot(run_key, d[i].key);
        while (known[s].run && !(known[s].run == run_key && known[s].key == d[i].key))
            s = (s + 1) & (KNOWN_SLOTS - 1);
        if (!known[s].run) {
            known[s].run = run_key;
            known[s].key = d[i].key;
            n_known++;
        }
    }
    pthread_mutex_unlock(&known_lock);
}

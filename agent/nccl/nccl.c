/* nccl.c - liblockstep_nccl.so: NCCL wrappers that fingerprint device buffers on the collective's own stream.
 *
 * Per call: the input is hashed (kernels/lsfp1.cu, lsk_lsfp1_async) into a device slot before the collective
 * and the output after it, both on the caller's stream; the two words are copied to a pinned host ring and an
 * event is recorded. Nothing waits: the records are made later, in call order, when their events have
 * completed (at the next wrapped call, at ncclCommDestroy, at exit). Inside ncclGroupStart/End the output
 * hashes are enqueued at the outermost ncclGroupEnd, when the collectives are really launched.
 *
 * Consensus: an allreduce with a built-in operation, an allgather and a broadcast hand every member the same bytes,
 * so their records carry a consensus place (ls_record_fp_consensus). NCCL does not say which world ranks a
 * communicator spans; its key is what every member shares instead: a hash of the ncclUniqueId passed to
 * ncclCommInitRank and of the rank count (a split communicator: its parent's key, the color and the new count),
 * kept per communicator from its creation to ncclCommDestroy. Members are then not listed.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "include/lockstep.h"
#include "agent/mode.h"
#include "kernels/lsfp1_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define RING 4096  /* pending records; a full ring waits for its oldest entry */
#define WORDS 4    /* per slot: input fp + scratch, output fp + scratch */
#define DEFER 1024 /* output hashes waiting for the group's end */

struct pend {
    char name[40];
    int cons;        /* the output is the same on every member: a consensus place under `key` */
    uint64_t key;    /* the communicator's consensus key (comm_key) */
    const void *ret; /* where the application called the wrapper: the record's call site */
    ls_level level;
    ls_dtype dtype;
    int has_in, has_out;
    int armed; /* 1: its words and event are enqueued; 0: not yet (a group's call before ncclGroupEnd); -1: failed */
    int64_t shape[2];
    uint64_t nbytes;
    cudaEvent_t ev;
    int reserved; /* `ticket` holds the record's step, occurrence and place, taken at the launch (ls_reserve) */
    ls_ticket ticket;
};

struct deferred {
    unsigned slot;
    const void *buf;
    size_t nbytes;
    cudaStream_t stream;
};

#define KEYS 256 /* communicators whose consensus key is kept; one created past them has none */

static struct {
    pthread_mutex_t mu;
    struct {
        ncclComm_t comm;
        uint64_t key;
        uint64_t calls; /* consensus collectives launched on it (the consensus mode's sampling) */
    } keys[KEYS];       /* live communicators and their keys (comm NULL: a free entry) */
    int state;          /* 0 untried, 1 ready, -1 off */
    uint64_t *d_ring, *h_ring;
    struct pend p[RING];
    unsigned head, count; /* FIFO of pending slots */
    int group_depth;
    struct deferred d[DEFER];
    unsigned n_deferred;
} N = {.mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP}; /* recursive: ls_reserve may call step_drain */

static void warn(const char *what, cudaError_t e)
{
    char msg[300];
    int n = snprintf(msg, sizeof(msg), "lockstep: NCCL fingerprints off: %s: %s\n", what, cudaGetErrorString(e));
    ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
    (void)w;
}

static void *real(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        if (!f) {
            char msg[200];
            int n = snprintf(msg, sizeof(msg), "lockstep: %s not found: liblockstep_nccl.so needs libnccl\n", name);
            ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
            (void)w;
            abort(); /* the program called an NCCL function, so NCCL must be there */
        }
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}
#define REAL(ret, name, ...)                                                                                           \
    static void *slot_##name;                                                                                          \
    ret (*real_##name)(__VA_ARGS__) = (ret(*)(__VA_ARGS__))real(&slot_##name, #name)

static void drain_locked(int wait);

static void at_exit(void)
{
    pthread_mutex_lock(&N.mu);
    drain_locked(1);
    pthread_mutex_unlock(&N.mu);
}

/* step_drain - before the agent changes step (ls_on_step_change): wait for the launched collectives and make their
 * records, so that each lands in the step that launched it. */
static void step_drain(void)
{
    pthread_mutex_lock(&N.mu);
    if (N.state > 0)
        drain_locked(1);
    pthread_mutex_unlock(&N.mu);
}

/* ready_locked - allocate the rings once. Returns 1 when fingerprints can be taken. */
static int ready_locked(void)
{
    if (N.state)
        return N.state > 0;
    cudaError_t e = cudaMalloc((void **)&N.d_ring, sizeof(uint64_t) * WORDS * RING);
    if (e == cudaSuccess)
        e = cudaHostAlloc((void **)&N.h_ring, sizeof(uint64_t) * WORDS * RING, cudaHostAllocDefault);
    for (unsigned i = 0; e == cudaSuccess && i < RING; i++)
        e = cudaEventCreateWithFlags(&N.p[i].ev, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        warn("cannot allocate the fingerprint ring", e);
        N.state = -1;
        return 0;
    }
    /* Make the agent start streaming now (ls_init on an active agent only does
     * that), so that its exit handler is registered before ours and ours, which
     * makes the last records, runs first. */
    ls_init();
    atexit(at_exit);
    ls_on_step_change(step_drain);
    N.state = 1;
    return 1;
}

static ls_dtype dtype_of(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: return LS_I8;
    case ncclUint8: return LS_U8;
    case ncclInt32: return LS_I32;
    case ncclUint32: return LS_U32;
    case ncclInt64: return LS_I64;
    case ncclUint64: return LS_U64;
    case ncclFloat16: return LS_F16;
    case ncclFloat32: return LS_F32;
    case ncclFloat64: return LS_F64;
    case ncclBfloat16: return LS_BF16;
#if NCCL_VERSION_CODE >= 22400
    case ncclFloat8e4m3: return LS_F8E4M3;
    case ncclFloat8e5m2: return LS_F8E5M2;
#endif
    default: return LS_BYTES;
    }
}

static size_t dtype_bytes(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 1;
    }
}

static int comm_count(ncclComm_t comm)
{
    REAL(ncclResult_t, ncclCommCount, const ncclComm_t, int *);
    int n = 0;
    real_ncclCommCount(comm, &n);
    return n;
}

/* consensus_places - 1 when LOCKSTEP_NCCL_CONSENSUS=1 asks for consensus places on NCCL records. A record's step,
 * occurrence and place are taken at the launch (ls_reserve) and it is made when its event completes; before a step
 * changes the agent waits for the launched ones (step_drain). Off by default until ranks on two GPUs have been
 * compared: one H200 was lent so far. */
static int consensus_places(void)
{
    static int on = -1;
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("LOCKSTEP_NCCL_CONSENSUS");
        v = e && strcmp(e, "1") == 0;
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* key_mix - FNV-1a of `n` bytes folded into `h`. */
static uint64_t key_mix(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
    return h;
}

/* key_set_locked - remember `key` for `comm` (nothing when the table is full: its collectives get no place). */
static void key_set_locked(ncclComm_t comm, uint64_t key)
{
    for (int i = 0; i < KEYS; i++)
        if (!N.keys[i].comm || N.keys[i].comm == comm) {
            N.keys[i].comm = comm;
            N.keys[i].key = key;
            return;
        }
}

/* comm_key_locked - the consensus key of `comm` into *key; 0, or -1 when it was created before this library saw it. */
static int comm_key_locked(ncclComm_t comm, uint64_t *key)
{
    for (int i = 0; i < KEYS; i++)
        if (comm && N.keys[i].comm == comm)
            return *key = N.keys[i].key, 0;
    return -1;
}

/* sampled_locked - the consensus mode's LOCKSTEP_CONSENSUS_EVERY for the next consensus collective on `comm`, counted
 * on the communicator (NCCL requires every member to launch its collectives in one order): mode_sampled. */
static int sampled_locked(ncclComm_t comm)
{
    unsigned every = mode_consensus_every_env();
    if (every <= 1)
        return 1;
    for (int i = 0; i < KEYS; i++)
        if (comm && N.keys[i].comm == comm)
            return mode_sampled(N.keys[i].calls++, every);
    return 1;
}

/* emit - make the reserved record of slot i (its event has completed); drop - give it up (its hashing failed). */
static void emit(unsigned i)
{
    struct pend *p = &N.p[i];
    uint64_t *w = N.h_ring + (size_t)i * WORDS;
    ls_comm c = {(int)p->shape[0], NULL};
    if (p->reserved)
        ls_fill(&p->ticket, p->name, p->has_out ? w[2] : w[0], p->nbytes, p->dtype, 2, p->shape,
                p->has_in && p->has_out, &w[0], p->ret, p->cons ? &c : NULL);
    p->reserved = 0;
}

static void drop(unsigned i)
{
    if (N.p[i].reserved)
        ls_drop(&N.p[i].ticket);
    N.p[i].reserved = 0;
}

/* drain_locked - make the records whose work is done, oldest first; with
 * `wait`, wait for all of them. A slot whose event is not recorded yet (a
 * call inside a group that has not ended) stops the drain: an event never
 * recorded, or recorded for the slot's previous use, reads as complete. */
static void drain_locked(int wait)
{
    while (N.count) {
        unsigned i = N.head;
        if (N.p[i].armed == 0)
            return;
        cudaError_t e = N.p[i].armed < 0 ? cudaErrorInvalidResourceHandle
                        : wait           ? cudaEventSynchronize(N.p[i].ev)
                                         : cudaEventQuery(N.p[i].ev);
        if (e == cudaErrorNotReady)
            return;
        if (e == cudaSuccess)
            emit(i);
        else
            drop(i);
        N.head = (N.head + 1) % RING;
        N.count--;
    }
}

/* begin_locked - claim a slot for a call and hash its input (when `in` is not
 * NULL). Returns the slot, or -1 when fingerprints are off. */
static int begin_locked(const char *name, const void *ret, ls_level level, ncclDataType_t t, ncclComm_t comm, int cons,
                        size_t out_count, const void *in, size_t in_bytes, cudaStream_t stream)
{
    int nranks = comm_count(comm);
    if (mode_consensus_env())
        in = NULL; /* consensus compares outputs only */
    if (!ready_locked())
        return -1;
    drain_locked(0);
    if (N.count == RING) { /* full: wait for the oldest, unless a group still holds it */
        if (N.p[N.head].armed == 0) {
            static int said;
            if (!said++) {
                static const char msg[] = "lockstep: an NCCL group of more than 4096 calls: the calls past that "
                                          "are not fingerprinted\n";
                ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
                (void)w;
            }
            return -1;
        }
        if (N.p[N.head].armed > 0)
            cudaEventSynchronize(N.p[N.head].ev);
        drain_locked(0);
    }
    uint64_t key = 0;
    cons = cons && consensus_places() && comm_key_locked(comm, &key) == 0;
    if (mode_consensus_env() && cons && !sampled_locked(comm))
        return -1;
    /* The record's step, occurrence and place now, in launch order (ls_reserve may first complete what is pending,
     * for a step it opens: the slot is chosen after it). */
    ls_comm c = {nranks, NULL};
    ls_ticket ticket;
    if (ls_reserve(level, name, ret, cons ? &c : NULL, cons ? &key : NULL, &ticket) != 1)
        return -1;
    unsigned i = (N.head + N.count) % RING;
    struct pend *p = &N.p[i];
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->ret = ret;
    p->reserved = 1;
    p->ticket = ticket;
    p->cons = cons;
    p->key = key;
    p->level = level;
    p->dtype = dtype_of(t);
    p->shape[0] = nranks;
    p->shape[1] = (int64_t)out_count;
    p->nbytes = out_count * dtype_bytes(t);
    p->has_in = in != NULL;
    p->has_out = 0;
    p->armed = 0;
    uint64_t *d = N.d_ring + (size_t)i * WORDS;
    if (in) {
        cudaError_t e = lsk_lsfp1_async(in, in_bytes, 0, d, stream);
        if (e != cudaSuccess) {
            warn("hashing an input", e);
            drop(i);
            N.state = -1;
            return -1;
        }
    }
    N.count++;
    return (int)i;
}

/* finish_locked - hash the output of slot i (when `out` is not NULL), copy the
 * words to the pinned ring and record the event, all on `stream`. */
static void finish_locked(unsigned i, const void *out, size_t out_bytes, cudaStream_t stream)
{
    uint64_t *d = N.d_ring + (size_t)i * WORDS;
    cudaError_t e = cudaSuccess;
    if (out) {
        e = lsk_lsfp1_async(out, out_bytes, 0, d + 2, stream);
        N.p[i].has_out = 1;
    }
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(N.h_ring + (size_t)i * WORDS, d, sizeof(uint64_t) * WORDS, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaEventRecord(N.p[i].ev, stream);
    N.p[i].armed = e == cudaSuccess ? 1 : -1;
    if (e != cudaSuccess) {
        warn("hashing an output", e);
        N.state = -1;
    }
}

/* after_locked - the collective was issued: finish now, or at the group's end. */
static void after_locked(int slot, const void *out, size_t out_bytes, cudaStream_t stream)
{
    if (slot < 0)
        return;
    if (N.group_depth > 0) {
        if (N.n_deferred < DEFER) {
            N.d[N.n_deferred++] = (struct deferred){(unsigned)slot, out, out_bytes, stream};
            return;
        }
        /* Hashing the output now would run before the group launches the collective: no record instead. */
        static int said;
        if (!said++) {
            static const char msg[] = "lockstep: an NCCL group of more than 1024 calls: the calls past that are "
                                      "not fingerprinted\n";
            ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
            (void)w;
        }
        N.p[slot].armed = -1;
        return;
    }
    finish_locked((unsigned)slot, out, out_bytes, stream);
}

/* nccl.h declares these two without a prototype. */
EXPORT ncclResult_t ncclGroupStart(void);
EXPORT ncclResult_t ncclGroupEnd(void);

EXPORT ncclResult_t ncclGroupStart(void)
{
    REAL(ncclResult_t, ncclGroupStart, void);
    pthread_mutex_lock(&N.mu);
    N.group_depth++;
    pthread_mutex_unlock(&N.mu);
    return real_ncclGroupStart();
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
    REAL(ncclResult_t, ncclGroupEnd, void);
    ncclResult_t rc = real_ncclGroupEnd();
    pthread_mutex_lock(&N.mu);
    if (N.group_depth > 0 && --N.group_depth == 0) {
        for (unsigned k = 0; k < N.n_deferred; k++)
            if (N.state > 0)
                finish_locked(N.d[k].slot, rc == ncclSuccess ? N.d[k].buf : NULL, N.d[k].nbytes, N.d[k].stream);
        N.n_deferred = 0;
    }
    pthread_mutex_unlock(&N.mu);
    return rc;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    REAL(ncclResult_t, ncclCommDestroy, ncclComm_t);
    pthread_mutex_lock(&N.mu);
    if (N.state > 0)
        drain_locked(1); /* the communicator's streams may go with it */
    for (int i = 0; i < KEYS; i++)
        if (N.keys[i].comm == comm)
            N.keys[i].comm = NULL;
    pthread_mutex_unlock(&N.mu);
    return real_ncclCommDestroy(comm);
}

/* init_key - the consensus key of a communicator created from `id` with `nranks` members. */
static uint64_t init_key(const ncclUniqueId *id, int nranks)
{
    uint64_t h = key_mix(0xcbf29ce484222325ULL, "nccl", 4);
    h = key_mix(h, id->internal, sizeof(id->internal));
    return key_mix(h, &nranks, sizeof(nranks));
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    REAL(ncclResult_t, ncclCommInitRank, ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t rc = real_ncclCommInitRank(comm, nranks, commId, rank);
    if (rc == ncclSuccess && comm && *comm) {
        pthread_mutex_lock(&N.mu);
        key_set_locked(*comm, init_key(&commId, nranks));
        pthread_mutex_unlock(&N.mu);
    }
    return rc;
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                           ncclConfig_t *config)
{
    REAL(ncclResult_t, ncclCommInitRankConfig, ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    ncclResult_t rc = real_ncclCommInitRankConfig(comm, nranks, commId, rank, config);
    /* a non-blocking init may still be in progress: the handle is valid already */
    if ((rc == ncclSuccess || rc == ncclInProgress) && comm && *comm) {
        pthread_mutex_lock(&N.mu);
        key_set_locked(*comm, init_key(&commId, nranks));
        pthread_mutex_unlock(&N.mu);
    }
    return rc;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    REAL(ncclResult_t, ncclCommSplit, ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
    ncclResult_t rc = real_ncclCommSplit(comm, color, key, newcomm, config);
    if ((rc == ncclSuccess || rc == ncclInProgress) && newcomm && *newcomm) {
        pthread_mutex_lock(&N.mu);
        uint64_t parent;
        if (comm_key_locked(comm, &parent) == 0) { /* the members of a color share the parent, color and count */
            int n = comm_count(*newcomm);
            uint64_t h = key_mix(parent, &color, sizeof(color));
            key_set_locked(*newcomm, key_mix(h, &n, sizeof(n)));
        }
        pthread_mutex_unlock(&N.mu);
    }
    return rc;
}

/* collective - the shared body of the wrapped collectives. The call site is resolved (ls_enabled_at) in the
 * calling thread, now; the record, made later, names it by the same return address. LOCKSTEP_IGNORE
 * leaves the call alone: nothing is hashed. */
#define COLLECTIVE(NAME, LEVEL, CONS, IN, IN_BYTES, OUT, OUT_COUNT, CALL)                                              \
    do {                                                                                                               \
        int slot_ = -1;                                                                                                \
        const void *ret_ = __builtin_return_address(0);                                                                \
        if ((!mode_consensus_env() || ((CONS) && consensus_places())) && ls_enabled_at(LEVEL, NAME, ret_)) {           \
            pthread_mutex_lock(&N.mu);                                                                                 \
            slot_ = begin_locked(NAME, ret_, LEVEL, datatype, comm, CONS, OUT_COUNT, IN, IN_BYTES, stream);            \
            pthread_mutex_unlock(&N.mu);                                                                               \
        }                                                                                                              \
        ncclResult_t rc_ = CALL;                                                                                       \
        if (slot_ >= 0) {                                                                                              \
            pthread_mutex_lock(&N.mu);                                                                                 \
            after_locked(slot_, rc_ == ncclSuccess ? (OUT) : NULL, (OUT_COUNT)*dtype_bytes(datatype), stream);         \
            pthread_mutex_unlock(&N.mu);                                                                               \
        }                                                                                                              \
        return rc_;                                                                                                    \
    } while (0)

EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    REAL(ncclResult_t, ncclAllReduce, const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
         cudaStream_t);
    /* a built-in operation; a user's (ncclRedOpCreatePreMulSum) is left out of consensus */
    COLLECTIVE("nccl.allreduce", LS_LEVEL_COLLECTIVE, (int)op >= 0 && (int)op < (int)ncclNumOps, sendbuff,
               count * dtype_bytes(datatype), recvbuff, count,
               real_ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream));
}

EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    REAL(ncclResult_t, ncclReduce, const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
         cudaStream_t);
    REAL(ncclResult_t, ncclCommUserRank, const ncclComm_t, int *);
    int me = -1;
    real_ncclCommUserRank(comm, &me);
    /* Only the root's recvbuff holds a result. */
    COLLECTIVE("nccl.reduce", LS_LEVEL_COLLECTIVE, 0, sendbuff, count * dtype_bytes(datatype),
               me == root ? recvbuff : NULL, me == root ? count : 0,
               real_ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}

EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream)
{
    REAL(ncclResult_t, ncclBroadcast, const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    REAL(ncclResult_t, ncclCommUserRank, const ncclComm_t, int *);
    int me = -1;
    real_ncclCommUserRank(comm, &me);
    COLLECTIVE("nccl.broadcast", LS_LEVEL_COLLECTIVE, 1, me == root ? sendbuff : NULL, count * dtype_bytes(datatype),
               recvbuff, count, real_ncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream)
{
    REAL(ncclResult_t, ncclAllGather, const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    size_t total = sendcount * (size_t)comm_count(comm);
    COLLECTIVE("nccl.allgather", LS_LEVEL_COLLECTIVE, 1, sendbuff, sendcount * dtype_bytes(datatype), recvbuff, total,
               real_ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream));
}

EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    REAL(ncclResult_t, ncclReduceScatter, const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
         cudaStream_t);
    size_t total = recvcount * (size_t)comm_count(comm);
    COLLECTIVE("nccl.reduce_scatter", LS_LEVEL_COLLECTIVE, 0, sendbuff, total * dtype_bytes(datatype), recvbuff,
               recvcount, real_ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream));
}

EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                             cudaStream_t stream)
{
    REAL(ncclResult_t, ncclSend, const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    /* What is sent is the record: its fingerprint travels as the "input" slot. */
    COLLECTIVE("nccl.send", LS_LEVEL_OP, 0, sendbuff, count * dtype_bytes(datatype), (const void *)NULL, count,
               real_ncclSend(sendbuff, count, datatype, peer, comm, stream));
}

EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                             cudaStream_t stream)
{
    REAL(ncclResult_t, ncclRecv, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    COLLECTIVE("nccl.recv", LS_LEVEL_OP, 0, (const void *)NULL, 0, recvbuff, count,
               real_ncclRecv(recvbuff, count, datatype, peer, comm, stream));
}

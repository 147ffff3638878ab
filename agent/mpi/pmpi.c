/* pmpi.c - liblockstep_mpi.so: PMPI wrappers that fingerprint the inputs and outputs of MPI collectives. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "agent/mpi/comm.h"
#include "agent/mpi/pmpi.h"
#include "common/lsfp1.h"
#include "include/lockstep.h"
#include "agent/mode.h"

void *mpi_resolve(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    f = dlsym(RTLD_NEXT, name);
    if (!f)
        f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        char msg[200];
        int n = snprintf(msg, sizeof(msg), "lockstep: %s not found: liblockstep_mpi.so needs an MPI library\n", name);
        ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
        (void)w;
        abort(); /* the program called an MPI function, so MPI must be there: this is a broken install */
    }
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

/* --- datatypes ------------------------------------------------------------ */

static const struct {
    const char *name;
    ls_dtype dtype;
} float_types[] = {{"MPI_DOUBLE", LS_F64},
                   {"MPI_FLOAT", LS_F32},
                   {"MPI_REAL8", LS_F64},
                   {"MPI_REAL4", LS_F32},
                   {"MPI_DOUBLE_PRECISION", LS_F64}, /* Fortran's, through fortran.c */
                   {"MPI_REAL", LS_F32},
                   {"MPI_C_BOOL", LS_BOOL}};

static ls_dtype int_dtype(int size, int is_unsigned)
{
    switch (size) {
    case 1: return is_unsigned ? LS_U8 : LS_I8;
    case 2: return is_unsigned ? LS_U16 : LS_I16;
    case 4: return is_unsigned ? LS_U32 : LS_I32;
    case 8: return is_unsigned ? LS_U64 : LS_I64;
    }
    return LS_BYTES;
}

static int dtype_lookup(MPI_Datatype dt, dt_info *out)
{
    REAL(int, MPI_Type_size, MPI_Datatype, int *);
    REAL(int, MPI_Type_get_true_extent, MPI_Datatype, MPI_Aint *, MPI_Aint *);
    REAL(int, MPI_Type_get_extent, MPI_Datatype, MPI_Aint *, MPI_Aint *);
    REAL(int, MPI_Type_get_name, MPI_Datatype, char *, int *);
    MPI_Aint lb, tlb, textent;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    if (real_MPI_Type_size(dt, &out->size) != MPI_SUCCESS ||
        real_MPI_Type_get_extent(dt, &lb, &out->extent) != MPI_SUCCESS ||
        real_MPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS)
        return -1;
    out->contiguous = tlb == 0 && lb == 0 && textent == out->size && out->extent == out->size;
    out->dtype = LS_BYTES;
    real_MPI_Type_get_name(dt, name, &len);
    for (size_t i = 0; i < sizeof(float_types) / sizeof(float_types[0]); i++)
        if (strcmp(name, float_types[i].name) == 0)
            out->dtype = float_types[i].dtype;
    int is_int = strstr(name, "INT") || strstr(name, "LONG") || strstr(name, "SHORT") || strstr(name, "UNSIGNED") ||
                 strstr(name, "CHAR");
    if (out->dtype == LS_BYTES && out->contiguous && is_int) {
        int uns = strstr(name, "UNSIGNED") || strstr(name, "UINT");
        out->dtype = int_dtype(out->size, uns);
    }
    return 0;
}

/* dtype_info - dtype_lookup through a small cache of the predefined types (MPI_FLOAT, MPI_INT, ...): the
 * lookup costs four MPI calls and a dozen string compares, a third of the agent's cost on a small collective.
 * Derived types are looked up every time: MPI reuses a freed type's handle for the next one (Fortran frees
 * them without passing through MPI_Type_free), and they are packed before hashing anyway. */
#define DT_CACHE 16
static struct dt_entry {
    MPI_Datatype dt;
    int used;
    dt_info info;
} dt_cache[DT_CACHE];
static pthread_mutex_t dt_mu = PTHREAD_MUTEX_INITIALIZER;

int dtype_info(MPI_Datatype dt, dt_info *out)
{
    REAL(int, MPI_Type_get_envelope, MPI_Datatype, int *, int *, int *, int *);
    struct dt_entry *e = &dt_cache[((uintptr_t)dt >> 4 ^ (uintptr_t)dt >> 10) % DT_CACHE];
    pthread_mutex_lock(&dt_mu);
    int hit = e->used && e->dt == dt;
    if (hit)
        *out = e->info;
    pthread_mutex_unlock(&dt_mu);
    if (hit)
        return 0;
    if (dtype_lookup(dt, out) < 0)
        return -1;
    int ni, na, nd, combiner;
    out->named =
        real_MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS && combiner == MPI_COMBINER_NAMED;
    if (out->named) {
        pthread_mutex_lock(&dt_mu);
        e->dt = dt;
        e->info = *out;
        e->used = 1;
        pthread_mutex_unlock(&dt_mu);
    }
    return 0;
}

/* fp_add - feed `count` elements of `dt` at `buf` into `s`, packing the
 * elements first when the type has holes. */
static void fp_add(fp_stream *s, const void *buf, int count, MPI_Datatype dt, const dt_info *d, MPI_Comm comm)
{
    if (count <= 0)
        return;
    if (d->contiguous) {
        fp_stream_update(s, buf, (size_t)count * (size_t)d->size);
        return;
    }
    REAL(int, MPI_Pack_size, int, MPI_Datatype, MPI_Comm, int *);
    REAL(int, MPI_Pack, const void *, int, MPI_Datatype, void *, int, int *, MPI_Comm);
    int need = 0, pos = 0;
    if (real_MPI_Pack_size(count, dt, comm, &need) != MPI_SUCCESS)
        return;
    void *tmp = malloc((size_t)need);
    if (!tmp)
        return;
    if (real_MPI_Pack(buf, count, dt, tmp, need, &pos, comm) == MPI_SUCCESS)
        fp_stream_update(s, tmp, (size_t)pos);
    free(tmp);
}

uint64_t fp_of(const void *buf, int count, MPI_Datatype dt, const dt_info *d, uint64_t *nbytes, MPI_Comm comm)
{
    if (d->contiguous) {
        size_t n = count > 0 ? (size_t)count * (size_t)d->size : 0;
        if (nbytes)
            *nbytes = n;
        return fp_lsfp1(buf, n);
    }
    fp_stream s;
    fp_stream_init(&s);
    fp_add(&s, buf, count, dt, d, comm);
    if (nbytes)
        *nbytes = s.nbytes + s.tail_len;
    return fp_stream_digest(&s);
}

/* fp_segments - the fingerprint of `n` segments (counts[i] elements at
 * displs[i] extents from buf) taken in order, as if packed end to end. */
uint64_t fp_segments(const void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt, const dt_info *d,
                     uint64_t *nbytes, long *elems, MPI_Comm comm)
{
    fp_stream s;
    fp_stream_init(&s);
    *elems = 0;
    for (int i = 0; i < n; i++) {
        fp_add(&s, (const char *)buf + (MPI_Aint)(displs ? displs[i] : 0) * d->extent, counts[i], dt, d, comm);
        *elems += counts[i];
    }
    *nbytes = s.nbytes + s.tail_len;
    return fp_stream_digest(&s);
}

/* inputs_on - 0 when LOCKSTEP_MPI_INPUTS=0 asks for output fingerprints only
 * (half the hashing, for fabrics faster than memory bandwidth allows); the consensus mode's default. */
int inputs_on(void)
{
    static int on = -1;
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("LOCKSTEP_MPI_INPUTS");
        v = e && *e ? strcmp(e, "0") != 0 : !mode_consensus_env();
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* consensus_op - 1 when `op` is one of MPI's predefined reductions, whose allreduce hands every rank the same bytes.
 * A user's MPI_Op may be non-commutative or depend on the rank, and MPI allows rank-dependent results then. Open
 * MPI's predefined operations are objects of libmpi, found by name (this library names no symbol of libmpi); from
 * the program first, as comm.c finds MPI_COMM_WORLD. Elsewhere no operation counts. */
#ifdef OPEN_MPI
static const char *const predefined_ops[] = {
    "ompi_mpi_op_max",    "ompi_mpi_op_min",    "ompi_mpi_op_sum",     "ompi_mpi_op_prod", "ompi_mpi_op_land",
    "ompi_mpi_op_band",   "ompi_mpi_op_lor",    "ompi_mpi_op_bor",     "ompi_mpi_op_lxor", "ompi_mpi_op_bxor",
    "ompi_mpi_op_maxloc", "ompi_mpi_op_minloc", "ompi_mpi_op_replace", "ompi_mpi_op_no_op"};
#define N_PREDEFINED_OPS (sizeof(predefined_ops) / sizeof(predefined_ops[0]))
static void *op_addr[N_PREDEFINED_OPS];
static pthread_once_t op_once = PTHREAD_ONCE_INIT;

static void op_setup(void)
{
    for (size_t i = 0; i < N_PREDEFINED_OPS; i++)
        op_addr[i] = dlsym(RTLD_DEFAULT, predefined_ops[i]);
}

int consensus_op(MPI_Op op)
{
    pthread_once(&op_once, op_setup);
    for (size_t i = 0; i < N_PREDEFINED_OPS; i++)
        if (op_addr[i] && (void *)op == op_addr[i])
            return 1;
    return 0;
}
#else
int consensus_op(MPI_Op op)
{
    (void)op;
    return 0;
}
#endif

/* in_of / in_segments - fp_of and fp_segments for an input: 0 without
 * hashing when inputs are off. */
uint64_t in_of(const void *buf, int count, MPI_Datatype dt, const dt_info *d, uint64_t *nbytes, MPI_Comm comm)
{
    return inputs_on() ? fp_of(buf, count, dt, d, nbytes, comm) : 0;
}

static uint64_t in_segments(const void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt,
                            const dt_info *d, uint64_t *nbytes, long *elems, MPI_Comm comm)
{
    if (inputs_on())
        return fp_segments(buf, n, counts, displs, dt, d, nbytes, elems, comm);
    *nbytes = 0;
    *elems = 0;
    return 0;
}

int comm_size(MPI_Comm comm)
{
    REAL(int, MPI_Comm_size, MPI_Comm, int *);
    int n = 0;
    real_MPI_Comm_size(comm, &n);
    return n;
}

int comm_rank(MPI_Comm comm)
{
    REAL(int, MPI_Comm_rank, MPI_Comm, int *);
    int r = 0;
    real_MPI_Comm_rank(comm, &r);
    return r;
}

/* emit_as - one record: shape {communicator size, output elements}, the call site the wrapper returns to, and the
 * world ranks the communicator spans (agent/mpi/comm.h); with `cons`, the output is the same on every member, and
 * the record carries its consensus place under the communicator's key. */
static void emit_as(ls_level level, const char *name, uint64_t fp, uint64_t nbytes, ls_dtype dtype, int csize,
                    long elems, int n_inputs, const uint64_t *inputs, const void *ret, MPI_Comm comm, int cons)
{
    int64_t shape[2] = {csize, elems};
    ls_comm c;
    uint64_t key;
    int keyed = comm_key_of(comm, &c, &key) == 0;
    n_inputs = inputs_on() ? n_inputs : 0;
    if (cons && keyed)
        ls_record_fp_consensus(level, name, fp, nbytes, dtype, 2, shape, n_inputs, inputs, ret, &c, key);
    else
        ls_record_fp_comm(level, name, fp, nbytes, dtype, 2, shape, n_inputs, inputs, ret, c.size ? &c : NULL);
}

#define emit(...) emit_as(__VA_ARGS__, 0)
#define emit_consensus(...) emit_as(__VA_ARGS__, 1)

/* --- MPI_Pcontrol: the standard switch a program gives its profiling library -------------------------------
 * MPI_Pcontrol(0) pauses the recording of MPI calls (they pass straight through), any other level resumes it.
 * A program can leave a phase out of the trace this way; twins that make the same calls stay aligned. */
static int paused; /* atomic */

/* recording - 1 when the call is recorded: not paused, inside the trace window, and not left out by
 * LOCKSTEP_IGNORE (which matches `name` and the functions of the call site at `ret`, the wrapper's return
 * address in the application). The first call from a site resolves it, in this thread. */
static int recording(ls_level level, const char *name, const void *ret)
{
    return !__atomic_load_n(&paused, __ATOMIC_RELAXED) && !mode_consensus_env() && ls_enabled_at(level, name, ret);
}

/* recording_consensus - recording() for a call on `comm` whose output is the same on every member when `cons`: the
 * only calls the consensus mode records (on a communicator that can hold consensus places, comm_consensus), and of
 * those one in LOCKSTEP_CONSENSUS_EVERY (comm_sampled). */
int recording_consensus(ls_level level, const char *name, const void *ret, int cons, MPI_Comm comm)
{
    if (__atomic_load_n(&paused, __ATOMIC_RELAXED))
        return 0;
    if (mode_consensus_env() && (!cons || !comm_consensus(comm) || !comm_sampled(comm, mode_consensus_every_env())))
        return 0;
    return ls_enabled_at(level, name, ret);
}

int MPI_Pcontrol(const int level, ...)
{
    REAL(int, MPI_Pcontrol, const int, ...);
    __atomic_store_n(&paused, level == 0, __ATOMIC_RELAXED);
    return real_MPI_Pcontrol(level);
}

/* --- MPI_Abort: the launcher kills every rank with a signal right after it, so the records made so far and
 * this rank's abort are sent first (within LOCKSTEP_FLUSH_TIMEOUT): twins that abort are then seen as
 * failed, not as runs that agreed on a handful of records, and the run's exit is the abort's code (an abort
 * with code 0 still ends the job as failed: it counts as 1), not the signal that killed its peers. */
int MPI_Abort(MPI_Comm comm, int errorcode)
{
    REAL(int, MPI_Abort, MPI_Comm, int);
    ls_shutdown_abort(errorcode ? errorcode : 1);
    return real_MPI_Abort(comm, errorcode);
}

/* --- MPI_Finalize: lockstepd sees the run's last consensus windows while every rank still lives -------------
 * A disagreement in the last windows is found once every member's digest arrived, and named from the step's
 * records, which digest streaming holds back in the agents: a rank that had already exited could not send them
 * (the run said "records awaited"). So each rank sends what it recorded and waits for lockstepd to take it (ls_flush,
 * within LOCKSTEP_FLUSH_TIMEOUT), then waits for the others (MPI_Finalize is collective anyway); when its end is
 * reported at exit, lockstepd has judged the windows and its reply asks for the records. The barrier is nonblocking
 * and waited for FINALIZE_WAIT_S at most: a rank whose agent did not start (so never reaches it) costs the others
 * that, never a hang. */
#define FINALIZE_WAIT_S 10.0
static void finalize_sync(void)
{
    REAL(int, MPI_Initialized, int *);
    REAL(int, MPI_Finalized, int *);
    REAL(int, MPI_Ibarrier, MPI_Comm, MPI_Request *);
    REAL(int, MPI_Test, MPI_Request *, int *, MPI_Status *);
    int init = 0, fin = 0, done = 0;
    if (real_MPI_Initialized(&init) != MPI_SUCCESS || !init || real_MPI_Finalized(&fin) != MPI_SUCCESS || fin)
        return;
    if (ls_flush(-1) < 0)
        return; /* no agent: nothing to wait for */
    MPI_Comm world = comm_world();
    MPI_Request rq;
    if (!world || real_MPI_Ibarrier(world, &rq) != MPI_SUCCESS)
        return;
    struct timespec t0, now, nap = {0, 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (real_MPI_Test(&rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
            return;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 > FINALIZE_WAIT_S)
            return; /* the request stays open: MPI_Finalize ends it with the rest */
        nanosleep(&nap, NULL);
    }
}

int MPI_Finalize(void)
{
    REAL(int, MPI_Finalize, void);
    finalize_sync();
    return real_MPI_Finalize();
}

/* --- collectives ---------------------------------------------------------- */

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    REAL(int, MPI_Allreduce, const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    dt_info d;
    int cons = consensus_op(op);
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, "mpi.allreduce", RET, cons, comm) || dtype_info(dt, &d) < 0)
        return real_MPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    uint64_t in = in_of(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, dt, &d, NULL, comm), nbytes;
    int rc = real_MPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t out = fp_of(recvbuf, count, dt, &d, &nbytes, comm);
        emit_as(LS_LEVEL_COLLECTIVE, "mpi.allreduce", out, nbytes, d.dtype, comm_size(comm), count, 1, &in, RET, comm,
                cons);
    }
    return rc;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    REAL(int, MPI_Reduce, const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
    dt_info d;
    if (!recording(LS_LEVEL_COLLECTIVE, "mpi.reduce", RET) || dtype_info(dt, &d) < 0)
        return real_MPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm);
    int me = comm_rank(comm);
    uint64_t in_bytes = 0;
    uint64_t in = in_of(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, dt, &d, &in_bytes, comm), nbytes = 0, out;
    int rc = real_MPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm);
    if (rc == MPI_SUCCESS) {
        /* Only the root has a result; each other rank's record holds what it contributed (its input, as NCCL's
         * non-root ncclReduce records do), so that a rank whose contribution differs diverges there. */
        if (me == root)
            out = fp_of(recvbuf, count, dt, &d, &nbytes, comm);
        else if (inputs_on())
            out = in, nbytes = in_bytes;
        else
            out = fp_lsfp1("", 0);
        emit(LS_LEVEL_COLLECTIVE, "mpi.reduce", out, nbytes, d.dtype, comm_size(comm), me == root ? count : 0, 1, &in,
             RET, comm);
    }
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    REAL(int, MPI_Bcast, void *, int, MPI_Datatype, int, MPI_Comm);
    dt_info d;
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, "mpi.bcast", RET, 1, comm) || dtype_info(dt, &d) < 0)
        return real_MPI_Bcast(buf, count, dt, root, comm);
    int me = comm_rank(comm);
    uint64_t in = me == root ? in_of(buf, count, dt, &d, NULL, comm) : 0, nbytes;
    int rc = real_MPI_Bcast(buf, count, dt, root, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t out = fp_of(buf, count, dt, &d, &nbytes, comm);
        emit_consensus(LS_LEVEL_COLLECTIVE, "mpi.bcast", out, nbytes, d.dtype, comm_size(comm), count, me == root, &in,
                       RET, comm);
    }
    return rc;
}

int MPI_Allgather(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    REAL(int, MPI_Allgather, const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
    dt_info ds, dr;
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, "mpi.allgather", RET, 1, comm) || dtype_info(rtype, &dr) < 0 ||
        (sendbuf != MPI_IN_PLACE && dtype_info(stype, &ds) < 0))
        return real_MPI_Allgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    int p = comm_size(comm);
    uint64_t in = sendbuf == MPI_IN_PLACE ? in_of((char *)recvbuf + (MPI_Aint)comm_rank(comm) * rcount * dr.extent,
                                                  rcount, rtype, &dr, NULL, comm)
                                          : in_of(sendbuf, scount, stype, &ds, NULL, comm);
    uint64_t nbytes;
    int rc = real_MPI_Allgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t out = fp_of(recvbuf, p * rcount, rtype, &dr, &nbytes, comm);
        emit_consensus(LS_LEVEL_COLLECTIVE, "mpi.allgather", out, nbytes, dr.dtype, p, (long)p * rcount, 1, &in, RET,
                       comm);
    }
    return rc;
}

int MPI_Allgatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
                   const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    REAL(int, MPI_Allgatherv, const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype,
         MPI_Comm);
    dt_info ds, dr;
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, "mpi.allgatherv", RET, 1, comm) || dtype_info(rtype, &dr) < 0 ||
        (sendbuf != MPI_IN_PLACE && dtype_info(stype, &ds) < 0))
        return real_MPI_Allgatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, comm);
    int p = comm_size(comm), me = comm_rank(comm);
    uint64_t in = sendbuf == MPI_IN_PLACE
                      ? in_of((char *)recvbuf + (MPI_Aint)displs[me] * dr.extent, rcounts[me], rtype, &dr, NULL, comm)
                      : in_of(sendbuf, scount, stype, &ds, NULL, comm);
    int rc = real_MPI_Allgatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t nbytes;
        long elems;
        uint64_t out = fp_segments(recvbuf, p, rcounts, displs, rtype, &dr, &nbytes, &elems, comm);
        emit_consensus(LS_LEVEL_COLLECTIVE, "mpi.allgatherv", out, nbytes, dr.dtype, p, elems, 1, &in, RET, comm);
    }
    return rc;
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int rcounts[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm)
{
    REAL(int, MPI_Reduce_scatter, const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm);
    dt_info d;
    if (!recording(LS_LEVEL_COLLECTIVE, "mpi.reduce_scatter", RET) || dtype_info(dt, &d) < 0)
        return real_MPI_Reduce_scatter(sendbuf, recvbuf, rcounts, dt, op, comm);
    int p = comm_size(comm), me = comm_rank(comm);
    long total = 0;
    for (int i = 0; i < p; i++)
        total += rcounts[i];
    uint64_t in = in_of(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, (int)total, dt, &d, NULL, comm), nbytes;
    int rc = real_MPI_Reduce_scatter(sendbuf, recvbuf, rcounts, dt, op, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t out = fp_of(recvbuf, rcounts[me], dt, &d, &nbytes, comm);
        emit(LS_LEVEL_COLLECTIVE, "mpi.reduce_scatter", out, nbytes, d.dtype, p, rcounts[me], 1, &in, RET, comm);
    }
    return rc;
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int rcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    REAL(int, MPI_Reduce_scatter_block, const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    dt_info d;
    if (!recording(LS_LEVEL_COLLECTIVE, "mpi.reduce_scatter_block", RET) || dtype_info(dt, &d) < 0)
        return real_MPI_Reduce_scatter_block(sendbuf, recvbuf, rcount, dt, op, comm);
    int p = comm_size(comm);
    uint64_t in = in_of(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, p * rcount, dt, &d, NULL, comm), nbytes;
    int rc = real_MPI_Reduce_scatter_block(sendbuf, recvbuf, rcount, dt, op, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t out = fp_of(recvbuf, rcount, dt, &d, &nbytes, comm);
        emit(LS_LEVEL_COLLECTIVE, "mpi.reduce_scatter_block", out, nbytes, d.dtype, p, rcount, 1, &in, RET, comm);
    }
    return rc;
}

int MPI_Alltoall(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm)
{
    REAL(int, MPI_Alltoall, const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
    dt_info ds, dr;
    if (!recording(LS_LEVEL_COLLECTIVE, "mpi.alltoall", RET) || dtype_info(rtype, &dr) < 0 ||
        (sendbuf != MPI_IN_PLACE && dtype_info(stype, &ds) < 0))
        return real_MPI_Alltoall(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    int p = comm_size(comm);
    uint64_t in = sendbuf == MPI_IN_PLACE ? in_of(recvbuf, p * rcount, rtype, &dr, NULL, comm)
                                          : in_of(sendbuf, p * scount, stype, &ds, NULL, comm);
    int rc = real_MPI_Alltoall(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t nbytes, out = fp_of(recvbuf, p * rcount, rtype, &dr, &nbytes, comm);
        emit(LS_LEVEL_COLLECTIVE, "mpi.alltoall", out, nbytes, dr.dtype, p, (long)p * rcount, 1, &in, RET, comm);
    }
    return rc;
}

int MPI_Alltoallv(const void *sendbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *recvbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    REAL(int, MPI_Alltoallv, const void *, const int *, const int *, MPI_Datatype, void *, const int *, const int *,
         MPI_Datatype, MPI_Comm);
    dt_info ds, dr;
    if (!recording(LS_LEVEL_COLLECTIVE, "mpi.alltoallv", RET) || dtype_info(rtype, &dr) < 0 ||
        (sendbuf != MPI_IN_PLACE && dtype_info(stype, &ds) < 0))
        return real_MPI_Alltoallv(sendbuf, scounts, sdispls, stype, recvbuf, rcounts, rdispls, rtype, comm);
    int p = comm_size(comm);
    uint64_t nbytes, in;
    long elems;
    if (sendbuf == MPI_IN_PLACE)
        in = in_segments(recvbuf, p, rcounts, rdispls, rtype, &dr, &nbytes, &elems, comm);
    else
        in = in_segments(sendbuf, p, scounts, sdispls, stype, &ds, &nbytes, &elems, comm);
    int rc = real_MPI_Alltoallv(sendbuf, scounts, sdispls, stype, recvbuf, rcounts, rdispls, rtype, comm);
    if (rc == MPI_SUCCESS) {
        uint64_t out = fp_segments(recvbuf, p, rcounts, rdispls, rtype, &dr, &nbytes, &elems, comm);
        emit(LS_LEVEL_COLLECTIVE, "mpi.alltoallv", out, nbytes, dr.dtype, p, elems, 1, &in, RET, comm);
    }
    return rc;
}

/* --- point to point (level op) ----------------------------------------------- */

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    REAL(int, MPI_Send, const void *, int, MPI_Datatype, int, int, MPI_Comm);
    dt_info d;
    if (recording(LS_LEVEL_OP, "mpi.send", RET) && dtype_info(dt, &d) == 0) {
        uint64_t nbytes, fp = fp_of(buf, count, dt, &d, &nbytes, comm);
        emit(LS_LEVEL_OP, "mpi.send", fp, nbytes, d.dtype, comm_size(comm), count, 0, NULL, RET, comm);
    }
    return real_MPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    REAL(int, MPI_Recv, void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    REAL(int, MPI_Get_count, const MPI_Status *, MPI_Datatype, int *);
    dt_info d;
    if (!recording(LS_LEVEL_OP, "mpi.recv", RET) || dtype_info(dt, &d) < 0)
        return real_MPI_Recv(buf, count, dt, source, tag, comm, status);
    MPI_Status st;
    int rc = real_MPI_Recv(buf, count, dt, source, tag, comm, status == MPI_STATUS_IGNORE ? &st : status);
    if (rc == MPI_SUCCESS) {
        int got = count;
        real_MPI_Get_count(status == MPI_STATUS_IGNORE ? &st : status, dt, &got);
        if (got == MPI_UNDEFINED || got < 0)
            got = count;
        uint64_t nbytes, fp = fp_of(buf, got, dt, &d, &nbytes, comm);
        emit(LS_LEVEL_OP, "mpi.recv", fp, nbytes, d.dtype, comm_size(comm), got, 0, NULL, RET, comm);
    }
    return rc;
}

int MPI_Sendrecv(const void *sendbuf, int scount, MPI_Datatype stype, int dest, int stag, void *recvbuf, int rcount,
                 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    REAL(int, MPI_Sendrecv, const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int, int, MPI_Comm,
         MPI_Status *);
    REAL(int, MPI_Get_count, const MPI_Status *, MPI_Datatype, int *);
    dt_info ds, dr;
    if (!recording(LS_LEVEL_OP, "mpi.sendrecv", RET) || dtype_info(stype, &ds) < 0 || dtype_info(rtype, &dr) < 0)
        return real_MPI_Sendrecv(sendbuf, scount, stype, dest, stag, recvbuf, rcount, rtype, source, rtag, comm,
                                 status);
    MPI_Status st;
    MPI_Status *sp = status == MPI_STATUS_IGNORE ? &st : status;
    uint64_t in = in_of(sendbuf, scount, stype, &ds, NULL, comm);
    int rc = real_MPI_Sendrecv(sendbuf, scount, stype, dest, stag, recvbuf, rcount, rtype, source, rtag, comm, sp);
    if (rc == MPI_SUCCESS) {
        int got = rcount;
        real_MPI_Get_count(sp, rtype, &got);
        if (got == MPI_UNDEFINED || got < 0)
            got = rcount;
        uint64_t nbytes, out = fp_of(recvbuf, got, rtype, &dr, &nbytes, comm);
        emit(LS_LEVEL_OP, "mpi.sendrecv", out, nbytes, dr.dtype, comm_size(comm), got, 1, &in, RET, comm);
    }
    return rc;
}

/* nbc.c - liblockstep_mpi.so: nonblocking collectives (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather(v)), recorded when
 * they complete with the step, occurrence and consensus place of their start, and the MPI_Wait and MPI_Test families
 * that complete them.
 *
 * A start reserves the record (ls_reserve: in program order, the same on every member and in every twin) and keeps
 * the request with what its record needs in a table. A completion call first claims the table's entries of the
 * requests it is given, calls MPI, then records those that completed (ls_fill: the output fingerprinted right after
 * MPI hands the buffer back) and leaves the others to a later call. Before the step changes (ls_on_step_change), the
 * requests still open are completed here with MPI_Request_get_status, which frees nothing: the program's own wait
 * then returns at once. So every record lands in the step that started it whatever order ranks complete their
 * requests in. A request completed where these wrappers do not see it (erroneous for a collective: MPI_Request_free,
 * MPI_Cancel) would stay in the table; its window is never sent (no disagreement).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "agent/mpi/comm.h"
#include "agent/mpi/pmpi.h"
#include "include/lockstep.h"

/* One started collective whose record waits for its completion. */
typedef struct pending {
    MPI_Request req;     /* the program's request */
    const void *claimed; /* the completion call that holds it (its frame), NULL when none */
    int slot;            /* its index in that call's request array */
    ls_ticket ticket;
    const char *name;
    const void *ret;
    void *buf;
    int count;                  /* elements of `dt` at buf (no segments) */
    const int *counts, *displs; /* Iallgatherv: the segments (MPI keeps them unchanged until completion) */
    MPI_Datatype dt;            /* the program's type, or our duplicate of a derived one */
    int dt_dup;
    dt_info d;
    int csize;
    long elems;
    uint64_t in;
    ls_comm comm; /* world_ranks: our copy */
    struct pending *next;
} pending;

/* The table, under `mu` (recursive: ls_reserve may drain it, for LOCKSTEP_STEP_ON, in the thread that holds it). */
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pending **tab;
static size_t n_tab, cap_tab;
static size_t n_live; /* atomic copy of n_tab: completion calls look at the table only when it holds something */
static pthread_once_t hook_once = PTHREAD_ONCE_INIT;

static void drain_all(void);
static void hook(void)
{
    ls_on_step_change(drain_all);
}

static void release(pending *p)
{
    REAL(int, MPI_Type_free, MPI_Datatype *);
    if (p->dt_dup)
        real_MPI_Type_free(&p->dt);
    free((void *)p->comm.world_ranks);
    free(p);
}

/* give_up - no record for `p` (its completion failed or cannot be read): its window is never sent; freed. */
static void give_up(pending *p)
{
    ls_drop(&p->ticket);
    release(p);
}

static void remove_locked(pending *p)
{
    for (size_t i = 0; i < n_tab; i++)
        if (tab[i] == p) {
            tab[i] = tab[--n_tab];
            break;
        }
    __atomic_store_n(&n_live, n_tab, __ATOMIC_RELEASE);
}

/* record - `p`'s operation completed: its output fingerprinted and its record made; then freed. */
static void record(pending *p)
{
    uint64_t nbytes = 0, out;
    long elems = p->elems;
    MPI_Comm world = comm_world(); /* for packing: the program's communicator may be freed by now */
    if (p->counts)
        out = fp_segments(p->buf, p->csize, p->counts, p->displs, p->dt, &p->d, &nbytes, &elems, world);
    else
        out = fp_of(p->buf, p->count, p->dt, &p->d, &nbytes, world);
    int64_t shape[2] = {p->csize, elems};
    ls_fill(&p->ticket, p->name, out, nbytes, p->d.dtype, 2, shape, inputs_on() ? 1 : 0, &p->in, p->ret,
            p->comm.size ? &p->comm : NULL);
    release(p);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* drain_all - complete every open request of the table that no completion call holds, and record it (the step is
 * about to change). Bounded: a collective another member starts only after this rank's step change (a legal order
 * when, say, it waits for this rank's message first) cannot complete here, so after DRAIN_WAIT_MS the drain gives
 * up, says so once, and is not tried again in this process: records open across later step changes are left out on
 * their rank (their windows are never sent), and the job waits on the agent that once only. A collective that merely
 * takes longer than that is treated alike. */
#define DRAIN_WAIT_MS 5000
static int drain_off; /* under mu */

static void drain_all(void)
{
    REAL(int, MPI_Request_get_status, MPI_Request, int *, MPI_Status *);
    pthread_mutex_lock(&mu);
    int64_t until = mono_ns() + (int64_t)DRAIN_WAIT_MS * 1000000;
    for (size_t i = 0; i < n_tab && !drain_off;) {
        pending *p = tab[i];
        if (p->claimed) {
            i++;
            continue;
        }
        int flag = 0, rc;
        while ((rc = real_MPI_Request_get_status(p->req, &flag, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !flag &&
               mono_ns() < until)
            ;
        if (rc == MPI_SUCCESS && !flag) {
            drain_off = 1;
            static const char msg[] =
                "lockstep: a nonblocking collective stayed open across a step change for 5 s (another rank starts it "
                "later?); collectives open across step changes are left out of this rank's records from now on "
                "(their consensus windows are not checked)\n";
            ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
            (void)w;
            break;
        }
        remove_locked(p);
        if (rc == MPI_SUCCESS) {
            record(p);
        } else {
            give_up(p);
        }
    }
    pthread_mutex_unlock(&mu);
}

/* start - the collective `p` describes was started with request `req` on `comm`: reserve its record and keep it. */
static void start(pending *p, MPI_Request req, MPI_Comm comm, int cons)
{
    REAL(int, MPI_Type_dup, MPI_Datatype, MPI_Datatype *);
    pthread_once(&hook_once, hook);
    ls_comm c;
    uint64_t key = 0;
    int keyed = comm_key_of(comm, &c, &key) == 0;
    pending *q = calloc(1, sizeof(*q));
    int *ranks = c.world_ranks ? malloc((size_t)c.size * sizeof(int)) : NULL;
    if (!q || (c.world_ranks && !ranks)) {
        free(q);
        free(ranks);
        return;
    }
    *q = *p;
    q->req = req;
    if (ranks)
        memcpy(ranks, c.world_ranks, (size_t)c.size * sizeof(int));
    q->comm = (ls_comm){c.size, ranks};
    if (!q->d.named) /* a derived type may be freed by the program before the wait: keep our own */
        q->dt_dup = real_MPI_Type_dup(p->dt, &q->dt) == MPI_SUCCESS;
    pthread_mutex_lock(&mu);
    int reserved = ls_reserve(LS_LEVEL_COLLECTIVE, q->name, q->ret, c.size ? &c : NULL, cons && keyed ? &key : NULL,
                              &q->ticket) == 1;
    if (reserved && n_tab == cap_tab) {
        size_t cap = cap_tab ? 2 * cap_tab : 16;
        pending **t = realloc(tab, cap * sizeof(*t));
        if (t) {
            tab = t;
            cap_tab = cap;
        }
    }
    for (size_t i = 0; reserved && i < n_tab; i++)
        if (tab[i]->req == req && !tab[i]->claimed) { /* MPI hands out a live request once: this one's completion
                                                         went unseen (MPI_Request_free, a PMPI_Wait) */
            pending *stale = tab[i];
            remove_locked(stale);
            give_up(stale);
            break;
        }
    if (reserved && n_tab < cap_tab) {
        tab[n_tab++] = q;
        __atomic_store_n(&n_live, n_tab, __ATOMIC_RELEASE);
        q = NULL;
    } else if (reserved) {
        ls_drop(&q->ticket); /* no memory to keep it: its window is not sent */
    }
    pthread_mutex_unlock(&mu);
    if (q)
        release(q);
}

/* --- the collectives ----------------------------------------------------------------------------------------- */

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    REAL(int, MPI_Iallreduce, const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
    pending p = {.name = "mpi.iallreduce", .ret = RET, .buf = recvbuf, .count = count, .dt = dt, .elems = count};
    int cons = consensus_op(op);
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, p.name, p.ret, cons, comm) || dtype_info(dt, &p.d) < 0)
        return real_MPI_Iallreduce(sendbuf, recvbuf, count, dt, op, comm, req);
    p.in = in_of(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, dt, &p.d, NULL, comm);
    p.csize = comm_size(comm);
    int rc = real_MPI_Iallreduce(sendbuf, recvbuf, count, dt, op, comm, req);
    if (rc == MPI_SUCCESS)
        start(&p, *req, comm, cons);
    return rc;
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
    REAL(int, MPI_Ibcast, void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
    pending p = {.name = "mpi.ibcast", .ret = RET, .buf = buf, .count = count, .dt = dt, .elems = count};
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, p.name, p.ret, 1, comm) || dtype_info(dt, &p.d) < 0)
        return real_MPI_Ibcast(buf, count, dt, root, comm, req);
    p.in = comm_rank(comm) == root ? in_of(buf, count, dt, &p.d, NULL, comm) : 0;
    p.csize = comm_size(comm);
    int rc = real_MPI_Ibcast(buf, count, dt, root, comm, req);
    if (rc == MPI_SUCCESS)
        start(&p, *req, comm, 1);
    return rc;
}

int MPI_Iallgather(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype,
                   MPI_Comm comm, MPI_Request *req)
{
    REAL(int, MPI_Iallgather, const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, MPI_Request *);
    pending p = {.name = "mpi.iallgather", .ret = RET, .buf = recvbuf, .dt = rtype};
    dt_info ds;
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, p.name, p.ret, 1, comm) || dtype_info(rtype, &p.d) < 0 ||
        (sendbuf != MPI_IN_PLACE && dtype_info(stype, &ds) < 0))
        return real_MPI_Iallgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm, req);
    p.csize = comm_size(comm);
    p.count = p.csize * rcount;
    p.elems = (long)p.csize * rcount;
    p.in = sendbuf == MPI_IN_PLACE ? in_of((char *)recvbuf + (MPI_Aint)comm_rank(comm) * rcount * p.d.extent, rcount,
                                           rtype, &p.d, NULL, comm)
                                   : in_of(sendbuf, scount, stype, &ds, NULL, comm);
    int rc = real_MPI_Iallgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm, req);
    if (rc == MPI_SUCCESS)
        start(&p, *req, comm, 1);
    return rc;
}

int MPI_Iallgatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
                    const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    REAL(int, MPI_Iallgatherv, const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype,
         MPI_Comm, MPI_Request *);
    pending p = {
        .name = "mpi.iallgatherv", .ret = RET, .buf = recvbuf, .dt = rtype, .counts = rcounts, .displs = displs};
    dt_info ds;
    if (!recording_consensus(LS_LEVEL_COLLECTIVE, p.name, p.ret, 1, comm) || dtype_info(rtype, &p.d) < 0 ||
        (sendbuf != MPI_IN_PLACE && dtype_info(stype, &ds) < 0))
        return real_MPI_Iallgatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, comm, req);
    p.csize = comm_size(comm);
    int me = comm_rank(comm);
    p.in = sendbuf == MPI_IN_PLACE
               ? in_of((char *)recvbuf + (MPI_Aint)displs[me] * p.d.extent, rcounts[me], rtype, &p.d, NULL, comm)
               : in_of(sendbuf, scount, stype, &ds, NULL, comm);
    int rc = real_MPI_Iallgatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, comm, req);
    if (rc == MPI_SUCCESS)
        start(&p, *req, comm, 1);
    return rc;
}

/* --- completion ---------------------------------------------------------------------------------------------- */

/* claim - mark the table's entries of reqs[0..n) as held by the call whose frame is `who` (each with its index).
 * Returns how many; 0 at once when the table is empty (the cost for programs without nonblocking collectives). */
static int claim(const MPI_Request *reqs, int n, const void *who)
{
    if (!__atomic_load_n(&n_live, __ATOMIC_ACQUIRE) || n <= 0 || !reqs)
        return 0;
    int k = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_tab; i++) {
        pending *p = tab[i];
        if (p->claimed)
            continue;
        for (int j = 0; j < n; j++)
            if (reqs[j] == p->req) {
                p->claimed = who;
                p->slot = j;
                k++;
                break;
            }
    }
    pthread_mutex_unlock(&mu);
    return k;
}

/* How a completion call ended for the requests it held. */
enum { DONE_NONE, DONE_ALL, DONE_ONE, DONE_LISTED, FAILED };

/* settle - after the call whose frame is `who`: its entries that completed (`how`: none, all, the one at `index`,
 * those of indices[0..n)) are recorded, those of a failed call given up, the rest released for a later call. */
static void settle(const void *who, int how, int index, const int *indices, int n)
{
    pending *done = NULL, *failed = NULL;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_tab;) {
        pending *p = tab[i];
        if (p->claimed != who) {
            i++;
            continue;
        }
        int completed = how == DONE_ALL || (how == DONE_ONE && p->slot == index);
        for (int j = 0; how == DONE_LISTED && j < n && !completed; j++)
            completed = indices[j] == p->slot;
        if (!completed && how != FAILED) {
            p->claimed = NULL;
            i++;
            continue;
        }
        remove_locked(p);
        pending **list = how == FAILED ? &failed : &done;
        p->next = *list;
        *list = p;
    }
    pthread_mutex_unlock(&mu);
    while (done) {
        pending *p = done;
        done = p->next;
        record(p);
    }
    while (failed) {
        pending *p = failed;
        failed = p->next;
        give_up(p);
    }
}

/* settle_some - settle after MPI_Waitsome or MPI_Testsome returned `rc`: the requests at indices[0..*outcount)
 * completed. Returns rc. */
static int settle_some(const void *who, int rc, const int *outcount, const int *indices)
{
    int n = rc == MPI_SUCCESS ? *outcount : 0;
    settle(who, rc != MPI_SUCCESS ? FAILED : n == MPI_UNDEFINED ? DONE_NONE : DONE_LISTED, 0, indices, n);
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    REAL(int, MPI_Wait, MPI_Request *, MPI_Status *);
    char who;
    if (!claim(req, 1, &who))
        return real_MPI_Wait(req, status);
    int rc = real_MPI_Wait(req, status);
    settle(&who, rc == MPI_SUCCESS ? DONE_ALL : FAILED, 0, NULL, 0);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    REAL(int, MPI_Test, MPI_Request *, int *, MPI_Status *);
    char who;
    if (!claim(req, 1, &who))
        return real_MPI_Test(req, flag, status);
    int rc = real_MPI_Test(req, flag, status);
    settle(&who, rc != MPI_SUCCESS ? FAILED : *flag ? DONE_ALL : DONE_NONE, 0, NULL, 0);
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    REAL(int, MPI_Waitall, int, MPI_Request *, MPI_Status *);
    char who;
    if (!claim(reqs, n, &who))
        return real_MPI_Waitall(n, reqs, statuses);
    int rc = real_MPI_Waitall(n, reqs, statuses);
    settle(&who, rc == MPI_SUCCESS ? DONE_ALL : FAILED, 0, NULL, 0);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    REAL(int, MPI_Testall, int, MPI_Request *, int *, MPI_Status *);
    char who;
    if (!claim(reqs, n, &who))
        return real_MPI_Testall(n, reqs, flag, statuses);
    int rc = real_MPI_Testall(n, reqs, flag, statuses);
    settle(&who, rc != MPI_SUCCESS ? FAILED : *flag ? DONE_ALL : DONE_NONE, 0, NULL, 0);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    REAL(int, MPI_Waitany, int, MPI_Request *, int *, MPI_Status *);
    char who;
    if (!claim(reqs, n, &who))
        return real_MPI_Waitany(n, reqs, index, status);
    int rc = real_MPI_Waitany(n, reqs, index, status);
    settle(&who, rc != MPI_SUCCESS ? FAILED : *index == MPI_UNDEFINED ? DONE_NONE : DONE_ONE, *index, NULL, 0);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    REAL(int, MPI_Testany, int, MPI_Request *, int *, int *, MPI_Status *);
    char who;
    if (!claim(reqs, n, &who))
        return real_MPI_Testany(n, reqs, index, flag, status);
    int rc = real_MPI_Testany(n, reqs, index, flag, status);
    settle(&who, rc != MPI_SUCCESS ? FAILED : *flag && *index != MPI_UNDEFINED ? DONE_ONE : DONE_NONE, *index, NULL, 0);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    REAL(int, MPI_Waitsome, int, MPI_Request *, int *, int *, MPI_Status *);
    char who;
    if (!claim(reqs, n, &who))
        return real_MPI_Waitsome(n, reqs, outcount, indices, statuses);
    int rc = real_MPI_Waitsome(n, reqs, outcount, indices, statuses);
    return settle_some(&who, rc, outcount, indices);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    REAL(int, MPI_Testsome, int, MPI_Request *, int *, int *, MPI_Status *);
    char who;
    if (!claim(reqs, n, &who))
        return real_MPI_Testsome(n, reqs, outcount, indices, statuses);
    int rc = real_MPI_Testsome(n, reqs, outcount, indices, statuses);
    return settle_some(&who, rc, outcount, indices);
}

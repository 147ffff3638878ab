/* comm.c - the world ranks of an MPI communicator, cached on the communicator as an attribute (agent/mpi/comm.h). */
#include "agent/mpi/comm.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "agent/mode.h"
#include "common/consensus.h"

/* One communicator's answer, kept as its attribute. */
typedef struct comm_entry {
    int size;
    int listed;     /* every member is a rank of MPI_COMM_WORLD */
    int inter;      /* an intercommunicator: its collectives leave its local group's copies unlike (see comm.h) */
    uint64_t key;   /* cons_key of the ranks when listed */
    uint64_t calls; /* consensus collectives counted so far (comm_sampled), atomic */
    int ranks[];    /* world ranks, in the communicator's rank order */
} comm_entry;

/* PMPI entry points, looked up once: NULL when MPI lacks one (the communicator is then not recorded). Unlike the
 * wrappers' own, whose real function the program called and must exist, a missing one here only costs the field. */
static struct {
    int (*create_keyval)(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *, int *, void *);
    int (*get_attr)(MPI_Comm, int, void *, int *);
    int (*set_attr)(MPI_Comm, int, void *);
    int (*comm_group)(MPI_Comm, MPI_Group *);
    int (*group_size)(MPI_Group, int *);
    int (*translate)(MPI_Group, int, const int[], MPI_Group, int[]);
    int (*group_free)(MPI_Group *);
    int (*test_inter)(MPI_Comm, int *); /* optional: without it no communicator counts as an intercommunicator */
    MPI_Comm world;                     /* MPI_COMM_WORLD, looked up: in Open MPI the macro names libmpi's object */
    int keyval, ok;
} M;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *fn(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    return f ? f : dlsym(RTLD_DEFAULT, name);
}

/* no_copy - the attribute's copy callback: a duplicated communicator computes its own (MPI_COMM_NULL_COPY_FN, which
 * is a symbol of libmpi: this library must load into programs without MPI, so it names no symbol of libmpi). */
static int no_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

/* drop - the attribute's delete callback: MPI frees the communicator, its answer goes with it. */
static int drop(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    free(value);
    return MPI_SUCCESS;
}

static void setup(void)
{
    *(void **)&M.create_keyval = fn("PMPI_Comm_create_keyval");
    *(void **)&M.get_attr = fn("PMPI_Comm_get_attr");
    *(void **)&M.set_attr = fn("PMPI_Comm_set_attr");
    *(void **)&M.comm_group = fn("PMPI_Comm_group");
    *(void **)&M.group_size = fn("PMPI_Group_size");
    *(void **)&M.translate = fn("PMPI_Group_translate_ranks");
    *(void **)&M.group_free = fn("PMPI_Group_free");
    *(void **)&M.test_inter = fn("PMPI_Comm_test_inter");
    /* an object, not a function: searched from the program first, since a program that names MPI_COMM_WORLD may
     * hold the object itself (a copy relocation) and libmpi's own copy is then unused */
    M.world = (MPI_Comm)dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
    if (!M.create_keyval || !M.get_attr || !M.set_attr || !M.comm_group || !M.group_size || !M.translate ||
        !M.group_free || !M.world)
        return;
    M.ok = M.create_keyval(no_copy, drop, &M.keyval, NULL) == MPI_SUCCESS;
}

/* compute - the communicator's entry (malloc'd), or NULL. */
static comm_entry *compute(MPI_Comm comm)
{
    MPI_Group g, world;
    int n = 0;
    if (M.comm_group(comm, &g) != MPI_SUCCESS)
        return NULL;
    comm_entry *e = NULL;
    int *mine = NULL;
    if (M.group_size(g, &n) != MPI_SUCCESS || n <= 0 || M.comm_group(M.world, &world) != MPI_SUCCESS)
        goto out_free_group;
    e = malloc(sizeof(*e) + (size_t)n * sizeof(int));
    mine = malloc((size_t)n * sizeof(int));
    if (e && mine) {
        e->size = n;
        e->calls = 0;
        e->inter = 0;
        if (M.test_inter && M.test_inter(comm, &e->inter) != MPI_SUCCESS)
            e->inter = 1; /* not known: not a consensus place */
        for (int i = 0; i < n; i++)
            mine[i] = i;
        if (M.translate(g, n, mine, world, e->ranks) != MPI_SUCCESS) {
            free(e);
            e = NULL;
        } else {
            e->listed = 1;
            for (int i = 0; i < n; i++) {
                e->listed &= e->ranks[i] != MPI_UNDEFINED && e->ranks[i] >= 0;
                mine[i] = e->ranks[i]; /* the same bits as uint32_t, for the key */
            }
            e->key = e->listed ? cons_key((const uint32_t *)mine, (size_t)n) : 0;
        }
    } else {
        free(e);
        e = NULL;
    }
    free(mine);
    M.group_free(&world);
out_free_group:
    M.group_free(&g);
    return e;
}

int comm_of(MPI_Comm comm, ls_comm *out)
{
    uint64_t key;
    int rc = comm_key_of(comm, out, &key);
    return rc < 0 && !out->size ? -1 : 0;
}

/* entry_of - the communicator's cached entry, computed and attached at its first use; NULL when not known. */
static comm_entry *entry_of(MPI_Comm comm)
{
    pthread_once(&once, setup);
    if (!M.ok)
        return NULL;
    comm_entry *e = NULL;
    int found = 0;
    if (M.get_attr(comm, M.keyval, &e, &found) != MPI_SUCCESS)
        return NULL;
    if (!found || !e) {
        e = compute(comm);
        if (!e)
            return NULL;
        if (M.set_attr(comm, M.keyval, e) != MPI_SUCCESS) {
            free(e);
            return NULL;
        }
    }
    return e;
}

MPI_Comm comm_world(void)
{
    pthread_once(&once, setup);
    return M.world; /* NULL when not found */
}

int comm_sampled(MPI_Comm comm, unsigned every)
{
    if (every <= 1)
        return 1;
    comm_entry *e = entry_of(comm);
    return !e || mode_sampled(__atomic_fetch_add(&e->calls, 1, __ATOMIC_RELAXED), every);
}

int comm_key_of(MPI_Comm comm, ls_comm *out, uint64_t *key)
{
    *out = (ls_comm){0, NULL};
    comm_entry *e = entry_of(comm);
    if (!e)
        return -1;
    if (!e->listed) { /* a member outside MPI_COMM_WORLD (a spawned process): no list, no key */
        *out = (ls_comm){e->size, NULL};
        return -1;
    }
    *out = (ls_comm){e->size, e->ranks};
    if (e->inter)
        return -1; /* its local group, listed; no key */
    *key = e->key;
    return 0;
}

int comm_consensus(MPI_Comm comm)
{
    comm_entry *e = entry_of(comm);
    return e && e->listed && !e->inter;
}

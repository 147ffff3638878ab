/* mpiseen.c - whether a process's MPI calls reached Lockstep's MPI wrappers (agent/mpiseen.h). */
#include "agent/mpiseen.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"

static long seen; /* atomic: MPI wrapper calls */
static int warned;

void mpiseen_note(const char *name)
{
    if (name && !strncmp(name, "mpi.", 4))
        __atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED);
}

/* warn_unloaded - the wrappers are not in front of MPI: say where they are (beside this agent) and how to put them
 * there, for this job or for the site. */
static void warn_unloaded(void)
{
    char wrap[4096] = "liblockstep_mpi.so";
    Dl_info self;
    if (dladdr((void *)warn_unloaded, &self) && self.dli_fname) {
        const char *slash = strrchr(self.dli_fname, '/');
        if (slash && (size_t)(slash - self.dli_fname) + sizeof("/liblockstep_mpi.so") <= sizeof(wrap)) {
            memcpy(wrap, self.dli_fname, (size_t)(slash - self.dli_fname));
            memcpy(wrap + (slash - self.dli_fname), "/liblockstep_mpi.so", sizeof("/liblockstep_mpi.so"));
            if (access(wrap, R_OK) != 0)
                snprintf(wrap, sizeof(wrap), "liblockstep_mpi.so");
        }
    }
    agent_warn_once(&warned,
                    "this rank initialized MPI, but liblockstep_mpi.so is not loaded (or another library's MPI "
                    "functions come first): its MPI calls were not recorded; preload it for the job "
                    "(LD_PRELOAD=%s srun|sbatch --lockstep ...: the plugin keeps it), or add it to the plugin's "
                    "agent= in plugstack.conf for every job",
                    wrap);
}

const char *mpiseen_unseen(void)
{
    if (__atomic_load_n(&seen, __ATOMIC_RELAXED))
        return NULL;
    /* MPI_Initialized may be called before MPI_Init and after MPI_Finalize: it says whether MPI_Init ran. */
    int (*initialized)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "PMPI_Initialized");
    int on = 0;
    if (!initialized || initialized(&on) != 0 || !on)
        return NULL;
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, "MPI_Allreduce");
    int ours = f && dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "liblockstep_mpi");
    if (ours)
        agent_warn_once(&warned, "this rank initialized MPI, but none of its MPI calls reached liblockstep_mpi.so: "
                                 "they took a way in it does not interpose (it records Open MPI's C, mpif.h, "
                                 "use mpi and use mpi_f08 calls)");
    else
        warn_unloaded();
    return ours ? "unseen" : "unloaded";
}

/* status.c - a twin group's status (server/rules/status.h): pure, tested from a table of cases. */
#include "server/rules/status.h"

#include <stdio.h>

const char *const TWIN_STATUSES[] = {"pending", "diverged", "incomplete", "match", NULL};

/* nothing_shared - why runs that all ended share nothing to compare: the one reason that applies. */
static void nothing_shared(const twin_facts *f, char *why, size_t cap)
{
    char counts[64] = "";
    int differ = f->min_ranks > 0 && f->max_ranks > f->min_ranks;
    if (differ)
        snprintf(counts, sizeof(counts), "%d to %d ranks", f->min_ranks, f->max_ranks);
    if (f->silent >= f->nruns)
        snprintf(why, cap, "every run ended, but none recorded anything (no records): was the agent loaded?");
    else if (f->silent > 0)
        snprintf(why, cap,
                 "every run ended, but %d of %d runs recorded nothing (no records): nothing to compare them with",
                 f->silent, f->nruns);
    else if (differ && f->shardless > 0)
        snprintf(why, cap,
                 "every run ended, but the runs have different rank counts (%s), so only their tensor shards "
                 "(ls_tensor_shard) are compared, and %d of %d runs recorded no shard (no shards)",
                 counts, f->shardless, f->nruns);
    else if (differ)
        snprintf(why, cap,
                 "every run ended, but the runs (of different rank counts, %s, compared on their tensor shards) "
                 "recorded no step in common",
                 counts);
    else
        snprintf(why, cap, "every run ended, but the runs recorded no step in common");
}

const char *twin_status(const twin_facts *f, char *why, size_t cap)
{
    if (f->nruns < 2) {
        snprintf(why, cap, "%s: waiting for a twin to compare with", f->nruns ? "one run" : "no run");
        return "pending";
    }
    if (f->diverged && f->failed && f->missing) {
        snprintf(why, cap,
                 "%d of %d runs failed (see each run's exit); the first difference is a record some run "
                 "lacks, which the failure explains: nothing diverged before it",
                 f->failed, f->nruns);
        return "incomplete";
    }
    if (f->diverged) {
        if (f->failed)
            snprintf(why, cap, "the runs diverged (and %d of them failed)", f->failed);
        else
            snprintf(why, cap, "the runs diverged");
        return "diverged";
    }
    if (f->running && f->awaiting) { /* found from the digests; the records that say where and why are asked */
        snprintf(why, cap,
                 "%d of %d runs still running; their digests show a difference on %ld rank%s: lockstepd asked the "
                 "agents, which held the records back (digest streaming), for the records that say where and why "
                 "(awaiting_records): a running rank sends them with its next batch, an ended run's wait in its "
                 "spool for `lockstep replay --steps asked DIR`",
                 f->running, f->nruns, f->awaiting, f->awaiting > 1 ? "s" : "");
        return "pending";
    }
    if (f->running) {
        snprintf(why, cap, "%d of %d runs still running; they agree so far", f->running, f->nruns);
        return "pending";
    }
    if (f->failed) {
        snprintf(why, cap,
                 "%d of %d runs failed (see each run's exit); %s, but a failed run says nothing about "
                 "the steps it did not reach",
                 f->failed, f->nruns,
                 f->unchecked ? "nothing diverged in what could be compared"
                              : "nothing diverged in what they recorded");
        return "incomplete";
    }
    if (f->unchecked && f->removed) { /* no agent has those records any more: nobody can send them */
        snprintf(why, cap,
                 "every run ended; the comparison of %ld rank%s reached a step whose records retention "
                 "removed from a run (retain_days): the step digests differ there, so the runs are not identical, but "
                 "the records that would say where they part are gone, and the steps after it are not compared "
                 "(records_removed says which run, rank and step)",
                 f->removed, f->removed > 1 ? "s" : "");
        return "incomplete";
    }
    if (f->unchecked && f->awaiting) { /* the agents that held those records back have ended: only a person can */
        snprintf(
            why, cap,
            "every run ended; the comparison of %ld rank%s waits for records %s agents held back "
            "(digest streaming) and left in their spools: `lockstep replay --steps asked DIR` on the nodes "
            "that ran them sends them (`lockstep twins GROUP` and awaiting_records say which runs, ranks and steps)",
            f->awaiting, f->awaiting > 1 ? "s" : "", f->awaiting > 1 ? "their" : "its");
        return "pending";
    }
    if (f->unchecked) {
        snprintf(why, cap, "every run ended; the comparison of %ld rank%s is not finished", f->unchecked,
                 f->unchecked > 1 ? "s" : "");
        return "pending";
    }
    if (f->comparable <= 0 && (f->mpi_unloaded || f->mpi_unseen)) {
        int n = f->mpi_unloaded + f->mpi_unseen > f->nruns ? f->nruns : f->mpi_unloaded + f->mpi_unseen;
        snprintf(why, cap,
                 "every run ended, but they recorded nothing to compare: %d of %d runs made MPI calls that Lockstep "
                 "did not see (%s)",
                 n, f->nruns,
                 f->mpi_unloaded ? "liblockstep_mpi.so was not their MPI library's front: preload it for the job "
                                   "(LD_PRELOAD=.../liblockstep_mpi.so srun|sbatch --lockstep ...), or add it to the "
                                   "plugin's agent= in plugstack.conf"
                                 : "liblockstep_mpi.so records Open MPI's C calls and its Fortran ones (mpif.h, use "
                                   "mpi, use mpi_f08); these calls took another way in: another MPI library or "
                                   "binding");
        return "incomplete";
    }
    if (f->comparable <= 0) {
        nothing_shared(f, why, cap);
        return "incomplete";
    }
    snprintf(why, cap, "every run ended with exit 0 and agreed on every record of the steps they share");
    return "match";
}

/* mdiff.h - the manifest diff of twin runs: what differs that can change their bits, apart from what differs by nature.
 * One implementation for lockstepd's API, its suspects rules, the CLI and (through the API) the dashboard.
 *
 * Pure: JSON in, JSON out (jansson), no I/O. Each rank's manifests (agent/manifest.c) are flattened to
 * dotted keys and compared across the runs, and the runs themselves on their command line and shape:
 *
 *   libraries     a set by path: a library added, removed, or with another hash (load order is no difference)
 *   files         files named by the environment are compared by their content (the file's hash), their
 *                 paths kept apart as identities; the NCCL graph dump by its text, not its file name; regular
 *                 files named on the command line (arg_files) by their content, under the name the command line
 *                 gives them ("file:input.cfg")
 *   used          the facts the program reported as it ran (ls_manifest_set: "used.threads.torch_intra") and
 *                 the thread counts the agent read (OpenMP, MKL, OpenBLAS): configuration
 *   command, argv the launch's command line and each rank's own arguments
 *   shape         ranks and nodes of each run (nodes: those its manifests name, when every rank sent one);
 *                 each rank's job.* (tasks, nodes, cpus per task, threads)
 *   identities    job and step ids, users, node and host names, GPU uuids and bus ids, per-run paths
 *                 (trace and spool directories, the graph dump's path): listed apart, never an explanation
 *
 * A difference is "configuration" when it can change results (the determinism environment, versions,
 * binaries, libraries, files, command line, shape, and the LOCKSTEP_* settings that change what is
 * recorded) and "other" otherwise (kernel release, CPU model, the server's address); the environment's classes
 * are common/envrule.h's. A version or hash one manifest lacks (the agent had not seen MPI or CUDA yet) is not
 * compared; an environment variable set in some runs only is a difference. A secret-named variable is there as
 * its keyed digest (common/envrule.h), compared like a value; digests under different keys (runs of different
 * users) cannot be, and are "other".
 */
#ifndef COMMON_JSON_MDIFF_H
#define COMMON_JSON_MDIFF_H

#include <jansson.h>

/* One run of the group, as the diff sees it (everything borrowed). */
typedef struct md_run {
    const char *run_id, *job_id, *step_id, *user, *nodes, *command;
    long ranks;        /* ranks registered; <= 0 when unknown */
    json_t *manifests; /* array of {"rank": N, "manifest": {...}} (NULL: none) */
} md_run;

/* md_key_class - "identity", "configuration" or "other" for a flattened manifest key ("env.NCCL_ALGO",
 * "gpus.0.uuid", "argv", "job.tasks", "file:NCCL_TOPO_FILE", "library:/usr/lib/x.so"). */
const char *md_key_class(const char *key);

/* md_diff - compare `n` runs. Returns a new object
 *   {"explains": bool, "summary": "...",
 *    "diffs":      [{"key", "class", "rank", "ranks", "change"?, "values": [{"run_id", "value"}]}],
 *    "identities": [{"key", "rank", "ranks", "values": [...]}]}
 * where "rank" is the first rank the entry holds for (null for run-level keys), "ranks" every rank it
 * holds for identically (null for run-level keys), "change" ("added", "removed", "changed") is set for
 * libraries and for environment variables set in some runs only, relative to the first run, and
 * "explains" is true when some difference is of class configuration ("summary" then names them; else it
 * says that nothing that can change results differs). Returns NULL only when out of memory. */
json_t *md_diff(const md_run *runs, int n);

#endif /* COMMON_JSON_MDIFF_H */

/* manifest.h - what a rank ran on and with: host, GPUs, library versions, determinism environment, binary hashes. */
#ifndef AGENT_MANIFEST_H
#define AGENT_MANIFEST_H

#include <stdint.h>

#include "common/jsonw.h"

/* manifest_build - write rank `rank`'s manifest as one JSON object to `w`:
 * rank, host, kernel, cpu_model, gpus (only when the process has already
 * loaded CUDA: the agent never initializes CUDA itself), cuda_driver,
 * cuda_runtime, nccl_version, mpi_version (when those libraries are loaded),
 * env (the determinism-relevant variables; a secret-named one, common/envrule.h, is left out or, when it
 * can change results, replaced by its keyed digest: agent/digestkey.h),
 * nccl_graph (NCCL_GRAPH_DUMP_FILE's text when present), exe with its XXH3,
 * and libraries (every mapped shared object with its XXH3: those of `libs`
 * when not NULL, else those mapped now), argv, job (the launcher's shape),
 * files (files named by the determinism environment, hashed), arg_files (regular files named on the command
 * line, hashed: agent/used.h). Hashing can be
 * switched off with LOCKSTEP_MANIFEST_HASH=0. Once CLOCK_MONOTONIC passes
 * *deadline (read atomically; NULL or 0: never), the remaining libraries are
 * listed without hashes and "hashes_incomplete" is set. Errors leave fields
 * out; the caller checks jw_text for allocation failure. */
void manifest_build(jw *w, long rank, const int64_t *deadline, const char *libs);

/* manifest_libraries - the shared objects mapped now (/proc/self/maps, the executable left out, each once,
 * in map order), one path a line, as a new string (caller frees), or NULL when it cannot be read or memory
 * runs out. manifest_build lists these (`libs`) instead of reading the maps itself when given them. */
char *manifest_libraries(void);

/* manifest_hash_file - XXH3-64 of a file's bytes as 16 hex digits in `out`
 * (17 bytes). Returns 0, or -1 when it cannot be read. */
int manifest_hash_file(const char *path, char out[17]);

/* manifest_cmdline - this process's arguments (/proc/self/cmdline, at most 64 KiB: NUL-separated, NUL-terminated)
 * as a new buffer the caller frees, their length in *n; NULL when it cannot be read or memory runs out. */
char *manifest_cmdline(size_t *n);

#endif /* AGENT_MANIFEST_H */

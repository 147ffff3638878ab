/* used.h - configuration as the program really uses it: files named on its command line, thread counts its
 * libraries run with, and facts the program's own binding reports (ls_manifest_set). */
#ifndef AGENT_USED_H
#define AGENT_USED_H

#include "common/jsonw.h"

#define USED_ARG_FILES_MAX 16          /* files named on the command line that are fingerprinted */
#define USED_ARG_FILE_BYTES (4L << 20) /* the largest such file fingerprinted */
#define USED_KEY_MAX 63                /* bytes of a fact's key */
#define USED_VALUE_MAX 127             /* bytes of a fact's value */
#define USED_FACTS_MAX 32              /* facts one rank may report */

/* used_arg_files - the regular files named by this process's arguments (argv[1..], and the value of an
 * "--opt=PATH" argument), at most USED_ARG_FILES_MAX of at most USED_ARG_FILE_BYTES each, never one under /proc,
 * /sys or /dev, as "arg_files": [{"arg": ARG, "xxh3": HEX}] into `w` (the key left out when there is none):
 * twins compare them by content. ARG is the path as the command line names it. */
void used_arg_files(jw *w);

/* used_key_valid - 1 when `key` may name a fact: 1 to USED_KEY_MAX bytes of letters, digits, '_', '-' and '.'. */
int used_key_valid(const char *key);

/* used_probe_threads - on the program's own thread (OpenMP's thread count is a per-thread setting): read the
 * thread counts of the OpenMP runtime (omp_get_max_threads), MKL (mkl_get_max_threads) and OpenBLAS
 * (openblas_get_num_threads) the process has loaded, found with dlsym among the libraries `libs` lists (one path
 * a line, manifest_libraries; NULL: the global scope only) the first time, never loaded by the agent, and report
 * each as a fact ("threads.omp", "threads.mkl", "threads.openblas") when it changed. */
void used_probe_threads(const char *libs);

#endif /* AGENT_USED_H */

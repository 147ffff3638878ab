/* spool.h - the on-disk spool of one rank: batches the server has not acknowledged yet, and what sends them later (a
 * spool send).
 *
 * Layout: ROOT/KEY/rank-NNNNN/ holds
 *   spool.meta          key=value lines: server, token, ca_file, run_id (once known), rank, job_id, step_id,
 *                       register (the registration JSON, one line)
 *   manifest.json       the rank's manifest, until the server has it
 *   batch-SEQ.lsbatch   one batch each: a CRC-framed record stream (common/record.h, kind REC_KIND_BATCH),
 *                       SEQ zero-padded so names sort in batch order
 *   held-LO-HI-SEQ.lsheld  digest streaming: records this rank held back (agent/hold.h), per step a batch ready
 *                       to post when lockstepd asks, steps LO..HI; kept after the run for `lockstep replay --steps`
 *   end.json            the rank's end report, until the server has it
 *   lock                flock()ed by the process that owns the directory (a live agent or a spool send)
 * Every file is written to a temporary name and renamed, so a crash never leaves half a file under its name.
 *
 * Every file is reached through the rank directory's descriptor, opened once without following a link: no name
 * in it is ever followed as a link, only regular files are read, a temporary file is a new one (O_EXCL, a name
 * nobody can guess). `lockstep replay` opens a spool another process prepared; it refuses one whose directory or
 * files belong to another user unless forced (spool_open_dir).
 */
#ifndef AGENT_SPOOL_H
#define AGENT_SPOOL_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>

#define SPOOL_META "spool.meta"
#define SPOOL_MANIFEST "manifest.json"
#define SPOOL_END "end.json"
#define SPOOL_BATCH_FMT "batch-%020llu.lsbatch"
#define SPOOL_HELD_PREFIX "held-"
#define SPOOL_HELD_FMT "held-%020llu-%020llu-%020llu.lsheld" /* steps + 2^63 (names sort by step), first seq */

typedef struct spool_meta {
    char server[1024];
    char token[512];
    char ca_file[1024];
    char run_id[256];
    char job_id[256];
    char step_id[256];
    long rank;
    char reg[8192]; /* the registration body (JSON) */
} spool_meta;

typedef struct spool {
    char dir[4096];
    int dir_fd;  /* the rank directory, -1 when closed */
    int lock_fd; /* -1 when not locked */
    int owned;   /* 1: every file read must belong to this process's user (spool_open_dir without force) */
} spool;

/* spool_open - create ROOT/KEY/rank-NNNNN if needed and take its lock
 * without waiting. Returns 0; or -1 with a reason in `why` (also when another
 * live process holds the lock: then *busy is set to 1 when busy is not
 * NULL). */
int spool_open(spool *s, const char *root, const char *key, unsigned rank, int *busy, char *why, size_t cap);

/* spool_open_dir - take the lock of an existing rank directory `dir`
 * without waiting. Unless `force`, the directory must belong to this
 * process's user, and so must every file spool_get reads from it later: a
 * spool another user prepared is refused. `dir` itself must not be a link.
 * Returns 0, or -1 (busy as for spool_open). */
int spool_open_dir(spool *s, const char *dir, int force, int *busy, char *why, size_t cap);

/* spool_close - release the lock and the directory. The directory stays. */
void spool_close(spool *s);

/* spool_put - write `len` bytes as file `name` in the spool, atomically
 * (temporary file + rename). Returns 0 or -1 with `why`. */
int spool_put(const spool *s, const char *name, const void *buf, size_t len, char *why, size_t cap);

/* spool_put_batch - spool_put under the batch file name of `seq`. */
int spool_put_batch(const spool *s, uint64_t seq, const void *buf, size_t len, char *why, size_t cap);

/* spool_get - read file `name` into a new NUL-terminated buffer (*buf, owned
 * by the caller, *len without the NUL). Returns 1 when read, 0 when the file
 * does not exist, -1 on error with `why` (also for a link, anything but a
 * regular file, or, after spool_open_dir without force, another user's file). */
int spool_get(const spool *s, const char *name, unsigned char **buf, size_t *len, char *why, size_t cap);

/* spool_remove - delete file `name`; a missing file is fine. Returns 0 or -1. */
int spool_remove(const spool *s, const char *name);

/* spool_rename - rename file `from` to `to` inside the spool. Returns 0 or -1. */
int spool_rename(const spool *s, const char *from, const char *to);

/* spool_size - the size of regular file `name`, or -1 when it is not one. */
long long spool_size(const spool *s, const char *name);

/* spool_list - a listing of the spool's directory (a new DIR, caller closedir), or NULL. */
DIR *spool_list(const spool *s);

/* spool_batches - the sequence numbers of the spooled batches, ascending, in
 * a new array (*seqs, owned by the caller; NULL when none). Returns the count,
 * or -1 with `why`. */
long spool_batches(const spool *s, uint64_t **seqs, char *why, size_t cap);

/* spool_meta_write / spool_meta_read - the spool.meta file. read returns 1,
 * 0 when absent, -1 on error. */
int spool_meta_write(const spool *s, const spool_meta *m, char *why, size_t cap);
int spool_meta_read(const spool *s, spool_meta *m, char *why, size_t cap);

/* spool_is_empty - 1 when nothing is left to send (no batch, manifest or
 * end file). */
int spool_is_empty(const spool *s);

/* spool_has_held - 1 when the spool keeps held records (held-* files). */
int spool_has_held(const spool *s);

/* spool_remove_dir - remove the rank directory (its meta and lock files)
 * when nothing is left to send and no held records are kept, then its parent
 * when that is empty. Returns 0 or -1. The lock is released either way. */
int spool_remove_dir(spool *s);

#endif /* AGENT_SPOOL_H */

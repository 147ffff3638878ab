/* agent.h - what the agent's parts share inside liblockstep (not public). */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <stdarg.h>
#include <stddef.h>

#include "common/record.h"

/* agent_set_error - set the calling thread's ls_last_error message. */
void agent_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* agent_last_error - the calling thread's last error message ("" if none). */
const char *agent_last_error(void);

/* agent_warn_once - print one "lockstep: ..." line on stderr per `key`
 * (a static flag owned by the caller); the job goes on. */
void agent_warn_once(int *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* agent_env_rank - the rank from LOCKSTEP_RANK, torchrun's RANK (with
 * LOCAL_RANK), OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID
 * (first set wins: the innermost launcher before the Slurm step), else 0.
 * Returns -1 when the variable that is set is not a rank number; *which
 * names it. */
long agent_env_rank(const char **which);

/* agent_env_ranks - the job's rank count, as the run registers it: LOCKSTEP_RANKS, torchrun's WORLD_SIZE (with
 * LOCAL_RANK), SLURM_NTASKS, OMPI_COMM_WORLD_SIZE or PMI_SIZE (first set wins), else 1. */
long agent_env_ranks(void);

/* agent_check_name - 0 when `name` is a valid record name (1..LS_NAME_MAX
 * bytes, no control characters), its length in *len; else -1 with the error
 * set. */
int agent_check_name(const char *name, size_t *len);

/* agent_admits - whether a record `name` (`len` bytes) of `level` (with
 * `state`: an entry of the open state block) would be kept now: 1 kept, 0
 * filtered out (trace window, LOCKSTEP_IGNORE) or lockstep off, -1 with the
 * error set outside ls_init..ls_shutdown (or, for a state entry, when no
 * block is open). Lets callers skip hashing. `fn` names the public function
 * in errors. */
int agent_admits(int level, int state, const char *name, size_t len, const char *fn);

/* agent_record - admit `r` again (the state may have changed since
 * agent_admits; LOCKSTEP_IGNORE applies, LOCKSTEP_STEP_ON too unless it is a
 * state entry), number it (seq, occurrence, step; a state entry gets the
 * open block's step, kind flag and its own occurrence count) and hand it to
 * the trace and the sender. `r`'s name, inputs, chunks and ext are read
 * during the call only. Returns 0 when recorded or filtered out, -1 with the
 * error set. */
int agent_record(rec_record *r, int state, const char *fn);

/* A consensus place asked for a record (extension field 6): the group's key, its size and, when known, its world
 * ranks (any order); `x` holds the record's other extension fields and `ext` (REC_EXT_ENCODED_MAX bytes) takes them
 * re-encoded with the place. */
typedef struct agent_cons {
    uint64_t key;
    uint32_t size;
    const uint32_t *ranks;
    size_t n_ranks;
    rec_ext *x;
    unsigned char *ext;
} agent_cons;

/* agent_record_cons - agent_record for a record that is no state entry, with its call site's cached decisions in
 * `e` (agent/callsite.h; NULL: none) and, when `cons` is not NULL, an output that must be the same on every member of
 * its group: it gets the next place of (step, key) and is folded into its window's consensus digest
 * (agent/conswin.h); a key the window table has no room for is recorded without a place. Returns 0 when recorded or
 * left out, -1 with the error set. */
struct cs_entry;
int agent_record_cons(rec_record *r, const agent_cons *cons, struct cs_entry *e, const char *fn);

/* A record reserved when its operation starts and made when it completes (a nonblocking collective): its step,
 * occurrence and consensus place are taken at the start, in the order the program made its calls, so that ranks and
 * twins that complete requests in other orders still line up. `epoch` is the consensus table's at the reservation:
 * a step change since (the table flushed) leaves the ticket nothing to fill. */
typedef struct agent_ticket {
    uint64_t epoch;
    int64_t step;
    uint64_t key; /* the consensus key, when placed */
    uint32_t occurrence;
    uint32_t index; /* the consensus place, when placed */
    uint8_t level;
    uint8_t placed; /* it holds a consensus place */
    uint8_t live;   /* reserved, not yet filled or dropped */
} agent_ticket;

/* agent_reserve - admit a record `name` (`len` bytes) of `level` now (trace window, consensus mode, LOCKSTEP_IGNORE
 * with call site `site` and its entry `e`, LOCKSTEP_STEP_ON: a step it opens opens now) and reserve its occurrence
 * and, with `cons`, the next consensus place of (step, key) (agent/conswin.h: its window waits for it). Returns 1
 * with `t` live (fill or drop it exactly once), 0 left out (`t` not live), -1 with the error set. */
int agent_reserve(const char *name, size_t len, int level, const rec_site *site, struct cs_entry *e,
                  const agent_cons *cons, agent_ticket *t, const char *fn);

/* agent_fill - record `r` (name, fingerprint, shape, site and other fields set by the caller) with `t`'s step,
 * occurrence, level and consensus place (`cons` gives the extension buffers: x holds the record's other fields, ext
 * takes them re-encoded), and fold it into its window. Nothing when `t` is not live or its epoch is past (the step
 * changed while the operation was open: on this rank the record is absent, and its window was never sent). Returns
 * 0, or -1 with the error set. */
int agent_fill(agent_ticket *t, rec_record *r, const agent_cons *cons);

/* agent_drop - give `t` up (its operation failed or cannot be read): no record, and its window is never sent. */
void agent_drop(agent_ticket *t);

/* agent_new_uuid - a random (version 4) UUID in `out` (37 bytes). */
void agent_new_uuid(char out[37]);

#endif /* AGENT_AGENT_H */

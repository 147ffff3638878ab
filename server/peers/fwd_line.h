/* fwd_line.h - one forward to a lease holder (forward.h) as a line of JSON, and back. For a twin group: a batch's
 * step sums {"g": group, "k": run key, "r": rank, "c": records counted, "f": flags, "s": [[step, n, digest, inputs,
 * inputs unknown], ...]} (digests as signed 64-bit integers), or a rank to look at {"g": group, "r": rank, "l": true}.
 * For a run's consensus: a batch's consensus digests {"q": run key, "r": rank, "t": commit time, "d": [[step, key,
 * window, records, fold, members, [listed ranks]], ...]}, or the run to check {"q": run key, "l": true}. Pure: no
 * database, for the unit test. */
#ifndef SERVER_PEERS_FWD_LINE_H
#define SERVER_PEERS_FWD_LINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/batch.h"
#include "server/store/cons_batch.h"

#define FWD_STEPS_PER_LINE 40 /* steps of one batch a line at most: a line stays well inside a notification */
#define FWD_CONS_PER_LINE 8   /* consensus digests a line at most (64 listed ranks each) */

/* Flags of forwarded sums: the batch carried step digests (digest streaming: a differing step waits for its
 * records, so its look may wait a little longer). */
enum { FWD_DIGESTS = 1 };

/* fwd_sums_fn - forwarded sums of a batch (`n` steps, `counted` records added to the rank's progress). */
typedef void (*fwd_sums_fn)(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n,
                            int64_t counted, int flags);
/* fwd_look_fn - a forwarded rank to look at. */
typedef void (*fwd_look_fn)(const char *group, int rank);

/* fwd_cons_fn - forwarded consensus digests of a batch of run `run_key`'s rank `rank`, committed at `commit_s`.
 * fwd_cons_look_fn - a forwarded run to check. */
typedef void (*fwd_cons_fn)(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s);
typedef void (*fwd_cons_look_fn)(int64_t run_key);

/* What a listener does with the lines it gets: NULL handlers ignore theirs. */
typedef struct fwd_handlers {
    fwd_sums_fn sums;
    fwd_look_fn look;
    fwd_cons_fn cons;
    fwd_cons_look_fn cons_look;
} fwd_handlers;

/* fwd_line_sums - the line of `n` (at most FWD_STEPS_PER_LINE) steps' sums; fwd_line_look - the line of a rank to
 * look at. New objects (NULL when out of memory or n is too large). */
json_t *fwd_line_sums(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted,
                      int flags);
json_t *fwd_line_look(const char *group, int rank);

/* fwd_line_cons - the line of `n` (at most FWD_CONS_PER_LINE) consensus digests; fwd_line_cons_look - the line of a
 * run to check. New objects (NULL when n is too large). */
json_t *fwd_line_cons(int64_t run_key, uint32_t rank, const srv_cons_digest *d, size_t n, double commit_s);
json_t *fwd_line_cons_look(int64_t run_key);

/* fwd_line_parse - one line handed to its handler in `h` (a NULL handler: taken, nothing called). Returns 0, or -1
 * when it is not such a line (nothing is called): not JSON, a field missing or of another type, a group name empty or
 * longer than 255 bytes, a rank outside 0..2^24, a run key not positive, more than FWD_STEPS_PER_LINE steps or
 * FWD_CONS_PER_LINE consensus digests, a digest of no members or more listed ranks than REC_COMM_LIST_MAX. */
int fwd_line_parse(const char *line, const fwd_handlers *h);

#endif /* SERVER_PEERS_FWD_LINE_H */

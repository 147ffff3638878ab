/* fwd_line.h - one forward to a twin group's lease holder (cmp_fwd.h) as a line of JSON, and back: a batch's step
 * sums {"g": group, "k": run key, "r": rank, "c": records counted, "f": flags, "s": [[step, n, digest, inputs,
 * inputs unknown], ...]} (digests as signed 64-bit integers), or a rank to look at {"g": group, "r": rank, "l": true}.
 * Pure: no database, for the unit test. */
#ifndef SERVER_TWINS_FWD_LINE_H
#define SERVER_TWINS_FWD_LINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store/batch.h"

#define FWD_STEPS_PER_LINE 40 /* steps of one batch a line at most: a line stays well inside a notification */

/* Flags of forwarded sums: the batch carried step digests (digest streaming: a differing step waits for its
 * records, so its look may wait a little longer). */
enum { FWD_DIGESTS = 1 };

/* cmp_fwd_sums_fn - forwarded sums of a batch (`n` steps, `counted` records added to the rank's progress). */
typedef void (*cmp_fwd_sums_fn)(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n,
                                int64_t counted, int flags);
/* cmp_fwd_look_fn - a forwarded rank to look at. */
typedef void (*cmp_fwd_look_fn)(const char *group, int rank);

/* fwd_line_sums - the line of `n` (at most FWD_STEPS_PER_LINE) steps' sums; fwd_line_look - the line of a rank to
 * look at. New objects (NULL when out of memory or n is too large). */
json_t *fwd_line_sums(const char *group, int64_t run_key, int rank, const store_step *steps, size_t n, int64_t counted,
                      int flags);
json_t *fwd_line_look(const char *group, int rank);

/* fwd_line_parse - one line handed to `sums` or `look`. Returns 0, or -1 when it is not such a line (nothing is
 * called): not JSON, a field missing or of another type, a group name empty or longer than 255 bytes, a rank
 * outside 0..2^24, more than FWD_STEPS_PER_LINE steps. */
int fwd_line_parse(const char *line, cmp_fwd_sums_fn sums, cmp_fwd_look_fn look);

#endif /* SERVER_TWINS_FWD_LINE_H */

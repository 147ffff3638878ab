/* cons_read.h - what a run's consensus check found, as the API shows it. */
#ifndef SERVER_CONSENSUS_CONS_READ_H
#define SERVER_CONSENSUS_CONS_READ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* cons_read_register - this module's prepared statements. */
void cons_read_register(void);

/* cons_read_json - run `run_key`'s consensus: {"status": "agree" | "disagree" | "none", "checked": N, "first": null
 * | {"step", "name", "occurrence", "comm_ranks", "comm_size", "odd_ranks", "clear", "odd_rank", "site", "node",
 * "gpu", "detected_at"}} ("none": no window judged yet; "name" is "" while the records of the step are awaited).
 * A new object, or NULL with the database's message in `err`. */
json_t *cons_read_json(int64_t run_key, char *err, size_t cap);

/* cons_read_list - the runs with a consensus disagreement, newest first, at most `limit`: {"items": [{"run_id",
 * "job_id", "user", "step", "name", "occurrence", "comm_ranks", "comm_size", "odd_ranks", "clear", "node", "gpu",
 * "detected_at"}]}. A new object, or NULL with the database's message in `err`. */
json_t *cons_read_list(int limit, char *err, size_t cap);

#endif /* SERVER_CONSENSUS_CONS_READ_H */

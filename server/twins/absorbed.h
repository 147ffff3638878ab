/* absorbed.h - a twin group's absorbed differences: collectives whose inputs differed on some ranks while their
 * outputs matched, as the comparison noted them (group_absorbed, sql/migrations/018_absorbed.sql), counted, with the
 * first one's rank, step, record and call site. Shown in the twin report; no evidence (server/rules/hw_rule.h). */
#ifndef SERVER_TWINS_ABSORBED_H
#define SERVER_TWINS_ABSORBED_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/record.h"

/* absorbed_register - prepare the statements absorbed_load runs. */
void absorbed_register(void);

/* absorbed_first - among `n` records of one rank's step, sorted by run then seq (frames_read_step), each with its
 * run in run_key[i], the first record of run `key0` whose twin in another run (same name and occurrence) has the
 * same fingerprint and other input fingerprints; NULL when none. Pure. */
const rec_record *absorbed_first(const rec_record *recs, const int64_t *run_key, size_t n, int64_t key0);

/* absorbed_load - group `group`'s absorbed differences as the twin API shows them: {"count": rank-steps noted,
 * "ranks": how many ranks, "first": {"rank", "step", "name", "occurrence", "seq", "site"}} (a new reference), or JSON
 * null when none. Runs on this thread's connection. Returns 0, or -1 with `err`. */
int absorbed_load(const char *group, json_t **out, char *err, size_t cap);

#endif /* SERVER_TWINS_ABSORBED_H */

/* attest.h - what slurmstepd attested of a job step (its node, ranks, user and hardware), stored. */
#ifndef SERVER_STORE_ATTEST_H
#define SERVER_STORE_ATTEST_H

#include <stddef.h>
#include <libpq-fe.h>

/* One node's word on one step of a job. */
typedef struct store_attestation {
    const char *job, *step, *node;
    const char *node_index; /* decimal text, or NULL when not given */
    const char *ranks;      /* the ranks as an integer array literal, "{0,1}" */
    const char *user, *nodes, *gpus;
    const char *by; /* "admin" or "slurmstepd" */
} store_attestation;

/* store_attest_register - register the prepared statements of this module. */
void store_attest_register(void);

/* store_attest_put - store `a` (a later word from the same node on the same step replaces it) and give the job's
 * runs its user where none was attested yet. Returns 0, or -1 with the database's message in `err`. */
int store_attest_put(const store_attestation *a, char *err, size_t cap);

/* store_attested_groups - the twin groups of the runs of step `step` of job `job` (at most 64): rows of one
 * column. NULL with the database's message in `err`. Free with PQclear. */
PGresult *store_attested_groups(const char *job, const char *step, char *err, size_t cap);

#endif /* SERVER_STORE_ATTEST_H */

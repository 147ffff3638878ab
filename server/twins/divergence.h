/* divergence.h - a rank's first divergence as the comparison stored it, typed: what crosses from a twin group's
 * findings (server/twins/findings.h, which fills it) to the rules that read it (the runs' outcomes in
 * server/twins/glance.h, the fleet's rules in server/fleet/), none of which parses a divergence back from JSON.
 * JSON is made of it only for answers and alerts.
 */
#ifndef SERVER_TWINS_DIVERGENCE_H
#define SERVER_TWINS_DIVERGENCE_H

#include <stdint.h>
#include <jansson.h>

typedef struct divergence {
    int64_t step, seq;
    int rank; /* -1: a logical tensor of runs of different rank counts (then logical is 1) */
    int occurrence;
    int logical;
    char *name;       /* the record's name */
    char *kind;       /* as stored: "restore" for a restore difference, "missing" for a record some run lacks, ... */
    char *odd_run_id; /* the run named odd at it, NULL when none */
    json_t *runs;     /* each run's entry as stored (jsonb: fp, value, inputs, site, majority) */
} divergence;

/* divergences_free - free divs[0..n) (their names, kinds, odd run ids and runs) and the array; NULL is fine. */
void divergences_free(divergence *divs, int n);

#endif /* SERVER_TWINS_DIVERGENCE_H */

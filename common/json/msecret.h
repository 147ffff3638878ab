/* msecret.h - a posted manifest without secrets: what lockstepd keeps when an agent that predates the rule (or any
 * other client) sends secret-named variables.
 *
 * The agent never records such a variable (common/envrule.h); lockstepd applies the same built-in rule to what it
 * is sent, so that a manifest from an older agent publishes no token either. (A site's LOCKSTEP_SECRET_VARS is the
 * job's; lockstepd does not know it.) Pure; tested by tests/unit/test_envrule.c.
 */
#ifndef COMMON_JSON_MSECRET_H
#define COMMON_JSON_MSECRET_H

#include <jansson.h>

/* msecret_scrub - remove from manifest `m` (borrowed, changed in place) every "env" member whose name looks like
 * a secret and whose value is not a keyed digest or the agent's "no digest key" note, and every "files" entry
 * such a variable names. Returns how many it removed. */
int msecret_scrub(json_t *m);

#endif /* COMMON_JSON_MSECRET_H */

/* consensus.h - a run's consensus check as `lockstep run` prints it. */
#ifndef CLI_CONSENSUS_H
#define CLI_CONSENSUS_H

#include <jansson.h>
#include <stddef.h>

/* consensus_format_line - the run's consensus object ({"status", "checked", "first"}, docs/server.md) as one line
 * into `out` (cap bytes, cut to fit), starting "consensus:": "none checked" (": WHY" when the server says why),
 * "agree (N windows checked)", or
 * "DISAGREE at step S, NAME #OCC on ranks {..}: rank R is odd (node N, gpu G) at site F (MODULE+0xOFF)" (with two
 * members or no majority: "one of ranks {..} differs (no majority)"). */
void consensus_format_line(const json_t *c, char *out, size_t cap);

#endif /* CLI_CONSENSUS_H */

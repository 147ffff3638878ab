/* consensus.h - runs' consensus disagreements as hardware evidence: each new or changed consensus_divergences row
 * evaluated once (server/rules/cons_evidence.h), its exposures and involvements, history and alert. */
#ifndef SERVER_FLEET_CONSENSUS_H
#define SERVER_FLEET_CONSENSUS_H

/* consensus_pass - evaluate every consensus_divergences row never evaluated or changed since (its signature,
 * lockstep_consensus_signature), each in its own transaction under the fleet evaluator's lock: the rule on the
 * attested hardware of its odd ranks, the run's exposures and involvements (consensus_exposures), history, and the
 * run's alert (kind consensus, once); then every run that ended with checked windows (consensus_runs) and is not
 * exposed yet, once: each attested rank's node and GPU an exposure, so that agreeing runs count in a node's rate.
 * Returns how many evaluations and exposures wrote something, or -1 when one failed (logged; it is listed again on
 * the next pass). Called by the fleet thread. */
int consensus_pass(void);

/* consensus_register - prepare the statements this module runs (db_register). */
void consensus_register(void);

#endif /* SERVER_FLEET_CONSENSUS_H */

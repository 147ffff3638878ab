/* consensus.h - GET /api/v1/runs/{id}/consensus: the run checked against itself (server/consensus/). */
#ifndef SERVER_API_CONSENSUS_H
#define SERVER_API_CONSENSUS_H

/* api_consensus_register - add the route: the run's consensus status (cons_read_json), read as the run's other
 * read endpoints are (a reader, or the job's own token). */
void api_consensus_register(void);

#endif /* SERVER_API_CONSENSUS_H */

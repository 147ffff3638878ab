/* attest.h - POST /api/v1/attest: slurmstepd (or the admin) vouches for a job step's user, node list and which ranks
 * ran on which node. */
#ifndef SERVER_API_ATTEST_H
#define SERVER_API_ATTEST_H

/* api_attest_register - prepare its statements and add its route. */
void api_attest_register(void);

#endif /* SERVER_API_ATTEST_H */

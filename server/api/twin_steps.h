/* twin_steps.h - GET /api/v1/twins/{group}/steps: per step and rank, whether the group's runs match, from the step
 * digests; bounded in memory and time whatever is stored. */
#ifndef SERVER_API_TWIN_STEPS_H
#define SERVER_API_TWIN_STEPS_H

/* api_twin_steps_register - prepare its statements and add its route. */
void api_twin_steps_register(void);

#endif /* SERVER_API_TWIN_STEPS_H */

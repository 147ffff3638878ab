/* twins.h - the twin group read endpoints: group status and divergences, per-step map, manifest diff. */
#ifndef SERVER_API_TWINS_H
#define SERVER_API_TWINS_H

/* api_twins_register - prepare this module's statements and add GET
 * /api/v1/twins/{group}, .../steps and .../manifest-diff to the route table
 * (docs/server.md). */
void api_twins_register(void);

#endif /* SERVER_API_TWINS_H */

/* health.h - the service's own state: GET /api/v1/health (the database reachable?) and GET /metrics (Prometheus text).
 */
#ifndef SERVER_API_HEALTH_H
#define SERVER_API_HEALTH_H

/* api_health_register - prepare the statement and add /api/v1/health and
 * /metrics to the route table. */
void api_health_register(void);

#endif /* SERVER_API_HEALTH_H */

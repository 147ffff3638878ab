/* alerts.h - the alert endpoints: alerts with their deliveries, and acknowledging one. */
#ifndef SERVER_API_ALERTS_H
#define SERVER_API_ALERTS_H

/* api_alerts_register - add GET /api/v1/alerts and POST /api/v1/alerts/{id}/ack
 * to the route table (docs/suspects.md). Reads follow read_access;
 * acknowledging needs the admin token. */
void api_alerts_register(void);

#endif /* SERVER_API_ALERTS_H */

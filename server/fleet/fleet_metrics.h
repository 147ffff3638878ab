/* fleet_metrics.h - the fleet's state as Prometheus series, read from the database at each scrape of GET /metrics. */
#ifndef SERVER_FLEET_FLEET_METRICS_H
#define SERVER_FLEET_FLEET_METRICS_H

/* FLEET_METRICS_NODES - nodes whose per-node series one scrape shows (the highest scores first); a comment says
 * when a fleet has more. */
#define FLEET_METRICS_NODES 5000

/* fleet_metrics_register - prepare the statements fleet_metrics_text runs. Call once, before the workers start. */
void fleet_metrics_register(void);

/* fleet_metrics_text - the fleet series as Prometheus text (a new string the caller frees): alert counts by kind
 * and by how they ended, nodes by state, suspects, and per node its score, state, involvements and runs; diverged
 * twin groups by classification and replay verdicts by verdict. Every label set is bounded: by fixed words, or by
 * the fleet's nodes (never a label per group or run). When the database does not answer, one comment line saying
 * why. */
char *fleet_metrics_text(void);

#endif /* SERVER_FLEET_FLEET_METRICS_H */

/* verdict_alert.h - the follow-up alert of a replay experiment: the verdict on a twin group that diverged, with the
 * placements tried and the reasoning. */
#ifndef SERVER_REPLAY_VERDICT_ALERT_H
#define SERVER_REPLAY_VERDICT_ALERT_H

#include <stddef.h>
#include <jansson.h>

/* verdict_alert_enqueue - enqueue the follow-up alert of the finished narrow `doc` (narrow_json's document)
 * inside the caller's open transaction: kind "verdict", one per narrow (dedup key narrow:ID), to the group's
 * users, critical for a persistent-hardware verdict and a warning otherwise, with the fleet's classification
 * of the group beside the verdict. It is the group's newer report (an alert's lifecycle: server/alerts/alerts.h):
 * it supersedes the group's open divergence alert and an earlier narrow's open follow-up. A
 * persistent-hardware verdict blames its node (repairing it resolves the alert). Returns 0, or -1 with the
 * database's message in `err`. */
int verdict_alert_enqueue(json_t *doc, char *err, size_t cap);

/* verdict_alert_register - prepare the statements this module runs (db_register). */
void verdict_alert_register(void);

#endif /* SERVER_REPLAY_VERDICT_ALERT_H */

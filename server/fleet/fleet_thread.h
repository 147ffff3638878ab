/* fleet_thread.h - the fleet thread: evaluate notified and changed twin groups, rescore the fleet, wake the alert
 * sender. */
#ifndef SERVER_FLEET_FLEET_THREAD_H
#define SERVER_FLEET_FLEET_THREAD_H

/* fleet_start - start the fleet thread: it evaluates groups it is told
 * about (fleet_notify) and, every suspects_interval_ms, groups whose runs,
 * manifests or divergences changed (also those written by another lockstepd
 * on the same database), then rescores the fleet. Returns 0 or -1. */
int fleet_start(void);

/* fleet_stop - stop the thread (finishing the pass under way). */
void fleet_stop(void);

/* fleet_kick - ask for a rescore of the fleet on the next pass, soon (after
 * an admin action). Never blocks on the database. */
void fleet_kick(void);

/* fleet_notify - ask for twin group `group` to be evaluated soon (called
 * after a divergence is stored). Never blocks on the database. */
void fleet_notify(const char *group);

/* fleet_pass - one full pass: evaluate the notified and changed groups, then
 * rescore. Returns 0, or -1 when the database failed (retried next pass). */
int fleet_pass(void);

/* fleet_thread_register - prepare the statements this module runs (db_register). */
void fleet_thread_register(void);

#endif /* SERVER_FLEET_FLEET_THREAD_H */

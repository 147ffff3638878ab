/* lease.h - which lockstepd compares a twin group: a lease in PostgreSQL (group_leases, sql/functions/leases.sql)
 * that one instance holds and renews, and another takes once it expires (its holder died or lost the database).
 * The holder keeps the group's step digests in its memory (cmp_mem.c), looks at its ranks and sweeps it; the other
 * instances store the group's batches and forward what memory needs to the holder (forward.c). A lease decides who
 * does the work, never what is true: memory's marks are checked against the database, so two holders at once (a
 * lease taken while its holder still compared) would compare twice, not wrongly. A run's consensus has a lease of its
 * own (lease_run_name): its holder judges the run's windows in memory, the others forward its consensus digests.
 * docs/server.md, "Several lockstepd on one database". */
#ifndef SERVER_PEERS_LEASE_H
#define SERVER_PEERS_LEASE_H

#include <stddef.h>
#include <stdint.h>

/* lease_register - register this module's prepared statements. */
void lease_register(void);

/* lease_configure - this instance's name in the leases (at most 127 bytes: its host and address when its port is
 * fixed, so that a restarted lockstepd takes its leases back at once) and how long a lease lasts unrenewed. Call
 * before lease_start. */
void lease_configure(const char *instance, double ttl_s);

/* lease_mine - 1 when this instance compares `group`: it holds the lease (taken now when nobody holds it, or its
 * holder let it expire), or the database cannot say (comparing twice is safe, missing a divergence is not); 0 when
 * another live instance holds it. Asks PostgreSQL at most about once per lease period per group; keeps the group
 * (a group nothing asked about for two minutes is given back). */
int lease_mine(const char *group);

/* lease_run_name - the name of run `run_key`'s consensus lease in `buf` ("consensus", a tab, the key: no twin group
 * is named so, as names hold no control character). Returns buf. */
const char *lease_run_name(int64_t run_key, char *buf, size_t cap);

/* lease_takeovers_seen - 1 once after this instance took over leases another let expire: their groups' work may
 * have been left undone, so the comparison looks at its backlog. */
int lease_takeovers_seen(void);

/* lease_start - the thread that renews this instance's leases (every third of a lease period) and gives back those
 * of idle groups. lease_stop - stop it and give back every lease, so that another instance takes them at once. */
int lease_start(void);
void lease_stop(void);

#endif /* SERVER_PEERS_LEASE_H */

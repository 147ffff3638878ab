/* slurm_action.h - drain a suspect node and resume a repaired one in Slurm with scontrol (opt-in: slurm_action =
 * drain). */
#ifndef SERVER_FLEET_SLURM_ACTION_H
#define SERVER_FLEET_SLURM_ACTION_H

#include <stddef.h>

/* slurm_node_ok - 1 when `name` is safe to hand to scontrol (letters,
 * digits, '.', '-', '_'; 1..128 bytes). */
int slurm_node_ok(const char *name);

/* slurm_set_state - run `scontrol update nodename=NODE state=drain
 * reason="lockstep: REASON"` (drain = 1) or `... state=resume` (drain = 0)
 * with SLURM_CONF from the config, without a shell, with a 30 s limit.
 * Returns 0 when scontrol exited 0, else -1; either way `out` receives the
 * command line and what scontrol printed (for the node's history). */
int slurm_set_state(const char *node, int drain, const char *reason, char *out, size_t cap);

/* slurm_apply - when slurm_action = drain: do slurm_set_state and write the
 * outcome to the node's history as a "slurm" event (its own statement).
 * Returns 0 (also when switched off), -1 when scontrol failed. */
int slurm_apply(const char *node, int drain, const char *reason);

/* slurm_action_register - prepare the statements this module runs (db_register). */
void slurm_action_register(void);

#endif /* SERVER_FLEET_SLURM_ACTION_H */

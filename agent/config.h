/* config.h - streaming settings from LOCKSTEP_* variables: the server, identity of the run, batching and bounds. */
#ifndef AGENT_CONFIG_H
#define AGENT_CONFIG_H

#include <stddef.h>

#include "agent/send.h"

/* config_stream - fill `cfg` for rank `rank` from the environment
 * (docs/agent.md lists every variable). `hdr` is the trace header template
 * (run id, job, step, group, host, algo). Returns 1 when LOCKSTEP_SERVER asks
 * for streaming, 0 when it is unset, -1 when a variable is invalid (reason in
 * `why`). On 1, cfg->reg_json is a new string the caller hands to
 * send_start. */
int config_stream(send_cfg *cfg, long rank, const rec_header *hdr, char *why, size_t cap);

/* config_size - parse a byte count with an optional K, M or G suffix (powers
 * of 1024). Returns 0, or -1 when `s` is not one. */
int config_size(const char *s, size_t *out);

/* config_seconds_ms - parse seconds (decimals allowed) into milliseconds.
 * Returns 0, or -1. */
int config_seconds_ms(const char *s, long *out);

#endif /* AGENT_CONFIG_H */

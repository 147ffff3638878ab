/* uplink.h - one rank's conversation with lockstepd: find or register the run, post batches, manifest and end. */
#ifndef AGENT_UPLINK_H
#define AGENT_UPLINK_H

#include <stddef.h>

#include "agent/http.h"
#include "agent/relay.h"
#include "agent/spool.h"

/* What a call to the server came to. */
enum uplink_rc {
    UP_OK = 0,      /* the server has it */
    UP_RETRY = -1,  /* no answer, or a 5xx/408/429: try again later */
    UP_REJECT = -2, /* a 4xx: sending it again cannot help */
};

typedef struct uplink {
    http_client *http;
    spool_meta *m;    /* borrowed: server, token, run_id (filled in by uplink_resolve), rank, job and step */
    long timeout_ms;  /* per request */
    long last_status; /* HTTP status of the last request, -1 when none came */
    int reg_tried;    /* rank 0 sent a registration before */
    relay *relay;     /* the node's relay (LOCKSTEP_RELAY), NULL when none: batches go through it when it answers */
    char last_error[512];
} uplink;

/* uplink_open - connect lazily to m->server with m->token and m->ca_file.
 * Returns 0, or -1 with a reason in `why`. */
int uplink_open(uplink *u, spool_meta *m, long timeout_ms, char *why, size_t cap);

/* uplink_close - free the connection. */
void uplink_close(uplink *u);

/* uplink_resolve - make sure m->run_id is the server's run id: when empty,
 * rank 0 registers the run with m->reg (POST /api/v1/runs) and every other
 * rank looks it up by job and step (GET /api/v1/runs?job=J&step=S, taking
 * the listed run whose job_id and step_id match) until rank 0 has registered
 * it. Rank 0 looks up before registering again, so a registration whose
 * answer was lost is not made twice. Returns UP_OK, UP_RETRY (not there yet,
 * or no answer) or UP_REJECT. */
int uplink_resolve(uplink *u);

/* uplink_confirm - whether lockstepd knows m->run_id, a run id an earlier process of this rank left in the spool:
 * the runs of m->job_id and m->step_id (GET /api/v1/runs?job=J&step=S) must list it. Returns UP_REJECT when they do
 * not (a reused job id, or a new database: the run is not this one), UP_RETRY when lockstepd did not answer, else
 * UP_OK (listed, or the answer cannot tell: a refusal, an unreadable list). */
int uplink_confirm(uplink *u);

/* uplink_post_batch - POST one framed batch (its header's run id is
 * rewritten to m->run_id) to /api/v1/runs/ID/records, through the node's
 * relay when it answers for it (agent/relay.h), else directly; the reply's
 * text in `resp` (resp_cap bytes, NUL-terminated; may be NULL). */
int uplink_post_batch(uplink *u, const unsigned char *buf, size_t len, char *resp, size_t resp_cap);

/* uplink_post_json - POST `json` to /api/v1/runs/ID/WHAT (manifest, end);
 * the reply's text in `resp` (resp_cap bytes; may be NULL). */
int uplink_post_json(uplink *u, const char *what, const char *json, char *resp, size_t resp_cap);

#endif /* AGENT_UPLINK_H */

/* limits.h - the documented bounds lockstepd enforces (docs/server.md, "Limits"): one definition each.
 *
 * Every bound a client could otherwise choose is here: what registration and ingest accept (refused at
 * the door with a 4xx), and what one read may cost whatever is stored (answers page instead of growing).
 */
#ifndef SERVER_CORE_LIMITS_H
#define SERVER_CORE_LIMITS_H

#include "common/wire.h"

/* --- A run, as registered (POST /api/v1/runs; 400 past these) --- */
#define RUN_MAX_RANKS 65536                     /* ranks of one run */
#define RUN_MAX_START_STEP ((long long)1 << 62) /* start_step is 0 .. this */
#define JOB_ID_MAX 128                          /* bytes of job_id */
#define STEP_ID_MAX 64                          /* bytes of step_id */
#define GROUP_NAME_MAX 255                      /* bytes of a twin group's name */
#define USER_MAX 64                             /* bytes of user */
#define PARTITION_MAX 128                       /* bytes of partition */
#define NODES_MAX 4096                          /* bytes of nodes (a Slurm node list) */
#define COMMAND_MAX WIRE_COMMAND_MAX            /* bytes of command (common/wire.h: clients cut theirs to fit) */
#define CLIENT_ID_MAX 128                       /* bytes of client_id */

/* --- A record (POST /api/v1/runs/{id}/records; 400 past these) --- */
/* a record's step is -this .. this: room for the comparison's step arithmetic (a mark one before a step, a window after
 * it) */
#define REC_STEP_LIMIT ((long long)1 << 62)
/* the most members a consensus digest's group may have (a larger one is refused: its window could never fill) */
#define CONS_MEMBERS_MAX (1u << 22)

/* --- An attestation (POST /api/v1/attest) --- */
#define ATTEST_MAX_RANKS 4096 /* ranks one node's attestation names */
#define ATTEST_MAX_RANKS_TEXT "4096"

/* --- A twin group --- */
#define GROUP_MAX_RUNS 64 /* runs of one group: the 65th registration is refused (409) */
#define GROUP_MAX_RUNS_TEXT "64"
#define GROUP_MAX_SHARED 64 /* users a group is shared with */
#define GROUP_MAX_SHARED_TEXT "64"

/* --- Request bodies and heads (413 / 414 / 431 past these, answered before the body is read) --- */
#define HTTP_BODY_DEFAULT (64 * 1024)   /* any endpoint that names no other limit */
#define MANIFEST_BODY_MAX (256 * 1024)  /* one rank's manifest */
#define MANIFEST_BODY_MAX_TEXT "262144" /* the same, for SQL text */
#define MDIFF_MANIFESTS_TEXT "512"      /* manifests one manifest diff reads (the lowest ranks of every run) */
#define HTTP_TARGET_MAX 2048            /* bytes of the request target (path and query) */
#define HTTP_TARGET_MAX_TEXT "2048"
#define HTTP_HEAD_MEMORY (64 * 1024) /* request line and headers together (libmicrohttpd's pool) */

/* --- What one read may cost (answers page past these) --- */
#define STEPS_MAX_RANKS 4096 /* ranks of one GET /twins/G/steps answer (rank_from .. rank_from + this - 1) */
#define STEPS_MAX_RANKS_TEXT "4096"
#define STEPS_MAX_CELLS 262144       /* digest rows of one GET /twins/G/steps answer: the step window shrinks */
#define RUN_DETAIL_MAX_RANKS 4096    /* rank_status entries of one GET /runs/R answer */
#define RUN_DETAIL_MAX_MANIFESTS 256 /* manifests of one GET /runs/R answer */
#define DIFF_MAX_RANKS 256           /* ranks of one GET /twins/G/manifest-diff answer */
#define LIST_TOTAL_MAX 10000         /* a list counts its total exactly up to this; past it "total" is null */
#define LIST_TOTAL_MAX_TEXT "10000"
#define LIST_MAX_BYTES (4 << 20) /* a list answer stops adding items past this many bytes (next_cursor follows) */
/* points of one GET /runs/R/series answer (?limit= at most this; before: 10^6, whose answer held some 400 MB in
 * lockstepd) */
#define SERIES_MAX_POINTS 100000

/* --- GET /api/v1/compare: one request, whatever the runs hold (the steps are cut where a budget ends: the answer
 * says where, and ?from= gets the rest) --- */
#define COMPARE_MAX_POINTS 1000000  /* metric points kept, all runs together (16 bytes each) */
#define COMPARE_MAX_DECODED 4000000 /* series points decoded, all runs together (metrics and other scalars) */
#define COMPARE_MAX_NAMES 256       /* metric names read per run: the first by name */
#define COMPARE_SERIES_CELLS 200000 /* numbers the answer's curves hold, all metrics together: curves are thinned */
#define COMPARE_STEP_RECORDS 200000 /* records of one step (both runs) the first effect's rule reads, else 413 */
#define COMPARE_WORKERS 2           /* compares computed at once (others wait their turn, suspended) */

#endif /* SERVER_CORE_LIMITS_H */

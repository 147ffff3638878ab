/* spool_send.h - send what a spool holds to lockstepd: used by `lockstep replay DIR` (a later process). */
#ifndef AGENT_SPOOL_SEND_H
#define AGENT_SPOOL_SEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct spool_send_opts {
    const char *server;  /* where to send (required): the sending user's server, never the one a spool names */
    const char *token;   /* overrides the spooled token (its job's) when not NULL */
    const char *ca_file; /* the CA file for https (NULL: the system's), never the one a spool names */
    int force;           /* send spools that belong to another user too */
    long timeout_ms;     /* per request */
    long wait_ms;        /* how long a rank other than 0 waits for rank 0's run to appear */
    FILE *log;           /* one line per rank directory, or NULL */
    const char *steps;   /* digest streaming: also send the held records of these steps ("5,7-9"), or of the
                            steps lockstepd asks for ("asked"); NULL: none */
} spool_send_opts;

typedef struct spool_send_stats {
    unsigned dirs, dirs_done, dirs_busy, dirs_failed;
    uint64_t batches, records, rejected;
    uint64_t held_batches, held_records; /* held records sent (--steps) */
} spool_send_stats;

/* spool_send_steps_valid - 1 when `steps` is "asked" or a list of steps and ranges ("5,7-9"). */
int spool_send_steps_valid(const char *steps);

/* spool_send_tree - find every rank spool under `root` (directories holding
 * spool.meta, at most three levels down, no link followed, rank 0 of each
 * run first) and send each to o->server: resolve or register the run, post
 * the manifest, the batches in order
 * and the end, removing each file once the server has it and the directory
 * once it is empty (a directory keeping held records stays). With o->steps,
 * the held records of those steps are posted too (and kept). A directory locked by a live agent is skipped, and
 * one of another user's is refused (agent/spool.h) unless o->force. Returns 0
 * when everything was sent, -1 when something is left (reasons on o->log);
 * counts in `st`. */
int spool_send_tree(const char *root, const spool_send_opts *o, spool_send_stats *st);

#endif /* AGENT_SPOOL_SEND_H */

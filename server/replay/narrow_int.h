/* narrow_int.h - what narrow.c, narrow_cmd.c and narrow_eval.c share; not used outside server/replay/narrow*.c. */
#ifndef SERVER_REPLAY_NARROW_INT_H
#define SERVER_REPLAY_NARROW_INT_H

#include <stddef.h>
#include <jansson.h>

/* narrow_probe - the nodes (and their GPUs, "" when unknown) that ran ranks `origin[0..norigin)` of run
 * `run_key` (every rank when norigin is 0), from its manifests, as ','-separated lists in `probe` and `gpus`
 * (one entry per node, in the same order); without manifests, the run's node when `nodes` names one. Inside
 * the caller's transaction. Returns 0, or -1 with the database's message. */
int narrow_probe(const char *run_key, const int *origin, int norigin, const char *nodes, char *probe, size_t pcap,
                 char *gpus, size_t gcap, char *err, size_t ecap);

/* What one placement runs (narrow_cmd.c). */
typedef struct narrow_cmd {
    json_t *argv;         /* its words, a new array (empty when the run gave none) */
    char command[4096];   /* the words as one line for people (quoted where sh would need it) */
    char resume_step[32]; /* the checkpoint it resumes from, "" for the whole run */
    char how[600];        /* what the placement's "why" adds: from which checkpoint, or why the whole run */
} narrow_cmd;

/* narrow_cmd_make - the words a replay of run `run_key` runs when the narrow compares steps from..to: with a resume
 * template `resume` ("" when none) and a checkpoint before `from` (declared, or a saved state block; {path} needs a
 * declared path), the template split into words (common/words.h) with {step}, {path} and {stop} (= to) filled in
 * inside each word; else the run's words: `argv_json` (its registered argv, a JSON array; NULL or "" when none),
 * else `command` split at white space. Inside the caller's transaction. Returns 0 with `out` filled (the caller
 * owns out->argv), or -1 with the database's message. */
int narrow_cmd_make(const char *run_key, const char *argv_json, const char *command, const char *resume, long long from,
                    long long to, narrow_cmd *out, char *err, size_t cap);

/* narrow_cmd_register - prepare the statements narrow_cmd_make runs (narrow_register calls it). */
void narrow_cmd_register(void);

/* narrow_settings_make - what a replay of run `run_key` carries from it (narrow_settings.c), from its lowest rank's
 * manifest, as a new object: "ignore", "step_on", "mpi_inputs" (its LOCKSTEP_IGNORE, LOCKSTEP_STEP_ON and
 * LOCKSTEP_MPI_INPUTS, each absent when it had none), "trace" (its LOCKSTEP_TRACE, else the default, with the
 * clause of the narrow's `window` trace added; `window` itself when the two do not fit one trace), "cwd" (its working
 * directory, absent when unknown), "env" (its determinism environment: the variables common/envrule.h classes as
 * configuration, not LOCKSTEP_*) and "not_carried" (those whose value the manifest holds only as a secret's digest).
 * Inside the caller's transaction. NULL with the database's message. */
json_t *narrow_settings_make(const char *run_key, const char *window, char *err, size_t cap);

/* narrow_settings_check - whether replay run `replay_key` recorded as placement `settings` (narrow_settings_make)
 * asked: its manifest's LOCKSTEP_IGNORE, LOCKSTEP_STEP_ON, LOCKSTEP_MPI_INPUTS and LOCKSTEP_TRACE against them.
 * Returns 1 with what differs in `note`, 0 when nothing does (or its manifest has not come, or the placement holds
 * no settings), -1 on a database error. */
int narrow_settings_check(const char *replay_key, json_t *settings, char *note, size_t cap);

/* narrow_settings_register - prepare the statements narrow_settings_make and _check run (narrow_register calls it). */
void narrow_settings_register(void);

#endif /* SERVER_REPLAY_NARROW_INT_H */

/* wire.h - the requests every client sends lockstepd the same way: a run's registration body, the lookup of a run by
 * job and step, and reading the answer.
 *
 * The agent (liblockstep.so, over its dlopen'd libcurl) and the SPANK plugin (in slurmstepd, over libcurl)
 * both build these here, so lockstepd sees one form. No allocation failure aborts: the callers run inside
 * users' jobs and slurmstepd, and degrade.
 */
#ifndef COMMON_WIRE_H
#define COMMON_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* What lockstepd is told about a run (POST /api/v1/runs; docs/server.md). */
typedef struct wire_run {
    const char *job_id;     /* the Slurm job id (required) */
    const char *step_id;    /* the step key ("0", "0.r1" after a requeue) */
    const char *twin_group; /* NULL or "" when none */
    long ranks;
    long long start_step;
    const char *user;
    const char *partition;
    const char *nodes;
    const char *command;
    const char *mode;      /* "fp" or "det" */
    const char *client_id; /* the same on every attempt: a repeat gets the run the first one created */
    const char *resume;    /* how the job resumes from a checkpoint (wire_resume_check), NULL or "" when unsaid */
    char *const *argv;     /* the program's argument vector (slurmstepd's), argc words; NULL when unknown */
    int argc;
} wire_run;

/* wire_run_body - the registration body as a malloc'd JSON text (caller
 * frees); optional strings that are NULL or "" are left out, and so are a
 * resume template wire_resume_check refuses and an argv lockstepd would
 * refuse (a word not UTF-8, more than WIRE_ARGV_WORDS words or
 * WIRE_ARGV_MAX bytes): the run registers without them. NULL when out of
 * memory. */
char *wire_run_body(const wire_run *r);

/* WIRE_COMMAND_MAX - the most bytes of a registration's command lockstepd takes (server/core/limits.h uses it);
 * wire_run_body makes the command one line of UTF-8 that fits, whatever the program's command line holds. */
#define WIRE_COMMAND_MAX 4096

/* WIRE_ARGV_WORDS, WIRE_ARGV_MAX - the most words of a registration's argv, and the most bytes of its words
 * (each counted with its NUL). Its words are passed as they are, never parsed: any UTF-8 text (server/core/limits.h
 * uses these). */
#define WIRE_ARGV_WORDS 1024
#define WIRE_ARGV_WORDS_TEXT "1024"
#define WIRE_ARGV_MAX 16384
#define WIRE_ARGV_MAX_TEXT "16384"

/* wire_argv_valid - 1 when argv[0..argc) is an argument vector lockstepd takes: 1 to WIRE_ARGV_WORDS words, the
 * first not empty, each UTF-8, WIRE_ARGV_MAX bytes in all; else 0. */
int wire_argv_valid(char *const *argv, int argc);

/* WIRE_RESUME_MAX - the longest resume template, with its NUL; WIRE_RESUME_WORDS its most words. */
#define WIRE_RESUME_MAX 4096
#define WIRE_RESUME_WORDS 256

/* wire_resume_check - whether `tpl` is a usable resume template (--lockstep-resume): a command line that names
 * the checkpoint through {step} (the last step it holds) or {path} (where the job said it is), and may name
 * {stop} (the last step a replay needs); no other {...}; shorter than WIRE_RESUME_MAX; one line of UTF-8 that
 * common/words.h splits into 1 to WIRE_RESUME_WORDS words (its quotes end). Returns 0, or -1 with the reason in
 * `why`. lockstepd splits it into words, then puts {step}, {path} and {stop} in inside each word
 * (server/replay/narrow.c). */
int wire_resume_check(const char *tpl, char *why, size_t cap);
/* WIRE_CKPT_PATH_MAX - the most bytes of a declared checkpoint's path (POST /api/v1/runs/{id}/checkpoints). */
#define WIRE_CKPT_PATH_MAX 4096

/* wire_ckpt_path_check - whether `path` is a checkpoint path lockstepd takes (ls_checkpoint, its declarations):
 * at most WIRE_CKPT_PATH_MAX bytes of UTF-8 without a control character, not beginning with '-' (a program would
 * read it as an option where a replay's resume template puts it). "" is no path, and fine. Returns 0, or -1 with
 * the reason in `why`. */
int wire_ckpt_path_check(const char *path, char *why, size_t cap);

/* What slurmstepd attests of one job step on one node (POST /api/v1/attest; docs/server.md). */
typedef struct wire_attest {
    const char *job_id, *step_id; /* the step, as registered */
    const char *node;             /* this node's name in the step's node list */
    long node_index;              /* its position there (slurmstepd's S_JOB_NODEID) */
    const char *user;             /* the job's user */
    const char *nodes;            /* the step's node list (NULL or "": left out) */
    const char *gpus;             /* the GPUs Slurm gave the step here (NULL or "": left out) */
    const unsigned *ranks;        /* the global ranks that run on this node */
    size_t nranks;
} wire_attest;

/* wire_attest_body - the attestation body as a malloc'd JSON text (caller
 * frees), or NULL when out of memory. */
char *wire_attest_body(const wire_attest *a);

/* wire_url_escape - percent-encode `s` for a URL path segment or query value
 * into `out`. Returns 0, or -1 when it does not fit (out is then ""). */
int wire_url_escape(const char *s, char *out, size_t cap);

/* wire_lookup_path - "/api/v1/runs?job=J&step=S&limit=1000", both escaped.
 * Returns 0, or -1 when it does not fit. */
int wire_lookup_path(const char *job_id, const char *step_id, char *out, size_t cap);

/* wire_lookup_pick - in the text of a runs list (the list envelope, its
 * "items"), the run_id of the run whose job_id and step_id are those given.
 * Returns 0 with it in `run_id`; 1 when the list holds no such run; -1 when
 * the text is not a runs list. */
int wire_lookup_pick(const char *reply, const char *job_id, const char *step_id, char *run_id, size_t cap);

/* wire_lookup_has - whether that runs list holds run `run_id` of the job and step given: 0 when it does, 1 when
 * not, -1 when the text is not a runs list. */
int wire_lookup_has(const char *reply, const char *job_id, const char *step_id, const char *run_id);

/* wire_obj_string - the string member `key` of the JSON object whose text
 * is `obj` (top-level members only; escapes \" \\ \/ \n \t \r \b \f kept as
 * their characters, \u as '?'). Returns 0, or -1 when absent, not a string
 * or too long. */
int wire_obj_string(const char *obj, const char *key, char *out, size_t cap);

/* wire_obj_int_array - the array of integers `key` of the JSON object whose
 * text is `obj` (top-level members only) into up to `cap` values of `out`
 * (values past `cap` are skipped). Returns how many it stored, or -1 when the
 * member is absent or not an array of integers. */
int wire_obj_int_array(const char *obj, const char *key, long long *out, int cap);

/* A bundle (POST /api/v1/runs/{id}/records, application/x-lockstep-bundle; docs/server.md): up to WIRE_BUNDLE_MAX
 * batches of one run, each a 4-byte little-endian length, then the batch. lockstepd reads it; a node relay
 * (agent/relay.c) and bench/fleet write it. */
#define WIRE_BUNDLE_MAX 256
#define WIRE_BUNDLE_MAX_TEXT "256"

/* wire_bundle_len_put, wire_bundle_len_get - a bundle's batch length as it is framed (4 bytes, little-endian). */
void wire_bundle_len_put(unsigned char out[4], uint32_t n);
uint32_t wire_bundle_len_get(const unsigned char in[4]);

/* wire_obj_int - the integer member `key` of the JSON object whose text starts at `obj` (top-level members only; the
 * text may go on past the object). Returns 0, or -1 when absent or not an integer. */
int wire_obj_int(const char *obj, const char *key, long long *out);

/* wire_obj_items - the elements of the array member `key` of the JSON object whose text is `obj` (top-level
 * members only): up to `cap` of them, each as where its text starts (at[i]) and how many bytes it takes (len[i]).
 * Returns how many the array holds (those past `cap` not given), or -1 when the member is absent, not an array, or
 * not well formed. */
int wire_obj_items(const char *obj, const char *key, const char **at, size_t *len, int cap);

#endif /* COMMON_WIRE_H */

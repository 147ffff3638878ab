/* narrow_job.h - one placement of a narrow as a Slurm job (`lockstep narrow`): its batch script of quoted words, the
 * user it runs as, its environment and output directory, and sbatch.
 *
 * No shell ever reads a job's text as a command line: the placement's words (lockstepd's "argv") and the operator's
 * launcher words each go into the script through words_quote (common/words.h), and sbatch reads the script from
 * standard input (no file anyone could swap). A replay runs as the owner of the run it replays (the placement's
 * attested "user"): as root the command submits with --uid and --gid; as that user, plainly; as anyone else, not at
 * all (the placement then says why).
 */
#ifndef CLI_NARROW_JOB_H
#define CLI_NARROW_JOB_H

#include <stddef.h>
#include <jansson.h>

#define NARROW_LAUNCHER_WORDS 64 /* words of --launcher */

/* A submitted placement. */
typedef struct narrow_job {
    char id[32];       /* the Slurm job id */
    char outdir[1200]; /* where its output goes (DIR, or DIR/uid-N for another user's replay) */
} narrow_job;

/* narrow_job_script - the batch script that runs `launcher[0..nl)` then the words of `argv` (a JSON array of
 * strings), each word quoted on its own, after a comment naming narrow `id`'s placement `idx`. A new string (caller
 * frees), or NULL with the reason in `why` (no words, a word that is not a string). */
char *narrow_job_script(long long id, int idx, char *const *launcher, int nl, json_t *argv, char *why, size_t cap);

/* narrow_job_submit - submit placement `p` of narrow `n` (as lockstepd shows them) with sbatch, its output under
 * `outdir`: the script of narrow_job_script, the placement's nodes, ranks, mode, replay group and trace, as the
 * placement's user. Returns 0 with `job` filled, or -1 with why it was not submitted in `why`. */
int narrow_job_submit(json_t *n, json_t *p, char *const *launcher, int nl, const char *outdir, narrow_job *job,
                      char *why, size_t cap);

/* narrow_job_tail - the last line of job `job`'s output that says something, into `out` ("" when none, or when the
 * output is not a regular file: it may be another user's). */
void narrow_job_tail(const narrow_job *job, char *out, size_t cap);

#endif /* CLI_NARROW_JOB_H */

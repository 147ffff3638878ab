/* token.h - per-job ingest tokens: lowercase hex HMAC-SHA256(site secret, job id), shared by server, SPANK and CLI. */
#ifndef COMMON_CRYPTO_TOKEN_H
#define COMMON_CRYPTO_TOKEN_H

#include <stddef.h>

#define TOKEN_HEX_LEN 64 /* hex digits in a token, without the NUL */

/* token_compute - write the token for `job_id` under `secret` (`secret_len`
 * bytes, used as given) to `out` as 64 lowercase hex digits and a NUL.
 * Returns 0, or -1 when OpenSSL fails. */
int token_compute(const void *secret, size_t secret_len, const char *job_id, char out[TOKEN_HEX_LEN + 1]);

/* token_compute_attest - write the attestation token for `job_id` to `out`
 * (64 lowercase hex digits and a NUL): HMAC-SHA256 keyed by
 * HMAC-SHA256(secret, "\nlockstep attest v1\n") over the job id. Only
 * holders of the site secret (slurmstepd's SPANK plugin, lockstepd) can make
 * it, and it never enters a job's environment, so what it vouches for (the
 * step's user, nodes and rank placement) cannot come from the job. The
 * derivation key contains newlines, which no job id may, so no job token can
 * equal the derived key. Returns 0, or -1 when OpenSSL fails. */
int token_compute_attest(const void *secret, size_t secret_len, const char *job_id, char out[TOKEN_HEX_LEN + 1]);

/* token_compute_env_key - write user `user`'s environment digest key to `out` (64 lowercase hex digits and a
 * NUL): HMAC-SHA256 keyed by HMAC-SHA256(secret, "\nlockstep env digest v1\n") over the user name. The plugin
 * hands it to the user's tasks (LOCKSTEP_DIGEST_KEY), where the agent digests secret-named variables with it
 * (common/envrule.h): every job of one user gets the same key, so their twins' digests compare, and no other
 * user's job has it, so a digest in a manifest cannot be tried against guesses by its readers. Returns 0, or
 * -1 when OpenSSL fails. */
int token_compute_env_key(const void *secret, size_t secret_len, const char *user, char out[TOKEN_HEX_LEN + 1]);

/* token_load_secret - read the secret file at `path` into a new buffer
 * (caller frees) with trailing newlines ("\n", "\r") removed; its length goes
 * to `*len`. Returns NULL with errno set when the file cannot be read, or with
 * errno EINVAL when it is empty after trimming. */
unsigned char *token_load_secret(const char *path, size_t *len);

/* token_equal - 1 when the two NUL-terminated tokens are equal, compared in
 * time independent of where they differ; else 0. */
int token_equal(const char *a, const char *b);

#endif /* COMMON_CRYPTO_TOKEN_H */

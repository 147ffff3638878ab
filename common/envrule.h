/* envrule.h - environment variables by name: which can change a run's results, which look like secrets, and the
 * keyed digest a manifest holds in place of a secret's value.
 *
 * One rule for the agent, which builds the manifest (agent/manifest.c), and the manifest diff (common/json/mdiff.c).
 * Pure; tested by tests/unit/test_envrule.c.
 *
 * A name looks like a secret when, ignoring case, it contains TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE or
 * CREDENTIAL anywhere, or has KEY as a word: the name cut at every character that is not a letter or a digit, a
 * word that is KEY or KEYS, or that ends in APIKEY, AUTHKEY, PRIVKEY, PRIVATEKEY or ACCESSKEY (API_KEY,
 * AWS_ACCESS_KEY_ID, OPENAI_APIKEY; not NCCL_IB_PKEY, KEYBOARD or MONKEY); or when a site pattern matches it
 * (LOCKSTEP_SECRET_VARS: shell globs, as written, case-sensitive).
 *
 * A secret's value never leaves the job. Where the variable can change results (class configuration), the
 * manifest holds "hmac-sha256:KEYID:DIGEST" instead: HMAC-SHA256 under a key the job's user holds and the
 * manifest's readers do not, over the name, a NUL and the value (so equal values of two variables do not look
 * alike), as 64 hex digits; KEYID (16 hex digits, from the key alone) tells runs whose digests can be compared.
 */
#ifndef COMMON_ENVRULE_H
#define COMMON_ENVRULE_H

#include <stddef.h>

#include "common/site.h"

/* What a variable's difference between twin runs means. */
typedef enum env_class {
    ENV_OTHER = 0,         /* nothing that changes results (a server address, a log level of ours) */
    ENV_CONFIGURATION = 1, /* the determinism environment, and the LOCKSTEP_* settings that change what is recorded */
    ENV_IDENTITY = 2,      /* differs between runs by nature: ids, node lists, per-run paths */
} env_class;

#define ENV_DIGEST_PREFIX "hmac-sha256:"
#define ENV_DIGEST_LEN 93                           /* "hmac-sha256:" + 16 hex + ":" + 64 hex, without the NUL */
#define ENV_KEY_ID_LEN 16                           /* hex digits of a key id */
#define ENV_SECRET_NO_KEY "(secret; no digest key)" /* what stands for a secret's value when there is no key */

/* env_classify - the class of variable `name` (`len` bytes; need not be NUL-terminated). */
env_class env_classify(const char *name, size_t len);

/* env_secret_name - 1 when variable `name` (`len` bytes) looks like a secret by the built-in rule (above) or
 * matches a pattern of `extra` (NULL: none); else 0. */
int env_secret_name(const char *name, size_t len, const site_patterns *extra);

/* env_digest - the keyed digest of variable `name` (`nlen` bytes) = `value` under `key` (`klen` bytes) as
 * "hmac-sha256:KEYID:DIGEST" into `out` (at least ENV_DIGEST_LEN + 1 bytes). Returns 0, or -1 when `cap` is
 * too small. */
int env_digest(const unsigned char *key, size_t klen, const char *name, size_t nlen, const char *value, char *out,
               size_t cap);

/* env_digest_key_id - when `value` is a digest env_digest wrote, its key id into `out` (NUL-terminated) and 0;
 * else -1. */
int env_digest_key_id(const char *value, char out[ENV_KEY_ID_LEN + 1]);

#endif /* COMMON_ENVRULE_H */

/* envrule.c - environment variables by name: classes, secret names, keyed digests (common/envrule.h). */
#include "common/envrule.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/sha256.h"

/* Variables that differ by nature between runs: ids, node lists, per-run paths. */
static const char *const IDENTITY_ENV[] = {"LOCKSTEP_JOB_ID",
                                           "LOCKSTEP_STEP_ID",
                                           "LOCKSTEP_RUN_ID",
                                           "LOCKSTEP_NODES",
                                           "LOCKSTEP_TRACE_DIR",
                                           "LOCKSTEP_SPOOL_DIR",
                                           "LOCKSTEP_USER",
                                           "LOCKSTEP_PARTITION",
                                           "LOCKSTEP_TWIN_GROUP",
                                           "NCCL_GRAPH_DUMP_FILE",
                                           "NCCL_DEBUG_FILE",
                                           "CUDA_VISIBLE_DEVICES",
                                           NULL};
/* LOCKSTEP_* settings that change what is recorded, so that twins set apart by them diverge. */
static const char *const RECORDING_ENV[] = {
    "LOCKSTEP_MODE",       "LOCKSTEP_IGNORE", "LOCKSTEP_STEP_ON",    "LOCKSTEP_TRACE",
    "LOCKSTEP_MPI_INPUTS", "LOCKSTEP_RANKS",  "LOCKSTEP_START_STEP", NULL};
/* The environment that can change a run's bits, by prefix. */
static const char *const DET_ENV[] = {"NCCL_",
                                      "CUBLAS",
                                      "OMP_",
                                      "MKL_",
                                      "NVTE_",
                                      "OMPI_MCA_coll",
                                      "PYTHONHASHSEED",
                                      "TORCH_DETERMINISTIC",
                                      "CUDA_LAUNCH_BLOCKING",
                                      "OPENBLAS_",
                                      "GOTO_NUM_THREADS",
                                      "LOCKSTEP_PY_NUM_THREADS",
                                      "LOCKSTEP_PY_DETERMINISTIC",
                                      NULL};

/* The built-in secret rule: words anywhere in the name, and KEY as a word (envrule.h). */
static const char *const SECRET_PARTS[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", NULL};
static const char *const KEY_WORD_ENDS[] = {"APIKEY", "AUTHKEY", "PRIVKEY", "PRIVATEKEY", "ACCESSKEY", NULL};

static int listed(const char *name, size_t len, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == len && !memcmp(*list, name, len))
            return 1;
    return 0;
}

env_class env_classify(const char *name, size_t len)
{
    if (listed(name, len, IDENTITY_ENV))
        return ENV_IDENTITY;
    if (listed(name, len, RECORDING_ENV))
        return ENV_CONFIGURATION;
    for (const char *const *p = DET_ENV; *p; p++)
        if (strlen(*p) <= len && !memcmp(name, *p, strlen(*p)))
            return ENV_CONFIGURATION;
    return ENV_OTHER;
}

/* contains_nocase - 1 when `part` occurs in `s` (`len` bytes), ignoring ASCII case. */
static int contains_nocase(const char *s, size_t len, const char *part)
{
    size_t pl = strlen(part);
    for (size_t i = 0; i + pl <= len; i++)
        if (!strncasecmp(s + i, part, pl))
            return 1;
    return 0;
}

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* key_word - 1 when the word `w` (`n` bytes) is KEY or KEYS, or ends in one of KEY_WORD_ENDS (ignoring case). */
static int key_word(const char *w, size_t n)
{
    if ((n == 3 && !strncasecmp(w, "KEY", 3)) || (n == 4 && !strncasecmp(w, "KEYS", 4)))
        return 1;
    for (const char *const *e = KEY_WORD_ENDS; *e; e++) {
        size_t el = strlen(*e);
        if (n >= el && !strncasecmp(w + n - el, *e, el))
            return 1;
    }
    return 0;
}

int env_secret_name(const char *name, size_t len, const site_patterns *extra)
{
    for (const char *const *p = SECRET_PARTS; *p; p++)
        if (contains_nocase(name, len, *p))
            return 1;
    for (size_t i = 0; i < len;) {
        while (i < len && !is_alnum(name[i]))
            i++;
        size_t start = i;
        while (i < len && is_alnum(name[i]))
            i++;
        if (i > start && key_word(name + start, i - start))
            return 1;
    }
    return extra && site_patterns_match(extra, name, len, NULL);
}

/* key_id - the key's id: the first 8 bytes of HMAC(key, a fixed label), as hex. */
static void key_id(const unsigned char *key, size_t klen, char out[ENV_KEY_ID_LEN + 1])
{
    static const char label[] = "\nlockstep env digest key id v1\n";
    unsigned char mac[SHA256_LEN];
    sha256_hmac m;
    sha256_hmac_init(&m, key, klen);
    sha256_hmac_update(&m, label, sizeof(label) - 1);
    sha256_hmac_final(&m, mac);
    sha256_hex(mac, ENV_KEY_ID_LEN / 2, out);
}

int env_digest(const unsigned char *key, size_t klen, const char *name, size_t nlen, const char *value, char *out,
               size_t cap)
{
    if (cap < ENV_DIGEST_LEN + 1)
        return -1;
    char id[ENV_KEY_ID_LEN + 1], hex[2 * SHA256_LEN + 1];
    unsigned char mac[SHA256_LEN];
    sha256_hmac m;
    key_id(key, klen, id);
    sha256_hmac_init(&m, key, klen);
    sha256_hmac_update(&m, name, nlen);
    sha256_hmac_update(&m, "", 1);
    sha256_hmac_update(&m, value, strlen(value));
    sha256_hmac_final(&m, mac);
    sha256_hex(mac, sizeof(mac), hex);
    snprintf(out, cap, "%s%s:%s", ENV_DIGEST_PREFIX, id, hex);
    return 0;
}

int env_digest_key_id(const char *value, char out[ENV_KEY_ID_LEN + 1])
{
    size_t pl = strlen(ENV_DIGEST_PREFIX);
    if (!value || strlen(value) != ENV_DIGEST_LEN || strncmp(value, ENV_DIGEST_PREFIX, pl) ||
        value[pl + ENV_KEY_ID_LEN] != ':')
        return -1;
    for (size_t i = pl; i < ENV_DIGEST_LEN; i++)
        if (i != pl + ENV_KEY_ID_LEN && !strchr("0123456789abcdef", value[i]))
            return -1;
    memcpy(out, value + pl, ENV_KEY_ID_LEN);
    out[ENV_KEY_ID_LEN] = 0;
    return 0;
}

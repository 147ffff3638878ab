/* token.c - per-job ingest tokens: lowercase hex HMAC-SHA256(site secret, job id) with OpenSSL; kept out of common/ top
 * level so liblockstep.so needs no OpenSSL. */
#include "common/crypto/token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

int token_compute(const void *secret, size_t secret_len, const char *job_id, char out[TOKEN_HEX_LEN + 1])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    static const char hex[] = "0123456789abcdef";

    if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)job_id, strlen(job_id), mac, &mac_len) ||
        mac_len != TOKEN_HEX_LEN / 2)
        return -1;
    for (unsigned i = 0; i < mac_len; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[TOKEN_HEX_LEN] = 0;
    return 0;
}

int token_compute_attest(const void *secret, size_t secret_len, const char *job_id, char out[TOKEN_HEX_LEN + 1])
{
    static const char label[] = "\nlockstep attest v1\n";
    unsigned char key[EVP_MAX_MD_SIZE];
    unsigned int key_len = 0;
    if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)label, sizeof(label) - 1, key, &key_len))
        return -1;
    int rc = token_compute(key, key_len, job_id, out);
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

int token_compute_env_key(const void *secret, size_t secret_len, const char *user, char out[TOKEN_HEX_LEN + 1])
{
    static const char label[] = "\nlockstep env digest v1\n";
    unsigned char key[EVP_MAX_MD_SIZE];
    unsigned int key_len = 0;
    if (!HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)label, sizeof(label) - 1, key, &key_len))
        return -1;
    int rc = token_compute(key, key_len, user, out);
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

unsigned char *token_load_secret(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 256, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= (1u << 20)) { /* a secret is not a megabyte */
            free(buf);
            buf = NULL;
            errno = EFBIG;
            break;
        }
        unsigned char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int read_err = ferror(f);
    fclose(f);
    if (!buf)
        return NULL;
    if (read_err) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (n == 0) {
        free(buf);
        errno = EINVAL;
        return NULL;
    }
    *len = n;
    return buf;
}

int token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return 0;
    return CRYPTO_memcmp(a, b, la) == 0;
}

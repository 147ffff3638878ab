/* sha256.h - SHA-256 and HMAC-SHA256 in plain C, for the parts that link no OpenSSL (liblockstep.so).
 *
 * FIPS 180-4 and RFC 2104; tests/unit/test_sha256.c checks them against the FIPS and RFC 4231 vectors and
 * against OpenSSL. Programs that link OpenSSL anyway (lockstepd, the plugin, the CLI) make job tokens with it
 * (common/crypto/token.c); the two agree, which the same test checks.
 */
#ifndef COMMON_SHA256_H
#define COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32 /* bytes in a digest */

/* A running hash. */
typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    unsigned char buf[64];
    size_t used; /* bytes in buf */
} sha256_ctx;

/* sha256_init / sha256_update / sha256_final - hash `len` bytes at a time; final writes the digest to `out`
 * and leaves the context to be initialized again. Never fail. */
void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, unsigned char out[SHA256_LEN]);

/* A running HMAC-SHA256: the inner hash and the outer key block. */
typedef struct sha256_hmac {
    sha256_ctx inner;
    unsigned char okey[64];
} sha256_hmac;

/* sha256_hmac_init / _update / _final - HMAC-SHA256 under `key` (`klen` bytes, any length: a key longer than
 * a block is hashed first, as RFC 2104 says). final writes the MAC to `out` and wipes the key block. Never
 * fail. */
void sha256_hmac_init(sha256_hmac *m, const void *key, size_t klen);
void sha256_hmac_update(sha256_hmac *m, const void *data, size_t len);
void sha256_hmac_final(sha256_hmac *m, unsigned char out[SHA256_LEN]);

/* sha256_hex - `n` bytes as lowercase hex into `out` (2n + 1 bytes, NUL-terminated). */
void sha256_hex(const unsigned char *in, size_t n, char *out);

#endif /* COMMON_SHA256_H */

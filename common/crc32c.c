/* crc32c.c - CRC-32C with the SSE4.2 instruction where present, a table elsewhere. */
#include "common/crc32c.h"

#include <string.h>

static uint32_t table[256];

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        table[i] = c;
    }
}

static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);

static crc_fn pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        return crc_hw;
#endif
    table_init();
    return crc_table;
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t n)
{
    static crc_fn fn;
    crc_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f) {
        f = pick();
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return ~f(~crc, data, n);
}

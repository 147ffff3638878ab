/* crc32c.h - CRC-32C (Castagnoli), the checksum of every framed record. */
#ifndef COMMON_CRC32C_H
#define COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c_update - extend `crc` (0 to start) over `n` bytes; returns the new CRC.
 * crc32c_update(0, "123456789", 9) == 0xe3069283. */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t n);

static inline uint32_t crc32c(const void *data, size_t n)
{
    return crc32c_update(0, data, n);
}

#endif /* COMMON_CRC32C_H */

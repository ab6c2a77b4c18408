/*
 * crc32c.h - CRC32C (Castagnoli), the checksum stored with every cached unit.
 *
 * Layer: the store. Includes cache/base/ and its own folder only; never the
 * origin, the engine or FUSE (tests/check-layers).
 */
#ifndef TILEFS_CRC32C_H
#define TILEFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend crc (0 to start) over len bytes at buf. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The same, always by table: lets the unit test compare both paths. */
uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len);

#endif

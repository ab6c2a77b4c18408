/*
 * human.h - sizes for people, in the messages and log lines of every layer.
 *
 * Layer: the base. Includes nothing else of tilefs (tests/check-layers).
 */
#ifndef TILEFS_HUMAN_H
#define TILEFS_HUMAN_H

#include <stddef.h>
#include <stdint.h>

/* BYTES as "512 B", "3.2 MiB", "1.5 GiB" (binary units) in BUF (LEN
 * bytes); returns BUF. */
const char *human_bytes(uint64_t bytes, char *buf, size_t len);

#endif

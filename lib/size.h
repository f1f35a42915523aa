/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_SIZE_H
#define ZVMM_LIB_SIZE_H

#include <stddef.h>
#include <stdint.h>

#define SZ_4K (4096ULL)
#define SZ_64K (64ULL << 10)
#define SZ_1M (1ULL << 20)
#define SZ_2M (2ULL << 20)
#define SZ_8M (8ULL << 20)
#define SZ_1G (1ULL << 30)

/*
 * Parses a size in binary units: a decimal number followed by nothing
 * (bytes), K, M, G or T, each optionally followed by "iB" ("64G",
 * "64GiB", "512M", "2048K"). Zero, signs, fractions, other suffixes and
 * values that do not fit in 64 bits are refused.
 *
 * Returns 0 and stores the size in *out, -EINVAL for a malformed string,
 * -EDOM for zero, -ERANGE when it does not fit. Nothing is printed: callers
 * word the error with size_parse_error().
 */
int size_parse(const char *s, uint64_t *out)
	__attribute__((warn_unused_result));

/* A one-line reason for a size_parse() failure, repeating the input. */
const char *size_parse_error(const char *s, int err, char *buf, size_t len);

/* Formats a byte count with the largest exact binary unit ("2 GiB"). */
const char *size_format(uint64_t bytes, char *buf, size_t len);

/* Formats a byte count in GiB or MiB with one decimal ("23.4 GiB"). */
const char *size_human(uint64_t bytes, char *buf, size_t len);

/* A short label for an extent or page size: "4K", "2M", "1G". */
const char *size_label(uint64_t bytes, char *buf, size_t len);

#endif

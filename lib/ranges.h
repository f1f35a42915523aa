/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_LIB_RANGES_H
#define ZVMM_LIB_RANGES_H

#include <stdint.h>

/*
 * NUMA nodes zvmm's files name (a policy's [numa] nodes, zvmmd.conf's
 * pools): 0 to NODES_MAX - 1, one bit each of a uint64_t.
 */
#define NODES_MAX 64

/*
 * A list of numbers and ascending ranges, "1" or "0-3,6": a policy's
 * nodes, zvmmd.conf's [scrub] cpus. Each number is decimal digits alone,
 * so that a list reads the same on every machine and every reader (no
 * sign, no hex, no names looked up here). Sets the bit of each number in
 * @bits, (@limit + 63) / 64 words that the caller zeroed (after an
 * error, some may be set); NULL: only checked. Returns 0 ("" is a list
 * of none); -ERANGE at the first range that descends or reaches @limit;
 * -EINVAL at the first item that is no number or range, or at a ','
 * that ends the list.
 */
int range_list_parse(const char *v, unsigned long limit, uint64_t *bits)
	__attribute__((warn_unused_result));

#endif

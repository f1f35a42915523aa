/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_VERIFY_H
#define ZVMM_ZEROING_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "memory.h"

/*
 * pool.record = verify (docs/DESIGN.md 3, "Threat model"): every byte of
 * every DIRTY page is read through the alias, by @threads threads (0: one
 * per online CPU), before a state record is trusted. A page that is all
 * zero becomes ZERO, any other stays DIRTY. Only while no worker runs.
 * Returns how many pages were not zero; *seconds (may be NULL) gets how
 * long it took.
 */
uint64_t zero_verify_pages(struct zero_mem *m, unsigned int threads,
			   double *seconds);

/* Whether the @bytes at @p (a multiple of 4 KiB) are all zero. */
bool zero_verify_range(const void *p, uint64_t bytes);

#endif

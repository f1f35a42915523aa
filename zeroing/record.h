/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_RECORD_H
#define ZVMM_ZEROING_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "memory.h"

/*
 * The warm-pool state record: proof that every page of a pool file is
 * zero, written only after the scrub it describes has finished
 * (on_exit = scrub). It names the file's identity (device, inode, size,
 * page size) and carries a checksum; it lives outside the pool (hugetlbfs
 * files cannot be written with write(2)) in $ZVMM_STATE_DIR, else
 * /var/lib/zvmm for root, else $XDG_STATE_HOME/zvmm or
 * ~/.local/state/zvmm, named after the file's device and inode.
 */

/* The record's path for pool memory @m. */
int zero_record_path(const struct zero_mem *m, char *buf, size_t len)
	__attribute__((warn_unused_result));

/*
 * Writes the record for @m, whose pages must all be ZERO: to a temporary
 * file, fsync, then rename. Returns 0 or a negative errno.
 */
int zero_record_write(const struct zero_mem *m)
	__attribute__((warn_unused_result));

/*
 * Reads and removes the record of @m: a launch consumes it, so a crash
 * later can never leave a record claiming clean. *clean is true only when
 * it exists, parses, matches the file's identity and its checksum holds.
 * @why (may be NULL) says why a record was refused. Returns 0 or a
 * negative errno for I/O trouble other than a missing record.
 */
int zero_record_take(const struct zero_mem *m, bool *clean, char *why,
		     size_t why_len) __attribute__((warn_unused_result));

#endif

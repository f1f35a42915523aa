/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_RECORD_H
#define ZVMM_ZEROING_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* What a record vouches for: the identity of one pool file. */
struct zero_record {
	uint64_t version, device, inode, size, page_size, pages;
	uint64_t mtime_ns; /* the stamp zero_record_stamp() left */
};

/* Room for any record's text. */
#define ZERO_RECORD_TEXT_MAX 512

/*
 * Writes the text of a record for @r, checksum included, into @buf.
 * Returns its length as snprintf() does: @len or more means it was cut.
 */
int zero_record_format(const struct zero_record *r, char *buf, size_t len);

/*
 * Parses the @len bytes of record text at @text (no NUL needed) into *r.
 * Returns 0 when every key is there, the state is zero and the checksum
 * holds; -EINVAL for text that is malformed or incomplete, -EBADMSG for a
 * checksum that does not match. Whether it describes a given pool file
 * is the caller's question.
 */
int zero_record_parse(const char *text, size_t len, struct zero_record *r)
	__attribute__((warn_unused_result));

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
 * Stamps the pool file: its mtime becomes strictly later than it was.
 * Every launch stamps the pool it opens and the record carries the stamp
 * it was written after, so a record is valid only until the next launch
 * opens the pool, whichever state directory that launch reads records
 * from (a record left in another directory can never be taken for a
 * pool a tenant used since). Returns 0 or a negative errno.
 */
int zero_record_stamp(const struct zero_mem *m)
	__attribute__((warn_unused_result));

/*
 * Reads and removes the record of @m: a launch consumes it, so a crash
 * later can never leave a record claiming clean. *clean is true only when
 * it exists, parses, matches the file's identity and its checksum holds.
 * (zero_guest_open() checks the file's allocation against it too.)
 * @why (may be NULL) says why a record was refused. Returns 0 or a
 * negative errno for I/O trouble other than a missing record.
 */
int zero_record_take(const struct zero_mem *m, bool *clean, char *why,
		     size_t why_len) __attribute__((warn_unused_result));

#endif

/* SPDX-License-Identifier: MIT */
#ifndef ZVMM_ZEROING_RECORD_H
#define ZVMM_ZEROING_RECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "memory.h"

/*
 * The warm-pool state record: proof that every page of a pool file is
 * zero, written only after the scrub it describes has finished
 * (on_exit = scrub) and no other process held the file. It names the
 * file's identity (boot, device, inode, size, page size) and the times
 * the file had when zvmm left it: mtime (which zvmm stamps), ctime
 * (which nobody can set back: utimensat(2) itself moves it) and atime
 * (which another process's mmap(2) or read(2) of the file moves, where
 * the mount keeps access times). It lives outside the pool (hugetlbfs
 * files cannot be written with write(2)) in the state directory:
 * the guest's [pool] state_dir, else the zvmm program's $ZVMM_STATE_DIR
 * (program_getenv()), else /var/lib/zvmm for root, else $XDG_STATE_HOME/zvmm
 * or ~/.local/state/zvmm (environment read with secure_getenv()), named
 * after the file's device and inode. A directory outside the trust
 * boundary (not owned by the euid or root, or writable by group or
 * others) is never read or written: docs/DESIGN.md 3, "Threat model".
 *
 * Since version 4 it also holds the file's absolute path, which only
 * the pruning of records reads (zero_record_write()): whether a record
 * is trusted depends on the file it is read for, never on the path.
 */

/* What a record vouches for: the identity of one pool file. */
struct zero_record {
	uint64_t version, device, inode, size, page_size, pages;
	uint64_t mtime_ns, ctime_ns, atime_ns; /* the file's, after the stamp */
	uint64_t boot_hi, boot_lo; /* /proc/sys/kernel/random/boot_id */
	/* where the file was when the record was written; "" before
	 * version 4 (the checksum then covers the numbers alone) */
	char path[PATH_MAX];
};

/* The version zvmm writes, and the only one it trusts. */
#define ZERO_RECORD_VERSION 4

/*
 * Room for any record's text: about 500 bytes, and the path, escaped
 * (up to 3 bytes for one) over lines of at most 120 (libinih reads a
 * line of 199 at most).
 */
#define ZERO_RECORD_TEXT_MAX 16384

/*
 * Writes the text of a record for @r, checksum included, into @buf: the
 * path (when r->path is set) with every byte but letters, digits and
 * "/._-+,@~" written as %XX, so no byte of it can end a line, start a
 * comment or be trimmed. Returns its length as snprintf() does: @len or
 * more means it was cut.
 */
int zero_record_format(const struct zero_record *r, char *buf, size_t len);

/*
 * Parses the @len bytes of record text at @text (no NUL needed) into *r.
 * Returns 0 when every key is there (path is optional: records before
 * version 4 have none), the state is zero, a path is absolute and
 * escaped as zero_record_format() escapes it, and the checksum holds;
 * -EINVAL for text that is malformed or incomplete, -EBADMSG for a
 * checksum that does not match. Whether it describes a given pool file
 * is the caller's question.
 */
int zero_record_parse(const char *text, size_t len, struct zero_record *r)
	__attribute__((warn_unused_result));

/*
 * The identity a record of pool @m would hold, from the file's status
 * @st (taken with fstat(2) on m->fd).
 */
int zero_record_identity(const struct zero_mem *m, const struct stat *st,
			 struct zero_record *r)
	__attribute__((warn_unused_result));

/*
 * Writes the record for @m, whose pages must all be ZERO: stamps the
 * file, then writes the record in the state directory (a temporary file
 * of a random name, fsync, rename, fsync of the directory). It first
 * waits for the coarse clock to pass the stamp's ctime (at most one
 * tick), so any later change of the file's times shows, and checks after
 * the stamp with @alone (zero_mem_check_alone(); NULL: not checked) that
 * no other process holds the file. The record holds the file's absolute
 * path, which must name the file itself then. Before writing it removes
 * the records there that no launch could trust again, so the directory
 * holds at most one record per pool file that exists: those written
 * before the last boot or by another version of zvmm, those that are no
 * record, and those whose path no longer names a file of the device,
 * inode and ctime they recorded. Returns 0, -EPERM when the state
 * directory is outside the trust boundary or unusable (said once per
 * process; no record), -EBUSY when another process holds the file,
 * -EAGAIN when the file's times changed meanwhile, -ESTALE when no path
 * names the file any more (it or its directory was removed or renamed
 * during the launch), or another negative errno.
 */
typedef int zero_record_check_fn(const struct zero_mem *m, char *why,
				 size_t len);
int zero_record_write(const struct zero_mem *m, zero_record_check_fn *alone)
	__attribute__((warn_unused_result));

/*
 * Stamps the pool file: its mtime becomes strictly later than it was,
 * its atime 1 ns before that (so the next access moves it visibly).
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
 * it exists in a trusted state directory, is a regular file of the euid
 * or root that no one else may write, parses, its checksum holds and it
 * matches @st: the file's status when this launch opened it, before it
 * mapped the file (zero_mem_create() keeps it in m->st_open). @why (may
 * be NULL) says why a record was refused. Returns 0 or a negative errno
 * for I/O trouble other than a missing or untrusted record.
 */
int zero_record_take(const struct zero_mem *m, const struct stat *st,
		     bool *clean, char *why, size_t why_len)
	__attribute__((warn_unused_result));

#endif
